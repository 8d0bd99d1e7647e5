"""`scan`: invisible characters on the raw text, then every rule on the normalized views,
then the same rules on hidden text (tag characters, decoded base64/hex runs, undone HTML and
percent escapes, text written backwards)."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence

from memory.scanner._decode import decoded_payloads, reversed_text, tag_text, unescaped
from memory.scanner._normalize import TAG_RANGE, ignorable_positions, views
from memory.scanner._rules import checks_for, rules_for
from memory.scanner._types import SCAN_WINDOW, Finding, ScanScope

__all__ = [
    "ENTRY_DELIMITER",
    "JOIN_REACH",
    "blocked_placeholder",
    "describe_findings",
    "oversize_finding",
    "scan",
    "scan_joined",
]

ENTRY_DELIMITER = "\n§\n"
"""How stored entries are joined when they are read together (MEMORY.md's own delimiter)."""

_MAX_INVISIBLE_FINDINGS = 8
# Undone escapes are read for a hidden shell command only when most of the text was escaped:
# one `&amp;` in a note that names a command does not make the command hidden.
_ESCAPED_COMMAND_SHARE = 0.3
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


def _payloads(text: str) -> list[tuple[str, str, bool]]:
    """`(encoding, decoded text, read for a hidden command)` for each kind of hidden text."""
    found = [(encoding, decoded, True) for encoding, decoded in decoded_payloads(text)]
    undone = unescaped(text)
    if undone is not None:
        found.append(("escapes", undone[0], undone[1] >= _ESCAPED_COMMAND_SHARE))
    backwards = reversed_text(text)
    if backwards is not None:
        found.append(("reverse", backwards, True))
    return found


def _hidden_findings(text: str, scope: ScanScope) -> list[Finding]:
    out: list[Finding] = []
    hidden = tag_text(text)
    if hidden:
        out += [
            Finding(f"{f.id}_in_tags", f.category, f"{f.description} (in invisible tag characters)")
            for f in _rule_findings(hidden, scope)
        ]
    for encoding, decoded, commands in _payloads(text):
        inner = _rule_findings(decoded, scope)
        out += [
            Finding(f"{f.id}_in_{encoding}", f.category, f"{f.description} (inside {encoding} text)")
            for f in inner
        ]
        if commands and not inner and _SHELL_COMMAND.search(decoded):
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


JOIN_REACH = 3
"""Entries on each side of a written one that `scan_joined` reads it with."""


def scan_joined(entries: Sequence[str], index: int, scope: ScanScope) -> tuple[Finding, ...]:
    """What `entries[index]` adds when it is read together with the entries beside it.

    An attack split over two entries passes the scan of each ("... ignore all" and then
    "previous instructions and ..."), but the prompt shows them one after the other. So the
    entry is scanned joined with up to `JOIN_REACH` entries on each side, and every finding
    those neighbours did not already have joined without it is the entry's. They are
    joined twice: as the prompt shows them (`ENTRY_DELIMITER`, a line holding `§`), and on
    one line, so that the rules that stay within a line (a command and its pipe) see across
    the break too.

    Args:
        entries: the entries as they will be stored, in prompt order.
        index: the position of the entry being written.
        scope: as for `scan`.

    Returns:
        The new findings, each id suffixed `_joined`; empty when the entry completes nothing.
    """
    index %= len(entries)
    lo = max(0, index - JOIN_REACH)
    with_entry = list(entries[lo : index + JOIN_REACH + 1])
    without = with_entry[: index - lo] + with_entry[index - lo + 1 :]
    if not without:
        return ()
    found: dict[str, Finding] = {}
    for delimiter in (ENTRY_DELIMITER, " § "):
        had = {f.id for f in scan(delimiter.join(without), scope)}
        for f in scan(delimiter.join(with_entry), scope):
            if f.id not in had and f.id + "_joined" not in found:
                found[f.id + "_joined"] = Finding(
                    f"{f.id}_joined",
                    f.category,
                    f"{f.description} (completed by reading it with the entries beside it)",
                )
    return tuple(found.values())


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
