"""The skills guard: a static scan of every file of a skill, a verdict, and the trust policy.

`scan_skill(directory)` reads every file under a skill directory (symlinks are not
followed; a symlink that leaves the skill is itself a finding) and matches each line
against the rule table in `_rules.py`. The verdict is *dangerous* when any finding is
critical or high, *caution* when any is medium, else *safe*.

Whether a verdict blocks depends on who vouches for the skill (`blocks`):

    tier            safe    caution   dangerous
    builtin         allow   allow     allow      (never scanned)
    trusted         allow   allow     block
    community       allow   block     block
    agent-created   allow   allow     block      (refused back to the agent as a tool error)
"""

from __future__ import annotations

import os
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, TypeAlias

from memory.skills._format import MAX_FILE_BYTES
from memory.skills._fs import read_regular
from memory.skills._rules import RULES, GuardCategory, Severity
from memory.skills._types import TrustTier

__all__ = ["GuardFinding", "GuardReport", "Verdict", "blocks", "scan_skill", "scan_text", "verdict_of"]

Verdict: TypeAlias = Literal["safe", "caution", "dangerous"]

_MAX_FINDINGS_PER_FILE = 100
_MATCH_CHARS = 120
_BLOCKED: dict[TrustTier, frozenset[Verdict]] = {
    "builtin": frozenset(),
    "trusted": frozenset({"dangerous"}),
    "community": frozenset({"caution", "dangerous"}),
    "agent-created": frozenset({"dangerous"}),
}
_SEVERITY_RANK: dict[Severity, int] = {"critical": 0, "high": 1, "medium": 2, "low": 3}


@dataclass(frozen=True, slots=True)
class GuardFinding:
    """One rule matched on one line of one file.

    Attributes:
        id: the rule id, e.g. `supply-pipe-to-shell`.
        severity: critical, high, medium or low.
        category: exfiltration, injection, destructive, persistence, network, obfuscation,
            supply_chain, privilege_escalation or credential_exposure.
        file: the file, relative to the skill directory (POSIX).
        line: 1-based line number (0 for findings about the file itself).
        match: the matched text, at most 120 characters.
        description: what the rule looks for.
    """

    id: str
    severity: Severity
    category: GuardCategory
    file: str
    line: int
    match: str
    description: str
    kind: Literal["finding"] = field(default="finding", init=False)


@dataclass(frozen=True, slots=True)
class GuardReport:
    """The findings of one scan, most severe first, and the verdict they add up to."""

    findings: tuple[GuardFinding, ...]
    verdict: Verdict
    files_scanned: int
    kind: Literal["guard_report"] = field(default="guard_report", init=False)


def verdict_of(findings: Iterable[GuardFinding]) -> Verdict:
    """`dangerous` if any finding is critical or high, `caution` if any is medium, else `safe`."""
    severities = {f.severity for f in findings}
    if severities & {"critical", "high"}:
        return "dangerous"
    if "medium" in severities:
        return "caution"
    return "safe"


def blocks(tier: TrustTier, verdict: Verdict) -> bool:
    """Whether the trust policy refuses a skill of `tier` with this verdict."""
    return verdict in _BLOCKED[tier]


def scan_text(text: str, *, file: str) -> tuple[GuardFinding, ...]:
    """Match every rule against every line of `text` (at most one finding per rule per line)."""
    if text.startswith("\ufeff"):
        text = text[1:]  # a leading BOM is an encoding mark, not a hidden character
    found: list[GuardFinding] = []
    for number, raw in enumerate(text.splitlines(), start=1):
        normalized = unicodedata.normalize("NFKC", raw)
        for rule in RULES:
            # Invisible characters are looked for in the raw line: NFKC would remove some.
            subject = raw if rule.id == "obfusc-invisible-unicode" else normalized
            match = rule.pattern.search(subject)
            if match is None:
                continue
            found.append(
                GuardFinding(
                    id=rule.id,
                    severity=rule.severity,
                    category=rule.category,
                    file=file,
                    line=number,
                    match=_shorten(match.group(0)),
                    description=rule.description,
                )
            )
            if len(found) >= _MAX_FINDINGS_PER_FILE:
                return tuple(found)
    return tuple(found)


def scan_skill(directory: Path) -> GuardReport:
    """Scan every file under a skill directory. Blocking: call it from a worker thread.

    Files are read up to 1 MiB and decoded as UTF-8 with replacement, so binary assets are
    scanned too; FIFOs, devices and sockets are skipped without being opened for a blocking read. Symlinks are not followed; one that resolves outside the skill directory
    is reported as a high exfiltration finding (viewing it would leak the target).
    """
    findings: list[GuardFinding] = []
    files = 0
    base = directory.resolve()
    for current, dirs, names in os.walk(directory, followlinks=False):
        dirs.sort()
        here = Path(current)
        for name in [*sorted(names), *(d for d in dirs if (here / d).is_symlink())]:
            path = here / name
            rel = path.relative_to(directory).as_posix()
            if path.is_symlink():
                if not path.resolve().is_relative_to(base):
                    findings.append(_symlink_finding(rel, os.readlink(path)))
                continue
            try:
                data = read_regular(path, max_bytes=MAX_FILE_BYTES)
            except OSError:
                # Vanished, unreadable, or a FIFO/device (which would block or never end):
                # nothing to scan, and nothing will load it (views read regular files only).
                continue
            files += 1
            findings.extend(scan_text(data.decode("utf-8", errors="replace"), file=rel))
    ordered = tuple(sorted(findings, key=lambda f: (_SEVERITY_RANK[f.severity], f.file, f.line, f.id)))
    return GuardReport(findings=ordered, verdict=verdict_of(ordered), files_scanned=files)


def _symlink_finding(rel: str, target: str) -> GuardFinding:
    return GuardFinding(
        id="exfil-symlink-escape",
        severity="high",
        category="exfiltration",
        file=rel,
        line=0,
        match=_shorten(f"{rel} -> {target}"),
        description="a symlink that points outside the skill directory",
    )


def _shorten(text: str) -> str:
    text = text.strip()
    return text if len(text) <= _MATCH_CHARS else text[: _MATCH_CHARS - 3] + "..."
