# The cache lint: the habits behind a trace's misses, at the text level (no tokenizer).
# `_streams` pairs each request with the one it should extend; `_checks` compares the two and
# names each habit, quoting the changed lines with `_diff`; `_rules` lists the habits (title,
# severity, fix); `_lint` walks a trace and groups the findings into a `LintReport`.
"""`keel cache lint`: the habits that break a prompt cache (see `harness.cachemeter.lint._lint`)."""

from harness.cachemeter.lint._checks import step_habits
from harness.cachemeter.lint._lint import LintReport, lint
from harness.cachemeter.lint._rules import LintFinding
from harness.cachemeter.lint._streams import Step, walk

__all__ = [
    "LintFinding",
    "LintReport",
    "Step",
    "lint",
    "step_habits",
    "walk",
]
