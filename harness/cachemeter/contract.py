"""A cache contract for tests: every request extends the prompt before it, but at allowed events.

The property keel's own tests hold its turn loop to, offered for users' agents::

    from harness.testing import assert_cache_stable

    assert_cache_stable(trace_path)                       # a keel trace or chat JSONL
    assert_cache_stable(records, allow=("compression",))  # stricter: a flush must share the prefix

A request *breaks the prefix* when no earlier request of the trace is a prefix of it
(the meter's `ideal` view, rendered with `renderer`; default: canonical over chars/4, which
needs nothing loaded). Breaks are allowed only at these events (`AllowedEvent`):

    compression  a summary call, and the first turn request after it — one rebuild per
                 compression (new memory snapshot, summarized history), no more
    flush        a flush call (keel's default `memory_only` flush sends other tools)
    side_calls   any other side call (search)
    new_session  the first request of another conversation

Anything else fails with the request's line, the meter's attribution (`system_changed:memory`,
`tools_changed`, `messages_changed:3` ...) and, from the lint, the habit and the changed text.
`cache_breaks` returns the same findings as data, for tests that want to look at them.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, TypeAlias

from harness.cachemeter._request import MeterRequest
from harness.cachemeter.lint import Step, step_habits, walk
from harness.cachemeter.render import CanonicalRenderer, Renderer
from harness.cachemeter.run import measure
from harness.cachemeter.traces import read_requests, request_from_record
from harness.tokens import CharTokenizer
from harness.trace import TraceRecord
from harness.types import Purpose

__all__ = [
    "DEFAULT_ALLOWED",
    "AllowedEvent",
    "CacheBreak",
    "CacheContractError",
    "assert_cache_stable",
    "cache_breaks",
]

AllowedEvent: TypeAlias = Literal["compression", "flush", "side_calls", "new_session"]
DEFAULT_ALLOWED: tuple[AllowedEvent, ...] = ("compression", "flush", "side_calls", "new_session")


@dataclass(frozen=True, slots=True)
class CacheBreak:
    """One request that broke the prompt prefix outside an allowed event.

    Attributes:
        index, line: the request's position in the trace (0-based) and file line (1-based).
        purpose, session_id, turn: what the request was.
        reason: the meter's attribution label (`system_changed:memory`, `tools_changed` ...).
        lost: prompt tokens that could not be reused because of it.
        habits: what the lint saw in the same request: `rule — title (where)` then the changed
            lines, `- removed` / `+ added`.
    """

    index: int
    line: int
    purpose: Purpose
    session_id: str | None
    turn: int | None
    reason: str
    lost: int
    habits: tuple[str, ...] = ()

    def explain(self) -> str:
        """A few lines saying where, why, and what changed."""
        parts = [f"{self.purpose} request"]
        if self.turn is not None:
            parts.append(f"turn {self.turn}")
        if self.session_id:
            parts.append(f"session {self.session_id}")
        head = f"line {self.line} ({', '.join(parts)}): {self.reason}, {self.lost:,} tokens not reusable"
        return "\n".join([head, *(f"    {h}" for h in self.habits)])


class CacheContractError(AssertionError):
    """A trace broke the cache contract; the message lists every break with its attribution."""


def _requests(trace: Path | Iterable[MeterRequest | TraceRecord]) -> list[MeterRequest]:
    if isinstance(trace, Path):
        return list(read_requests(trace))
    return [
        item if isinstance(item, MeterRequest) else request_from_record(item, line=i + 1)
        for i, item in enumerate(trace)
    ]


def _allowed(step: Step, allow: Collection[AllowedEvent]) -> bool:
    purpose = step.request.purpose
    if purpose == "summary":
        return "compression" in allow
    if purpose == "flush":
        return "flush" in allow
    if purpose != "turn":
        return "side_calls" in allow
    if step.relation == "compression":
        return "compression" in allow
    if step.relation == "new_session":
        return "new_session" in allow
    return step.relation == "start"


def cache_breaks(
    trace: Path | Iterable[MeterRequest | TraceRecord],
    *,
    allow: Collection[AllowedEvent] = DEFAULT_ALLOWED,
    renderer: Renderer | None = None,
) -> list[CacheBreak]:
    """Every request that breaks the prompt prefix outside an allowed event (blocking).

    Args:
        trace: a trace file (keel JSONL or chat JSONL), or its requests in trace order.
        allow: the events at which a break is fine (see the module docstring).
        renderer: how requests become tokens (default: canonical over the chars/4 tokenizer).

    Raises:
        MeterInputError: the file is missing or a line is not a request.
        ValueError: `allow` names an unknown event.
    """
    unknown = set(allow) - set(DEFAULT_ALLOWED)
    if unknown:
        raise ValueError(
            f"unknown allowed event(s) {sorted(unknown)!r}; choose from {', '.join(DEFAULT_ALLOWED)}"
        )
    requests = _requests(trace)
    report = measure(requests, renderer or CanonicalRenderer(CharTokenizer()), simulators=("ideal",))
    breaks: list[CacheBreak] = []
    for step in walk(requests):
        row = report.requests[step.index]
        if row.content.kind in ("none", "first_request") or _allowed(step, allow):
            continue
        req = step.request
        breaks.append(
            CacheBreak(
                index=step.index,
                line=req.line,
                purpose=req.purpose,
                session_id=req.session_id,
                turn=req.turn,
                reason=row.content.label,
                lost=row.content.lost,
                habits=step_habits(step),
            )
        )
    return breaks


def assert_cache_stable(
    trace: Path | Iterable[MeterRequest | TraceRecord],
    *,
    allow: Collection[AllowedEvent] = DEFAULT_ALLOWED,
    renderer: Renderer | None = None,
) -> None:
    """Fail when a request breaks the prompt prefix outside an allowed event.

    Same arguments as `cache_breaks`. Raises `CacheContractError` (an `AssertionError`, so
    pytest reports it as a plain test failure) listing every break with its attribution and
    the changed text.
    """
    __tracebackhide__ = True  # pytest: show the caller's line, not this helper's
    found = cache_breaks(trace, allow=allow, renderer=renderer)
    if not found:
        return
    allowed = ", ".join(allow) or "none"
    lines = [
        f"cache contract broken: {len(found)} request(s) break the prompt prefix outside an "
        f"allowed event (allowed: {allowed})",
        *(b.explain() for b in found),
    ]
    raise CacheContractError("\n".join(lines))
