"""Which earlier request each request should extend, and what happened in between.

A trace interleaves conversations (keel: one `session_id` per session; a compression
continues in a child session) and side calls (flush, summary, search). The lint and the
cache contract judge each request against the previous *turn* request of its conversation:

    start        the first turn request of the trace: nothing to compare with
    continue     same conversation, no compression since: it should extend the previous one
    compression  the first turn request after a summary call: the one rebuild a compression
                 is allowed (new system prompt, summarized history)
    new_session  another conversation starts (a new session id; for chat lines without one,
                 a request of at most two messages whose first message differs); `previous`
                 is the last turn request of the trace, for checks that span sessions
    side         a flush, summary or search call; `previous` is its conversation's last turn

A new session id right after a summary call (keel's child session) continues its parent's
conversation.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Literal, TypeAlias

from harness.cachemeter._request import MeterRequest

__all__ = ["Relation", "Step", "walk"]

Relation: TypeAlias = Literal["start", "continue", "compression", "new_session", "side"]


@dataclass(frozen=True, slots=True)
class Step:
    """One request, the request it is judged against, and how they relate."""

    index: int
    request: MeterRequest
    relation: Relation
    previous: MeterRequest | None = None
    previous_index: int | None = None


@dataclass(slots=True)
class _Conversation:
    last: tuple[int, MeterRequest] | None = None
    compressed: bool = False


def _starts_over(previous: MeterRequest, request: MeterRequest) -> bool:
    """A chat line without a session id that begins another conversation."""
    if not request.messages or not previous.messages:
        return False
    return request.messages[0] != previous.messages[0] and len(request.messages) <= 2


def _step(i: int, req: MeterRequest, relation: Relation, prev: tuple[int, MeterRequest] | None) -> Step:
    if prev is None:
        return Step(i, req, relation)
    return Step(i, req, relation, previous=prev[1], previous_index=prev[0])


def walk(requests: Iterable[MeterRequest]) -> Iterator[Step]:
    """Pair each request with the one it is judged against (see the module docstring)."""
    conversations: dict[str | None, _Conversation] = {}
    last_turn: tuple[int, MeterRequest] | None = None
    before: MeterRequest | None = None  # the previous request of the trace
    for i, req in enumerate(requests):
        conv = conversations.get(req.session_id)
        if conv is None:
            parent = None
            if before is not None and before.purpose == "summary":
                parent = conversations.get(before.session_id)
            conv = parent if parent is not None else _Conversation()
            conversations[req.session_id] = conv
        before = req
        prev = conv.last
        if req.purpose != "turn":
            yield _step(i, req, "side", prev)
            conv.compressed = conv.compressed or req.purpose == "summary"
            continue
        relation: Relation
        if prev is None:
            relation = "start" if last_turn is None else "new_session"
            prev = last_turn
        elif conv.compressed:
            relation = "compression"
        elif _starts_over(prev[1], req):
            relation = "new_session"
        else:
            relation = "continue"
        yield _step(i, req, relation, prev)
        conv.last = last_turn = (i, req)
        conv.compressed = False
