"""`scan`: invisible characters on the raw text, then every rule on the normalized views,
then the same rules on hidden text (tag characters, decoded base64/hex runs)."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence

from memory.scanner._decode import decoded_payloads, tag_text
from memory.scanner._normalize import TAG_RANGE, ignorable_positions, views
from memory.scanner._rules import checks_for, rules_for
from memory.scanner._types import SCAN_WINDOW, Finding, ScanScope

__all__ = ["blocked_placeholder", "describe_findings", "oversize_finding", "scan"]

_MAX_INVISIBLE_FINDINGS = 8
_SHELL_COMMAND = re.compile(
    r"^\s{0,3}(?:sudo\s{1,3})?(?:curl|wget|nc|ncat|bash|sh|zsh|rm|echo|chmod|chown|python3?|perl|ruby|powershell"
    r"|iex|eval|crontab|ssh|scp|dd|mkfs)\b|\|\s{0,3}(?:ba|z)?sh\b|>>\s{0,3}[~/$]",
    re.IGNORECASE | re.MULTILINE,
)


def _invisible_findings(text: str) -> list[Finding]:
    positions = ignorable_positions(text)
    if not positions:
        return []
    findings: list[Finding] = []
    lo, hi = TAG_RANGE
    tags = [i for i in positions if lo <= ord(text[i]) <= hi]
    if tags:
        hidden = tag_text(text)
        shown = f": {hidden[:60]!r}" if hidden else ""
        findings.append(
            Finding("invisible_unicode_tags", "invisible_unicode", f"invisible Unicode tag characters{shown}")
        )
    for cp in dict.fromkeys(ord(text[i]) for i in positions if not lo <= ord(text[i]) <= hi):
        if len(findings) >= _MAX_INVISIBLE_FINDINGS:
            break
        name = unicodedata.name(chr(cp), "invisible character").lower()
        findings.append(Finding(f"invisible_unicode_U+{cp:04X}", "invisible_unicode", f"invisible {name}"))
    return findings


def _rule_findings(text: str, scope: ScanScope) -> list[Finding]:
    v = views(text)
    found = [Finding(r.id, r.category, r.description) for r in rules_for(scope) if r.hits(v)]
    found += [Finding(c.id, c.category, c.description) for c in checks_for(scope) if c.test(v)]
    return found


def _hidden_findings(text: str, scope: ScanScope) -> list[Finding]:
    out: list[Finding] = []
    hidden = tag_text(text)
    if hidden:
        out += [
            Finding(f"{f.id}_in_tags", f.category, f"{f.description} (in invisible tag characters)")
            for f in _rule_findings(hidden, scope)
        ]
    for encoding, decoded in decoded_payloads(text):
        inner = _rule_findings(decoded, scope)
        out += [
            Finding(f"{f.id}_in_{encoding}", f.category, f"{f.description} (inside {encoding} text)")
            for f in inner
        ]
        if not inner and _SHELL_COMMAND.search(decoded):
            out.append(Finding("encoded_command", "c2", f"a shell command hidden in {encoding}"))
    return out


def scan(text: str, scope: ScanScope) -> tuple[Finding, ...]:
    """Scan `text` for threats.

    Invisible (default-ignorable) code points are reported from the raw text; then the
    rules run on the normalized views (see `memory.scanner._normalize`), on text spelled in
    Unicode tag characters and on readable base64/hex runs. Only the first `SCAN_WINDOW`
    characters are scanned. The rule for each category is stated in `memory.scanner._rules`.

    Args:
        text: the content to scan.
        scope: `"strict"` for memory writes and the memory snapshot (every rule),
            `"context"` for context files (injection, role hijack, C2, blatant exfiltration,
            invisible characters).

    Returns:
        The findings in a stable order (invisible characters first, then rules, then what
        was found in hidden text), each id once; empty when the text is clean.
    """
    if not text:
        return ()
    window = text[:SCAN_WINDOW]
    findings = _invisible_findings(window) + _rule_findings(window, scope) + _hidden_findings(window, scope)
    unique: dict[str, Finding] = {}
    for finding in findings:
        unique.setdefault(finding.id, finding)
    # A variant (`ignore_instructions_fr`, `_glued`, `_in_base64`) adds nothing when its
    # base rule fired on the same text: one threat, one finding.
    return tuple(f for f in unique.values() if not any(f.id.startswith(base + "_") for base in unique))


def oversize_finding(length: int) -> Finding:
    """The finding for text longer than `SCAN_WINDOW`, which cannot be fully scanned."""
    return Finding(
        "too_large_to_scan",
        "oversize",
        f"{length:,} characters is more than the {SCAN_WINDOW:,} the scanner checks",
    )


def describe_findings(findings: Sequence[Finding]) -> str:
    """The error message for a refused write: what was found and what to do instead."""
    if not findings:
        return "No threat found."
    first = findings[0]
    others = [f.id for f in findings[1:]]
    also = f" (also: {', '.join(others)})" if others else ""
    if first.category == "invisible_unicode":
        code = first.id.rsplit("_", 1)[-1]
        what = "invisible Unicode tag characters" if code == "tags" else f"the invisible character {code}"
        head = f"Blocked: the content contains {what}{also}."
        fix = "Remove invisible, tag and bidirectional-control characters and retry."
    elif first.category == "oversize":
        head = f"Blocked: {first.description}."
        fix = "Write a much shorter entry."
    else:
        head = f"Blocked: the content matches threat pattern {first.id!r} ({first.description}){also}."
        fix = (
            "Memory is placed in every future system prompt, so it must not contain instructions "
            "to the model, exfiltration or persistence commands, or secrets. Save a plain "
            "declarative fact instead, or leave it out."
        )
    return f"{head} {fix}"


def blocked_placeholder(source: str, findings: Sequence[Finding], *, remedy: str) -> str:
    """The text shown in place of blocked content.

    Args:
        source: what was blocked, e.g. `"MEMORY.md entry"` or `"AGENTS.md"`.
        findings: the scanner's findings (non-empty).
        remedy: what the reader can do about it, e.g. how to delete the original.
    """
    ids = ", ".join(f.id for f in findings) or "unknown"
    return f"[BLOCKED: {source} contained threat pattern(s): {ids}. {remedy}]"
