"""A trace as the simulators are fed it: rendered, with the content view of each request.

`Stream.prepare` renders one request, asks the `ideal` simulator which earlier request shares
the longest prefix (the content view every simulator's attribution starts from), and notes
how long that prefix had been idle. The meter's run (`run.MeterRun`) prepares each request
once and feeds it to the report, the TTL sweep and the replicas, so they see the same tokens.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from harness.cachemeter._request import MeterRequest
from harness.cachemeter.attribution import Attribution, content_break
from harness.cachemeter.render import Rendered, Renderer
from harness.cachemeter.sim import IdealSimulator, PrefixMatch, SimRequest
from harness.cachemeter.traces import request_from_record
from harness.trace import TraceRecord

__all__ = ["Prepared", "Stream", "normalized", "prepared"]


@dataclass(frozen=True, slots=True)
class Prepared:
    """One request ready for the simulators.

    Attributes:
        index: its position in the trace.
        request: the request.
        rendered: its tokens and segments.
        sim: what simulators are fed (with `known_prefix` and the conversation filled in).
        match: the ideal simulator's view of it.
        content: why its content is not wholly a continuation of an earlier request.
        gap: seconds since the prefix it shares was last used (None without timestamps).
    """

    index: int
    request: MeterRequest
    rendered: Rendered
    sim: SimRequest
    match: PrefixMatch
    content: Attribution
    gap: float | None


class Stream:
    """The content view over a trace, request by request (see the module docstring)."""

    def __init__(self, renderer: Renderer) -> None:
        self.renderer = renderer
        self.ideal = IdealSimulator()
        self.generation_starts: list[int] = []
        self.notices: dict[str, None] = {}  # ordered set
        self._timed = False  # a timestamp was seen: gaps mean something

    def prepare(self, i: int, req: MeterRequest) -> Prepared:
        """Render request number `i` and place it against everything before it."""
        rendered = self.renderer.render(req)
        self.notices.update(dict.fromkeys(rendered.notices))
        sreq = SimRequest(
            tokens=rendered.tokens,
            model=req.model,
            timestamp=req.timestamp,
            breakpoints=rendered.breakpoints,
            boundaries=rendered.boundaries,
            ttl=req.cache_ttl,
            session=req.session_id,
        )
        match = self.ideal.match(sreq)
        sreq = dataclasses.replace(sreq, known_prefix=match.prefix)
        source_gen = self.generation_starts[match.source] if match.source is not None else None
        content = content_break(
            match, rendered, first=i == 0, source_generation_start=source_gen, message_base=req.message_base
        )
        self.generation_starts.append(rendered.generation_start)
        gap = match.idle if req.timestamp is not None or self._timed else None
        self._timed = self._timed or req.timestamp is not None
        return Prepared(i, req, rendered, sreq, match, content, gap)


def normalized(requests: Iterable[MeterRequest | TraceRecord]) -> Iterator[MeterRequest]:
    """Trace records or requests → requests (records numbered by position)."""
    for i, item in enumerate(requests):
        yield item if isinstance(item, MeterRequest) else request_from_record(item, line=i + 1)


def prepared(requests: Iterable[MeterRequest | TraceRecord], renderer: Renderer) -> Iterator[Prepared]:
    """Every request of a trace, prepared in order."""
    stream = Stream(renderer)
    for i, req in enumerate(normalized(requests)):
        yield stream.prepare(i, req)
