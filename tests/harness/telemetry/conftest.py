"""An export pipeline over the SDK's in-memory span exporter and metric reader."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass

import pytest
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from harness.cachemeter import CanonicalRenderer
from harness.cachemeter.sim import SimName
from harness.telemetry._cache import CacheAttribution
from harness.telemetry._export import Export
from harness.tokens import CharTokenizer


@dataclass
class Captured:
    """The export under test, and what reached the SDK's in-memory exporter and reader."""

    export: Export
    spans_out: InMemorySpanExporter
    metrics: InMemoryMetricReader

    def spans(self) -> list[ReadableSpan]:
        self.export.flush()
        return list(self.spans_out.get_finished_spans())

    def named(self, name: str) -> list[ReadableSpan]:
        return [s for s in self.spans() if s.name == name]

    def one(self, name: str) -> ReadableSpan:
        found = self.named(name)
        assert len(found) == 1, f"{len(found)} spans named {name!r}: {[s.name for s in self.spans()]}"
        return found[0]


def make_captured(
    *, capture: bool = False, alias: bool = False, simulators: Mapping[str, SimName] | None = None
) -> Captured:
    """`simulators`: attribute cache reuse, per provider (over chars/4 tokens, no file loaded)."""
    spans = InMemorySpanExporter()
    reader = InMemoryMetricReader()
    attribution = (
        None
        if simulators is None
        else CacheAttribution(renderer=lambda: CanonicalRenderer(CharTokenizer()), simulators=simulators)
    )
    export = Export(
        processor=SimpleSpanProcessor(spans),
        meters=MeterProvider(metric_readers=[reader]),
        attribution=attribution,
        capture=capture,
        alias=alias,
    )
    return Captured(export, spans, reader)


@pytest.fixture
def captured() -> Iterator[Captured]:
    c = make_captured()
    yield c
    c.export.close()
