"""The meter's kernel: one run over a trace feeds every view from one stream.

A `MeterRun` takes the inputs once — how requests become tokens (the renderer, and the
tokenizer's name for the report), the simulators' settings, the price table — and answers
over a trace with the report, the TTL sweep and the replicas table in one pass: each request
is read, rendered and placed against the earlier ones once (`stream.Stream`), then fed to
each view's pass (`report.ReportPass`, `sweep.SweepPass`, `replicas.ReplicaPass`).
`MeterRun.load` is the one assembly of tokenizer → renderer that the CLI, the experiments,
the demo and the retention eval share. `RequestMeter` is the same meter one request at a
time, as requests end: telemetry's verdict on each request (its phase, what one cache reused,
and why not more) is the report's, computed by the same code.

    run = await MeterRun.open(prices=config.prices)          # cl100k, canonical
    results = run.measure(records, sweep=SweepAsk(), replicas=ReplicasAsk(counts=(1, 2)))
    results.report.hit_ratio("ideal"); results.sweep; results.replicas

`measure`, `ttl_sweep` and `replica_sweep` are the one-view shorthands (`MeterRun.report_async`
is the report off the event loop).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol, TypedDict, Unpack

import anyio.to_thread

from harness.cachemeter._factory import MeterTokenizerName, load_meter_tokenizer, make_renderer
from harness.cachemeter._request import MeterRequest
from harness.cachemeter.attribution import attribute
from harness.cachemeter.pricing import Pricer
from harness.cachemeter.render import Renderer, RendererName
from harness.cachemeter.replicas import ROUTING_POLICIES, ReplicaPass, ReplicaReport, RoutingPolicy
from harness.cachemeter.report import MeterReport, PhaseClock, PhaseName, ReportPass
from harness.cachemeter.sim import SIM_NAMES, SimName, SimSettings, SimStep, Simulator, make_simulator
from harness.cachemeter.stream import Prepared, Stream, normalized
from harness.cachemeter.sweep import DEFAULT_TTLS, TIME_AWARE, SweepPass, TtlSweep
from harness.cachemeter.traces import request_from_record
from harness.config import PriceConfig
from harness.trace import TraceRecord

__all__ = [
    "MeterOptions",
    "MeterResults",
    "MeterRun",
    "ReplicasAsk",
    "RequestMeter",
    "RequestVerdict",
    "SweepAsk",
    "measure",
    "replica_sweep",
    "ttl_sweep",
]

Requests = Iterable[MeterRequest | TraceRecord]
Progress = Callable[[int], None]


@dataclass(frozen=True, slots=True)
class SweepAsk:
    """The TTL sweep to run: these timeouts (seconds), for these simulators (those with a clock)."""

    ttls: Sequence[float] = DEFAULT_TTLS
    simulators: Sequence[SimName] = TIME_AWARE


@dataclass(frozen=True, slots=True)
class ReplicasAsk:
    """The replicas to run: every policy at every fleet size, for these server simulators."""

    counts: Sequence[int] = (1, 2, 4, 8)
    policies: Sequence[RoutingPolicy] = ROUTING_POLICIES
    simulators: Sequence[SimName] = ("sglang",)
    threshold: float = 0.5


@dataclass(frozen=True, slots=True)
class MeterResults:
    """What one run produced; a view that was not asked for is None."""

    report: MeterReport | None
    sweep: TtlSweep | None
    replicas: ReplicaReport | None


class MeterOptions(TypedDict, total=False):
    """What `MeterRun.load` takes besides the tokenizer and the renderer's name."""

    template: Path | None
    """A chat template file for the `jinja` renderer."""
    gguf: Path | None
    """A GGUF file: its vocabulary for the `gguf` tokenizer, its template for `jinja`."""
    settings: SimSettings | None
    prices: Mapping[str, PriceConfig] | None
    price: str | None


class _Pass(Protocol):
    def feed(self, p: Prepared) -> None: ...


class MeterRun:
    """The meter's inputs, taken once; `measure` runs them over a trace (see the module docstring).

    Args:
        renderer: how requests become tokens (it carries the tokenizer).
        tokenizer: the tokenizer's name, for the report.
        settings: simulator knobs (default: the documented provider and engine defaults).
        prices: the config's price table (None: no cost estimates).
        price: a price-table name to use for every request instead of matching model names.

    Raises:
        MeterError: `price` is not in the table.
    """

    def __init__(
        self,
        renderer: Renderer,
        *,
        tokenizer: str = "",
        settings: SimSettings | None = None,
        prices: Mapping[str, PriceConfig] | None = None,
        price: str | None = None,
    ) -> None:
        self.renderer = renderer
        self.tokenizer = tokenizer
        self.settings = settings or SimSettings()
        self.pricer = Pricer(prices, price)

    @classmethod
    def load(
        cls,
        tokenizer: MeterTokenizerName | Path = "cl100k",
        renderer: RendererName = "canonical",
        **options: Unpack[MeterOptions],
    ) -> MeterRun:
        """Load the tokenizer and build the renderer (blocking; `open` from async code).

        `tokenizer` is a name (`cl100k`, `gguf`, ...) or a Hugging Face tokenizer's path;
        `options` as `MeterOptions` says.

        Raises:
            MeterError: the tokenizer or the template cannot be loaded, or `price` is unknown.
        """
        gguf = options.get("gguf")
        tok = load_meter_tokenizer(tokenizer, gguf=gguf)
        hf = tokenizer if isinstance(tokenizer, Path) else None
        rendering = make_renderer(renderer, tok, template=options.get("template"), gguf=gguf, hf=hf)
        return cls(
            rendering,
            tokenizer=tok.name,
            settings=options.get("settings"),
            prices=options.get("prices"),
            price=options.get("price"),
        )

    @classmethod
    async def open(
        cls,
        tokenizer: MeterTokenizerName | Path = "cl100k",
        renderer: RendererName = "canonical",
        **options: Unpack[MeterOptions],
    ) -> MeterRun:
        """`load` in a worker thread."""
        return await anyio.to_thread.run_sync(functools.partial(cls.load, tokenizer, renderer, **options))

    def measure(
        self,
        requests: Requests,
        *,
        report: Sequence[SimName] | None = SIM_NAMES,
        sweep: SweepAsk | None = None,
        replicas: ReplicasAsk | None = None,
        notices: Sequence[str] = (),
        progress: Progress | None = None,
    ) -> MeterResults:
        """One pass over `requests` (trace records or requests, in trace order) for every view asked.

        Args:
            report: the report's simulators, in report order (None: no report).
            sweep: the TTL sweep to run beside it.
            replicas: the replicas to run beside it.
            notices: what reading the trace found, shown first among the report's notices.
            progress: called with the count of requests done after each one.

        Raises:
            MeterError: the renderer refused a request, or a sweep or replicas ask is invalid.
        """
        settings, pricer = self.settings, self.pricer
        reporting = ReportPass(report, settings, pricer) if report is not None else None
        sweeping = SweepPass(sweep.ttls, sweep.simulators, settings, pricer) if sweep is not None else None
        routing = (
            ReplicaPass(
                counts=replicas.counts,
                policies=replicas.policies,
                simulators=replicas.simulators,
                settings=settings,
                pricer=pricer,
                threshold=replicas.threshold,
            )
            if replicas is not None
            else None
        )
        passes: list[_Pass] = [p for p in (reporting, sweeping, routing) if p is not None]
        stream = Stream(self.renderer)
        for i, req in enumerate(normalized(requests)):
            prepared = stream.prepare(i, req)
            for view in passes:
                view.feed(prepared)
            if progress is not None:
                progress(i + 1)
        return MeterResults(
            report=(
                reporting.finish(
                    renderer=self.renderer.name, tokenizer=self.tokenizer, notices=(*notices, *stream.notices)
                )
                if reporting is not None
                else None
            ),
            sweep=sweeping.finish() if sweeping is not None else None,
            replicas=routing.finish() if routing is not None else None,
        )

    def report(
        self,
        requests: Requests,
        *,
        simulators: Sequence[SimName] = SIM_NAMES,
        notices: Sequence[str] = (),
        progress: Progress | None = None,
    ) -> MeterReport:
        """The report alone (`measure` with no sweep and no replicas)."""
        report = self.measure(requests, report=simulators, notices=notices, progress=progress).report
        assert report is not None
        return report

    async def report_async(
        self, requests: Requests, *, simulators: Sequence[SimName] = SIM_NAMES
    ) -> MeterReport:
        """`report` in a worker thread, for callers on the event loop (experiment runners)."""
        work = functools.partial(self.report, list(requests), simulators=simulators)
        return await anyio.to_thread.run_sync(work)

    def online(self, sim: SimName) -> RequestMeter:
        """This run's meter fed one request at a time, for one simulator."""
        return RequestMeter(self.renderer, sim, settings=self.settings)


@dataclass(frozen=True, slots=True)
class RequestVerdict:
    """What the report says of one request: its phase, what one cache reused, and why not more."""

    phase: PhaseName
    reusable: int
    cause: str
    """The attribution's label: `none`, `first_request`, `system_changed:memory`, ..."""


class RequestMeter:
    """One trace's meter fed request by request, in order, for one simulator: the report's
    stream, simulator, attribution and phase rule, one request at a time."""

    def __init__(self, renderer: Renderer, sim: SimName, *, settings: SimSettings | None = None) -> None:
        self._stream = Stream(renderer)
        self._sim: Simulator | None = None if sim == "ideal" else make_simulator(sim, settings=settings)
        self._phases = PhaseClock()
        self._count = 0

    def feed(self, record: TraceRecord) -> RequestVerdict:
        """The verdict on the next request of the trace."""
        return self.feed_request(request_from_record(record, line=self._count + 1))

    def feed_request(self, request: MeterRequest) -> RequestVerdict:
        """`feed` for a request already read (`traces.request_from_model` for a live one)."""
        i = self._count
        self._count += 1
        p = self._stream.prepare(i, request)
        m = p.match
        step = (
            SimStep(reusable=m.prefix, prefix=m.prefix, source=m.source, potential=m.prefix)
            if self._sim is None
            else self._sim.feed(p.sim)
        )
        reason = attribute(p.content, step, n=p.rendered.n_tokens, shared=m.prefix)
        return RequestVerdict(
            self._phases.phase(request.purpose, p.content.kind), step.reusable, reason.label
        )


def measure(
    requests: Requests,
    renderer: Renderer,
    *,
    tokenizer: str = "",
    simulators: Sequence[SimName] = SIM_NAMES,
    settings: SimSettings | None = None,
    prices: Mapping[str, PriceConfig] | None = None,
    price: str | None = None,
    progress: Progress | None = None,
    notices: Sequence[str] = (),
) -> MeterReport:
    """The report of one trace: render every request, simulate, attribute each miss, total.

    Raises:
        MeterError: a price name is unknown, or the renderer refused a request.
    """
    run = MeterRun(renderer, tokenizer=tokenizer, settings=settings, prices=prices, price=price)
    return run.report(requests, simulators=simulators, notices=notices, progress=progress)


def ttl_sweep(
    requests: Requests,
    renderer: Renderer,
    *,
    ttls: Sequence[float] = DEFAULT_TTLS,
    simulators: Sequence[SimName] = TIME_AWARE,
    settings: SimSettings | None = None,
    prices: Mapping[str, PriceConfig] | None = None,
    price: str | None = None,
    progress: Progress | None = None,
) -> TtlSweep:
    """The TTL sweep of one trace alone (`harness.cachemeter.sweep`).

    Raises:
        MeterError: no simulator with a clock, a timeout that is not positive, an unknown price.
    """
    run = MeterRun(renderer, settings=settings, prices=prices, price=price)
    sweep = run.measure(requests, report=None, sweep=SweepAsk(ttls, simulators), progress=progress).sweep
    assert sweep is not None
    return sweep


def replica_sweep(
    requests: Requests,
    renderer: Renderer,
    *,
    counts: Sequence[int] = (1, 2, 4, 8),
    policies: Sequence[RoutingPolicy] = ROUTING_POLICIES,
    simulators: Sequence[SimName] = ("sglang",),
    settings: SimSettings | None = None,
    prices: Mapping[str, PriceConfig] | None = None,
    price: str | None = None,
    threshold: float = 0.5,
    progress: Progress | None = None,
) -> ReplicaReport:
    """The replicas table of one trace alone (`harness.cachemeter.replicas`).

    Raises:
        MeterError: a count below 1, a simulator that does not run on servers, an unknown price.
    """
    run = MeterRun(renderer, settings=settings, prices=prices, price=price)
    ask = ReplicasAsk(counts, policies, simulators, threshold)
    replicas = run.measure(requests, report=None, replicas=ask, progress=progress).replicas
    assert replicas is not None
    return replicas
