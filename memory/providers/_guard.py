"""The write scanner as every external provider applies it.

Whatever a provider stores is recalled into later turns (fenced onto the user message), so
a poisoned fact would be replayed into every conversation it matches — the same risk as a
poisoned MEMORY.md line. Providers run every write through `write_findings` (strict scope,
like the curated store) and refuse on a hit; on the way out, `recall_safe` re-checks what
they recall, so rows written before the check existed (or by another program) never reach
the prompt as they are.
"""

from __future__ import annotations

from collections.abc import Sequence

from memory.scanner import (
    SCAN_WINDOW,
    Finding,
    blocked_placeholder,
    describe_findings,
    oversize_finding,
    scan,
    scan_joined,
)

__all__ = ["blocked_write_message", "joined_findings", "one_user", "recall_safe", "write_findings"]


def write_findings(text: str) -> tuple[Finding, ...]:
    """What the strict scan finds in `text`; text too long to scan whole is a finding itself."""
    if len(text) > SCAN_WINDOW:
        return (oversize_finding(len(text)),)
    return scan(text, "strict")


def joined_findings(text: str, neighbours: Sequence[str]) -> tuple[Finding, ...]:
    """What `text` completes when it is recalled beside `neighbours` (either before or after
    them): the second half of an attack split over two facts. See `memory.scanner.scan_joined`."""
    if not neighbours:
        return ()
    return scan_joined([*neighbours, text], -1, "strict") or scan_joined([text, *neighbours], 0, "strict")


def blocked_write_message(what: str, findings: tuple[Finding, ...]) -> str:
    """The refusal for a blocked write, e.g. `"fact not stored: Blocked: ... Save a plain ..."`."""
    return f"{what} not stored: {describe_findings(findings)}"


def recall_safe(text: str, *, source: str, remedy: str) -> str:
    """`text` itself, or a `[BLOCKED: ...]` placeholder when the strict scan objects to it."""
    findings = write_findings(text)
    if not findings:
        return text
    return blocked_placeholder(source, findings, remedy=remedy)


def one_user(provider: str, held: str | None, asked: str | None) -> None:
    """Refuse to reuse a provider instance open for user `held` for user `asked`: one
    instance holds one user's data, and serving another from it would leak it.

    Raises:
        ValueError: the users differ.
    """
    if asked != held:
        raise ValueError(
            f"this {provider} provider is open for user {held!r}, not {asked!r}; "
            "give each user's session its own provider"
        )
