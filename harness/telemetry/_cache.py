"""`keel.cache.*` and `keel.phase` for each request: the cache meter, run online in the worker.

Each request record becomes the meter's request — what `keel cache report` reads off its JSONL
trace line (`request_from_model`, held equal to reading `record_for_request`'s line; each
message is converted and rendered once, so a request's cost does not grow with its history)
— and is fed, in the order requests ended, to the meter of its stream (one per session
object, as one trace file is one `keel cache report` input). The meter renders it
(canonical, over cl100k: `keel cache report`'s defaults), places it against every earlier
request of the stream, runs the simulator of the request's provider (`anthropic`, `openai`,
`keel` for the embedded llama.cpp server; the content view, `ideal`, for any other) and
attributes what it could not reuse to one cause — the report's attribution and phase rule, by
its own code: each stream's meter is the kernel's `RequestMeter` (`harness.cachemeter.run`).

    keel.cache.reusable_tokens   prompt tokens that provider's cache could reuse
    keel.cache.miss_cause        why not the whole prompt, when not: `cold` (the stream's
                                 first request) or the report's label (`system_changed:memory`,
                                 `tools_changed`, `messages_changed:12`, `model_changed`,
                                 `below_minimum`, `ttl_expired`, `evicted`, ...)
    keel.phase                   cold, steady, flush, summary, rewarm, other

Runs on the worker thread only (blocking: rendering, the tokenizer's first load).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from harness.cachemeter import MeterRun, Renderer, RequestMeter, SimName
from harness.cachemeter.traces import MessageMemo, request_from_model
from harness.telemetry import names as n
from harness.telemetry._attrs import Attributes
from harness.telemetry._record import RequestRecord
from harness.trace import TraceBreakpoint

__all__ = ["SIMULATOR_OF_PROVIDER", "CacheAttribution"]

SIMULATOR_OF_PROVIDER: Mapping[str, SimName] = {
    "anthropic": "anthropic",
    "openai": "openai",
    "llama.cpp": "keel",
}
"""The simulator standing for each provider's cache; any other provider gets `ideal`."""


def _canonical() -> Renderer:
    return MeterRun.load("cl100k", "canonical").renderer


class CacheAttribution:
    """The `Attribution` the worker calls for each request (see the module docstring).

    Args:
        renderer: builds the renderer on first use (default: canonical over cl100k).
        simulators: provider name → simulator (default: `SIMULATOR_OF_PROVIDER`).
    """

    def __init__(
        self,
        *,
        renderer: Callable[[], Renderer] = _canonical,
        simulators: Mapping[str, SimName] = SIMULATOR_OF_PROVIDER,
    ) -> None:
        self._make_renderer = renderer
        self._renderer: Renderer | None = None
        self._simulators = simulators
        self._meters: dict[tuple[str, SimName], RequestMeter] = {}
        self._messages = MessageMemo()

    def __call__(self, r: RequestRecord) -> Attributes:
        reply, usage = r.reply, r.usage
        if reply is None or usage is None:
            return {}
        if self._renderer is None:
            self._renderer = self._make_renderer()
        sim = self._simulators.get(r.info.provider, "ideal")
        meter = self._meters.get((r.info.stream, sim))
        if meter is None:
            meter = self._meters[(r.info.stream, sim)] = RequestMeter(self._renderer, sim)
        request = request_from_model(
            r.request,
            memo=self._messages,
            session_id=r.info.session_id,
            model=r.info.model,
            slots=r.slots,
            usage=usage,
            breakpoints=[
                TraceBreakpoint(at=b.at, index=b.index, system_chars=b.system_chars)
                for b in reply.breakpoints
            ],
            cache_ttl=reply.cache_ttl,
            timestamp=r.start_ns / 1e9,
        )
        verdict = meter.feed_request(request)
        out: Attributes = {n.KEEL_PHASE: verdict.phase, n.KEEL_CACHE_REUSABLE: verdict.reusable}
        if verdict.cause != "none":
            out[n.KEEL_CACHE_MISS_CAUSE] = "cold" if verdict.cause == "first_request" else verdict.cause
        return out

    def forget(self, stream: str) -> None:
        """Drop what the meters of `stream` hold (its session closed)."""
        for key in [k for k in self._meters if k[0] == stream]:
            del self._meters[key]
