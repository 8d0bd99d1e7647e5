"""Harness-only time per turn: prompt assembly, token counting, dispatch, events.

A scripted model answers instantly (and reports usage, so the model costs nothing), the
recorder keeps nothing and no trace is written: what is left is the turn loop itself. The
history is pre-filled with 10, 100 and 1,000 messages; each size runs the same number of
turns side by side in one process, and the medians and their ratios are printed.

    python benchmarks/turn_overhead.py [--turns 200]

The last line printed is `median_ms_at_1000 <value>`.

`--single-session` measures instead what one real session costs: `open_session` with the
default config (SQLite session store, traces on, a fresh home), a Python function tool, and a
scripted model that calls the tool once and then answers, every turn (reporting usage). Printed: the median CPU
(`time.process_time`, every thread) and wall time per turn; the last line is
`single_session_cpu_ms_per_turn <value>`.
"""

from __future__ import annotations

import sys
import time
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from pathlib import Path

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._util import median, script_parser
from harness.config import load_config
from harness.loop.parts import SessionParts, call_path
from harness.loop.ports import NoProviders, NullRecorder
from harness.loop.session import Session
from harness.loop.settings import SessionSettings
from harness.loop.system_prompt import PromptAssembler
from harness.telemetry import NO_TELEMETRY, Telemetry
from harness.testing import ScriptedModel, say
from harness.tokens import TokenCounter, load_tiktoken
from harness.tools import ToolRegistry
from harness.types import Message, ToolCall, Usage
from prompts import SlotId

SIZES = (10, 100, 1000)


def history(n: int) -> list[Message]:
    out: list[Message] = []
    i = 0
    while len(out) < n:
        out.append(
            Message("user", f"Question {i}: how should the ingest job handle a malformed row in batch {i}?")
        )
        if i % 4 == 3:
            call = ToolCall(f"c{i}", "session_search", '{"query": "malformed rows"}')
            out.append(Message("assistant", "", tool_calls=(call,)))
            out.append(
                Message(
                    "tool", '{"success": true, "results": []}', tool_call_id=call.id, name="session_search"
                )
            )
        out.append(
            Message("assistant", f"Answer {i}: quarantine the row, count it, and keep the batch going. " * 3)
        )
        i += 1
    return out[:n]


@asynccontextmanager
async def bench_session(n: int, turns: int, *, telemetry: Telemetry = NO_TELEMETRY) -> AsyncIterator[Session]:
    """A started session over `n` history messages whose scripted model answers `turns` turns."""
    # a window so large that no history size here triggers a compression
    cfg = load_config(None, environ={"KEEL_MODEL__CONTEXT_WINDOW": "10000000"})
    tokenizer = await load_tiktoken()
    model = ScriptedModel([say("ok", usage=Usage(input=1, output=1))] * (turns + 1), record=False)

    async def static() -> Mapping[SlotId, str]:
        return {"identity": "You are a benchmark.", "session": "Conversation started: today"}

    async with anyio.create_task_group() as tg:
        path = call_path(
            model=model,
            recorder=NullRecorder(),
            counter=TokenCounter(tokenizer),
            assembler=PromptAssembler(order=cfg.prompt.slot_order, static=static, tokenizer=tokenizer),
            memory=None,
            telemetry=telemetry,
        )
        session = Session(
            SessionParts(
                settings=SessionSettings.from_config(cfg),
                path=path,
                tools=ToolRegistry(),
                providers=NoProviders(),
                background=tg,
            )
        )
        await session.start()
        session.replace_transcript(history(n))
        yield session


async def timed_turn(session: Session, text: str) -> float:
    """One turn's wall time in seconds, its events consumed."""
    started = time.perf_counter()
    async with session.run_turn(text) as events:
        async for _ in events:
            pass
    return time.perf_counter() - started


async def measure(n: int, turns: int) -> list[float]:
    samples: list[float] = []
    async with bench_session(n, turns) as session:
        for turn in range(turns + 1):
            took = await timed_turn(session, f"next question {turn}")
            if turn:  # the first turn counts every history message once (cold cache)
                samples.append(took)
    return samples


def lookup(query: str) -> str:
    """Look a word up (the benchmark's one tool call per turn)."""
    return f"found: {query}"


async def single_session(turns: int) -> float:
    """The median CPU ms per turn of one `open_session` session, one tool call per turn."""
    import tempfile

    from harness.testing import call_tool
    from harness.wiring import SessionOptions, open_session

    used = Usage(input=1, output=1)  # reported, as a real endpoint does: nothing is estimated
    steps = []
    for t in range(turns + 1):
        steps += [
            call_tool("lookup", {"query": f"row {t}"}, usage=used),
            say(f"Answer {t}: quarantine it.", usage=used),
        ]
    model = ScriptedModel(steps, record=False)
    cfg = load_config(None, environ={"KEEL_MODEL__CONTEXT_WINDOW": "10000000"})
    cpu: list[float] = []
    wall: list[float] = []
    with tempfile.TemporaryDirectory(prefix="keel-turn-") as tmp:
        options = SessionOptions(model=model, home=Path(tmp), tools=(lookup,), source="bench")
        async with open_session(cfg, options) as session:
            for turn in range(turns + 1):
                started = time.process_time()
                took = await timed_turn(session, f"Question {turn}: batch {turn} has a bad row.")
                if turn:  # the first turn warms every cache
                    cpu.append(time.process_time() - started)
                    wall.append(took)
    cpu_ms, wall_ms = median(cpu) * 1000, median(wall) * 1000
    print(
        f"one session, {turns} turns of one tool call each: median {cpu_ms:.3f} CPU ms, {wall_ms:.3f} wall ms per turn"
    )
    return cpu_ms


async def main(turns: int) -> float:
    medians: dict[int, float] = {}
    for n in SIZES:
        medians[n] = median(await measure(n, turns)) * 1000
        print(f"history {n:>5} messages: median {medians[n]:.3f} ms per turn ({turns} turns)")
    print(f"ratio 100/10:   {medians[100] / medians[10]:.2f}×  (history ×10)")
    print(f"ratio 1000/100: {medians[1000] / medians[100]:.2f}×  (history ×10)")
    print(f"ratio 1000/10:  {medians[1000] / medians[10]:.2f}×  (history ×100)")
    return medians[1000]


if __name__ == "__main__":
    parser = script_parser(__doc__)
    parser.add_argument("--turns", type=int, default=200)
    parser.add_argument("--single-session", action="store_true", help="one real session's CPU per turn")
    args = parser.parse_args()
    if args.single_session:
        cpu_ms = anyio.run(single_session, args.turns)
        print(f"single_session_cpu_ms_per_turn {cpu_ms:.3f}")
        sys.exit(0)
    result = anyio.run(main, args.turns)
    print(f"median_ms_at_1000 {result:.3f}")
