"""What pruning old tool results saves in the summary prompt of the `tool-session` scenario.

Plays the built-in `tool-session` scenario with its scripted replies (no model) against the
deterministic MCP project server, takes the transcript the forced compression sees (the
flush request in the trace holds it), cuts it as compression does, and builds the summary
prompt twice: from the middle as it is, and after the pre-pass that turns each bulky tool
result into a one-line stub. Prints both sizes in cl100k tokens and the ratio, and the size
of the summary prompt the compression really sent (the trace's summary request: its stubs
carry the message ids of the outputs in the session store, which the rebuilt one cannot).

    python benchmarks/tool_pruning.py [--turns 40]
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

import anyio

from harness.compress.plan import effective_threshold, plan_cut, stub_bulky_tool_outputs
from harness.compress.summary import serialize_turns, summary_prompt
from harness.config import load_config
from harness.experiments.runner import run_scenario
from harness.experiments.scenarios.tool_session import tool_session
from harness.tokens import TokenCounter, load_tiktoken
from harness.trace import read_trace
from harness.types import Message, ToolCall


async def main(turns: int) -> None:
    scenario = tool_session(turns)
    with tempfile.TemporaryDirectory(prefix="keel-pruning-") as tmp:
        home = Path(tmp)
        cfg = load_config(None, environ={"KEEL_HOME": str(home)})
        result = await run_scenario(scenario, cfg, home=home, label="pruning", scripted=True)
        records = list(read_trace(result.trace_path))
    flush = next(r for r in records if r.purpose == "flush")
    sent = next(r for r in records if r.purpose == "summary").messages[0].content
    messages = [
        Message(
            m.role,
            m.content,
            tool_calls=tuple(ToolCall(c.id, c.name, c.arguments) for c in m.tool_calls),
            tool_call_id=m.tool_call_id,
            name=m.name,
        )
        for m in flush.messages
    ]
    messages = messages[:-1]  # the flush instruction itself
    counter = TokenCounter(await load_tiktoken())
    c = cfg.compression
    plan = plan_cut(
        messages,
        count=counter.count_message,
        tail_budget=int(effective_threshold(c.threshold, 200_000) * c.tail_ratio),
        protect_first_n=c.protect_first_n,
        protect_last_n=c.protect_last_n,
    )
    middle = messages[plan.head_end : plan.tail_start]

    def prompt(ms: list[Message]) -> str:
        return summary_prompt(
            serialize_turns(ms), date="2026-11-25", target_tokens=2000, previous_summary=None
        )

    before = counter.count_text(prompt(middle))
    after = counter.count_text(prompt(stub_bulky_tool_outputs(middle)))
    tool_results = sum(1 for m in middle if m.role == "tool")
    print(
        f"scenario {scenario.name}: {len(messages)} messages before compression, middle {len(middle)} ({tool_results} tool results)"
    )
    print(f"summary prompt without pruning: {before:,} tokens")
    print(f"summary prompt with pruning:    {after:,} tokens")
    print(f"pruned / unpruned: {after / before:.3f}")
    print(
        f"summary prompt as the compression sent it (stubs with message ids): {counter.count_text(sent):,} tokens"
    )
    stubs = sent.count("chars of output, omitted")
    print(
        f"stubs in it: {stubs} (tool results over 200 chars), {sent.count('stored as message ')} with a message id"
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=40)
    anyio.run(main, parser.parse_args().turns)
