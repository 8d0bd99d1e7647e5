"""Print the spans of one keel turn as a tree, with the attributes that matter most.

    python scripts/span_tree.py

A scripted session (no model, no network) with a Python tool and the memory tool runs two
turns; its export goes to the OpenTelemetry SDK's in-memory exporter, and the second turn's
spans are printed: what a collector would receive. Needs the `otel` extra.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import anyio
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from harness.telemetry._cache import CacheAttribution
from harness.telemetry._export import Export
from harness.testing import FakeTokenizer, ScriptedModel, call_tool, config, run_turn, say
from harness.wiring import SessionOptions, open_session

SHOWN = (
    "gen_ai.operation.name",
    "gen_ai.conversation.id",
    "gen_ai.conversation.compacted",
    "gen_ai.tool.name",
    "gen_ai.memory.store.id",
    "keel.memory.outcome",
    "gen_ai.usage.input_tokens",
    "gen_ai.usage.cache_read.input_tokens",
    "gen_ai.usage.output_tokens",
    "gen_ai.response.finish_reasons",
    "keel.phase",
    "keel.cache.reusable_tokens",
    "keel.cache.miss_cause",
)


def warehouse_stock(item: str) -> str:
    """How many of `item` the warehouse holds."""
    return f'{{"item": "{item}", "count": 42}}'


def _tree(spans: list[ReadableSpan]) -> list[str]:
    children: dict[int | None, list[ReadableSpan]] = {}
    for s in spans:
        children.setdefault(None if s.parent is None else s.parent.span_id, []).append(s)
    lines: list[str] = []

    def show(span: ReadableSpan, depth: int) -> None:
        attrs = span.attributes or {}
        ms = ((span.end_time or 0) - (span.start_time or 0)) / 1e6
        lines.append(f"{'  ' * depth}{span.name}  ({ms:.2f} ms)")
        for key in SHOWN:
            if key in attrs:
                value = attrs[key]
                text = list(value) if isinstance(value, tuple) else value
                lines.append(f"{'  ' * depth}    {key} = {text}")
        for child in sorted(children.get(span.context.span_id, []), key=lambda c: c.start_time or 0):
            show(child, depth + 1)

    for root in sorted(children.get(None, []), key=lambda c: c.start_time or 0):
        show(root, 0)
    return lines


async def main() -> None:
    out = InMemorySpanExporter()
    export = Export(processor=SimpleSpanProcessor(out), attribution=CacheAttribution())
    # the scripted model reports usage estimated at chars/4 and no cache reads (it has no cache);
    # keel.cache.* is what the meter says a cache could have reused
    model = ScriptedModel(
        [
            say("Hello! Ask me about stock."),
            call_tool("warehouse_stock", {"item": "oolong"}),
            call_tool(
                "memory", {"action": "add", "target": "user", "content": "User buys oolong for the shop"}
            ),
            say("42 tins of oolong are in stock; I noted that you buy it."),
        ]
    )
    with tempfile.TemporaryDirectory() as home:
        options = SessionOptions(
            model=model, home=Path(home), tokenizer=FakeTokenizer(), telemetry=export.telemetry
        )
        async with open_session(config(), options, tools=[warehouse_stock]) as session:
            await run_turn(session, "Hi!")
            export.flush()
            out.clear()
            await run_turn(session, "How much oolong is in stock? I buy it for my shop.")
            export.flush()
    print("\n".join(_tree(list(out.get_finished_spans()))))
    export.close()


if __name__ == "__main__":
    anyio.run(main)
