# The write scanner: finds prompt-injection, exfiltration and persistence payloads in text
# bound for a prompt (memory entries, context files). `_types.py` (Finding, scopes,
# categories), `_normalize.py` (invisible characters, NFKC, confusable skeleton, joined and
# compact views), `_decode.py` (base64/hex runs, tag characters), `_rule.py` (the Rule type
# and the imperative detector), `_rules/` (the rule for each category, stated in one
# place, in `__init__`; the patterns in `_en.py`, `_i18n.py`, `_i18n_more.py`),
# `_commands.py` (secrets in network commands), `_engine.py` (scan, the joined scan of a
# write with the entries beside it, messages, placeholders). `_meaning.py` is the second
# layer: a linear probe on the local embedder's sentence vectors (`meaning_probe.json`).
"""The write scanner.

Memory entries and context files end up in the system prompt of every later session, so a
single poisoned line would be replayed forever. `scan(text, scope)` returns the findings;
callers decide what a hit means (a refused write, a `[BLOCKED: ...]` placeholder). The rule
for each category is in `memory.scanner._rules`.
"""

from memory.scanner._engine import (
    ENTRY_DELIMITER,
    JOIN_REACH,
    blocked_placeholder,
    describe_findings,
    oversize_finding,
    scan,
    scan_joined,
)
from memory.scanner._meaning import (
    DEFAULT_MEANING_THRESHOLD,
    MeaningCheck,
    MeaningProbe,
    SentenceEmbedder,
    load_probe,
)
from memory.scanner._types import SCAN_WINDOW, Finding, FindingCategory, ScanScope

__all__ = [
    "DEFAULT_MEANING_THRESHOLD",
    "ENTRY_DELIMITER",
    "INVISIBLE_CODE_POINTS",
    "JOIN_REACH",
    "SCAN_WINDOW",
    "Finding",
    "FindingCategory",
    "MeaningCheck",
    "MeaningProbe",
    "ScanScope",
    "SentenceEmbedder",
    "blocked_placeholder",
    "describe_findings",
    "load_probe",
    "oversize_finding",
    "scan",
    "scan_joined",
]

INVISIBLE_CODE_POINTS: tuple[int, ...] = (
    0x200B, 0x200C, 0x200D, 0x2060, 0x2062, 0x2063, 0x2064, 0xFEFF, 0x202A,
    0x202B, 0x202C, 0x202D, 0x202E, 0x2066, 0x2067, 0x2068, 0x2069,
)  # fmt: skip
"""The 17 invisible code points of the reference design; all are default-ignorable, and the
scanner now reports every default-ignorable code point (see `memory.scanner._normalize`)."""
