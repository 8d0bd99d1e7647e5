"""The export worker: it backs off while it finds nothing to do, and still drains once the
loop goes idle."""

from __future__ import annotations

import threading
from collections import deque

from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from harness.telemetry._record import Recording, SpanRecord
from harness.telemetry._worker import Exporter, Worker


def _worker(queue: deque[SpanRecord], spans: InMemorySpanExporter) -> Worker:
    exporter = Exporter(queue, processor=SimpleSpanProcessor(spans), resource=Resource.create({}))
    return Worker(exporter, queue, idle_s=0.002, max_wait_s=2.0, max_poll_s=0.05)


def test_a_wake_with_nothing_to_do_doubles_the_wait_up_to_the_cap_and_a_drain_resets_it() -> None:
    worker = _worker(deque(), InMemorySpanExporter())
    waits = [0.002]
    for _ in range(8):
        waits.append(worker.next_poll(waits[-1], drained=False))
    assert waits == [0.002, 0.004, 0.008, 0.016, 0.032, 0.05, 0.05, 0.05, 0.05]
    assert worker.next_poll(0.05, drained=True) == 0.002  # more records may follow a drain at once


def test_the_worker_drains_records_once_the_loop_is_idle() -> None:
    queue: deque[SpanRecord] = deque()
    spans = InMemorySpanExporter()
    worker = _worker(queue, spans)
    worker.start()
    try:
        telemetry = Recording(queue, lambda: None)
        with telemetry.turn(conversation_id="c", session_id="s", turn=1):
            pass
        done = threading.Event()
        for _ in range(200):  # the worker, not a flush, exports it (within its capped poll)
            if spans.get_finished_spans():
                done.set()
                break
            threading.Event().wait(0.01)
        assert done.is_set()
        assert not queue
    finally:
        worker.stop()
