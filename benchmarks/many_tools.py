"""Hundreds of MCP tools, with and without deferral: prompt tokens, prefix reuse, tool found.

    python benchmarks/many_tools.py [--tasks 12]

Three real catalog servers (`harness.testing.catalog_server`: billing, issues, files — 300
tools over stdio) behind one keel session each way, on a scripted agent:

- **sent**: every schema in the request's tool list (`mcp.defer_share` at 0.25 of a
  1,000,000-token window, so nothing is deferred); the agent calls the task's tool directly.
- **deferred**: the default share of an 8,192-token window, so the 300 tools are deferred
  behind `tool_search`; the agent searches with the task's words and calls the top hit.

Each task is one user turn: (search,) call, answer. The keel trace of each session goes
through the cache meter (cl100k, the `ideal` simulator: what a prefix cache could reuse) and
the script prints, per way: median prompt tokens per request, the first request's prompt
tokens, the share of all prompt tokens a prefix cache reuses, whether the tool list and the
system text stayed byte-identical, and how many tasks ran the right tool. The tasks are
phrased by what to do, not by tool name. `--profile compact` shows the tools as keel shows them
to the embedded model (`prompt.tool_profile`).

On the embedded model (`--local`; under the machine's model lock):

    flock /work/model.lock python benchmarks/many_tools.py --local [--tasks 3] [--budget-s 1200] \
        [--set KEEL_PROMPT__TOOL_PROFILE=full]

runs the deferred way on the default local model with its default config (compact profile) and
prints, per task, whether the agent searched and whether it called the task's tool, and per
request the prompt tokens the model server counted and how many of them it reused from its
prefix cache; then whether the tool list and system text stayed byte-identical (from the trace).

Measured 2026-11-29 (load average ~12 on 2 shared cores). Scripted, 12 tasks: median prompt
25,830 sent → 5,657 deferred (0.219), the first request 25,297 → 2,504, reuse 95.7% both ways,
stable, right tool 12/12 both ways; `--profile compact`: 21,264 → 3,935 median (0.185), first request
20,731 → 782, reuse 95.7% / 95.1%, stable, 12/12 — without deferral the tools do not fit the
embedded model's 8,192-token window. `--local` (Qwen2.5-Coder-1.5B, compact profile, 3 tasks):
prompts 1,059 / 1,429 / 1,745 tokens, reused from the prefix cache 0 / 1,414 / 1,730 (74.3%),
tool list and system stable; no tool called (0/3 searched, 0/3 right): the compact profile
shows `tool_search` as its first sentence only, and the model answered instead of searching.
First task 438 s, then 131 s and 63 s. With `--set KEEL_PROMPT__TOOL_PROFILE=full` (the whole
catalog shown; `--budget-s 600`, 2 tasks finished): prompts 2,784 / 3,076, reused 0 / 3,061,
stable, still no search (0/2): this model answers instead of calling `tool_search`.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path
from statistics import median

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._util import add_set_option, bounded_turn, overrides
from harness import ModelRequest
from harness.cachemeter import CanonicalRenderer, load_meter_tokenizer, measure
from harness.config import KeelConfig, McpServerConfig, load_config
from harness.events import ToolCallStarted, ToolResultReady, UsageReported
from harness.testing import ReplyLike, ScriptedModel, call_tool, config, respond, run_turn, say
from harness.trace import read_trace
from harness.wiring import SessionOptions, open_session

TASKS: tuple[tuple[str, str], ...] = (
    ("create a refund of pay-17", "billing__create_refund"),
    ("archive the wontfix label", "issues__archive_label"),
    ("delete the file report.pdf", "files__delete_file"),
    ("count every invoice", "billing__count_invoice"),
    ("restore the sprint from the archive", "issues__restore_sprint"),
    ("export the share link list as CSV", "files__export_share_link"),
    ("update the subscription of ada", "billing__update_subscription"),
    ("create a milestone for the beta", "issues__create_milestone"),
    ("search for a folder named taxes", "files__search_folder"),
    ("get the tax rate for Ohio", "billing__get_tax_rate"),
    ("list every comment", "issues__list_comment"),
    ("read one thumbnail", "files__get_thumbnail"),
)


SERVERS = tuple(
    McpServerConfig(
        name=d,
        command=sys.executable,
        args=("-m", "harness.testing.catalog_server", d),
        startup_timeout_s=120,  # three servers start at once on a busy machine
    )
    for d in ("billing", "issues", "files")
)


def _config(deferred: bool, profile: str) -> KeelConfig:
    window = "8192" if deferred else "1000000"
    cfg = config(
        skills__enabled="false",
        model__context_window=window,
        compression__enabled="false",
        prompt__tool_profile=profile,
    )
    return cfg.model_copy(
        update={
            "mcp": cfg.mcp.model_copy(update={"servers": SERVERS, "defer_share": 0.1 if deferred else 0.25})
        }
    )


def _top_hit(request: ModelRequest) -> ReplyLike:
    """Call the first tool the last search found (the agent's choice)."""
    found = json.loads(request.messages[-1].content)
    tools = found.get("tools") or []
    if not tools:
        return say("no tool found")
    return call_tool(tools[0]["name"], {"target": "x-1"})


def _script(deferred: bool, tasks: int) -> ScriptedModel:
    steps: list[object] = []
    for text, tool in TASKS[:tasks]:
        if deferred:
            steps += [call_tool("tool_search", {"query": text}), respond(_top_hit)]
        else:
            steps.append(call_tool(tool, {"target": "x-1"}))
        steps.append(say("done"))
    return ScriptedModel(steps)  # type: ignore[arg-type]  # each a step


async def _run(deferred: bool, tasks: int, home: Path, profile: str) -> dict[str, float]:
    model = _script(deferred, tasks)
    async with open_session(
        _config(deferred, profile), SessionOptions(model=model, home=home, source="benchmark")
    ) as s:
        ran: list[str] = []
        for text, _ in TASKS[:tasks]:
            events = await run_turn(s, text)
            ran += [e.name for e in events if isinstance(e, ToolResultReady) and e.name != "tool_search"]
        trace = s.handles.trace_path
    assert trace is not None
    records = await anyio.to_thread.run_sync(lambda: list(read_trace(trace)))
    tokenizer = await anyio.to_thread.run_sync(load_meter_tokenizer, "cl100k")
    report = await anyio.to_thread.run_sync(
        lambda: measure(records, CanonicalRenderer(tokenizer), simulators=("ideal",))
    )
    turns = [r for r in report.requests if r.purpose == "turn"]
    prompt = sum(r.prompt_tokens for r in turns)
    reused = sum(r.sims["ideal"].reusable for r in turns)
    sent = [m for m in model.requests if m.purpose == "turn"]
    same_tools = (
        len({json.dumps([(t.name, t.description, t.parameters) for t in r.tools]) for r in sent}) == 1
    )
    same_system = len({r.messages[0].content for r in sent}) == 1
    right = sum(1 for (_, want), got in zip(TASKS[:tasks], ran, strict=False) if want == got)
    return {
        "requests": len(turns),
        "median_prompt": median(r.prompt_tokens for r in turns),
        "first_prompt": turns[0].prompt_tokens,
        "reuse": reused / prompt if prompt else 0.0,
        "stable": float(same_tools and same_system),
        "found": right,
    }


async def main(tasks: int, profile: str) -> None:
    with tempfile.TemporaryDirectory(prefix="keel-many-tools-") as tmp:
        rows = {
            way: await _run(way == "deferred", tasks, Path(tmp) / way, profile)
            for way in ("sent", "deferred")
        }
    print(
        f"{'way':<9} {'requests':>8} {'median prompt':>13} {'first prompt':>12} {'reuse':>6} {'stable':>6} found"
    )
    for way, r in rows.items():
        print(
            f"{way:<9} {r['requests']:>8.0f} {r['median_prompt']:>13,.0f} {r['first_prompt']:>12,.0f} "
            f"{r['reuse']:>6.1%} {'yes' if r['stable'] else 'NO':>6} {r['found']:.0f}/{tasks}"
        )
    ratio = rows["deferred"]["median_prompt"] / rows["sent"]["median_prompt"]
    print(f"deferred / sent median prompt tokens: {ratio:.3f}")


async def local(tasks: int, budget_s: float, models_dir: Path, extra: dict[str, str]) -> None:
    """The deferred way on the embedded model (see the module docstring)."""
    deadline = time.monotonic() + budget_s
    with tempfile.TemporaryDirectory(prefix="keel-many-tools-local-") as tmp:
        cfg = load_config(None, environ={"KEEL_HOME": tmp, "KEEL_COMPRESSION__ENABLED": "false", **extra})
        cfg = cfg.model_copy(
            update={
                "mcp": cfg.mcp.model_copy(update={"servers": SERVERS}),
                "model": cfg.model.model_copy(update={"models_dir": models_dir}),
                "skills": cfg.skills.model_copy(update={"enabled": False}),
            }
        )
        async with open_session(cfg, SessionOptions(home=Path(tmp), source="benchmark")) as s:
            sent = [t.name for t in s.tools.specs()]
            print(f"model {s.model.model_name}; {len(s.tools.deferred)} deferred; sent: {', '.join(sent)}")
            found = searched = done = 0
            for text, want in TASKS[:tasks]:
                if time.monotonic() >= deadline:
                    break
                started = time.monotonic()
                events, finished = await bounded_turn(s, text, deadline)
                done += finished
                calls = [f"{e.name}({e.arguments})" for e in events if isinstance(e, ToolCallStarted)]
                names = [e.name for e in events if isinstance(e, ToolCallStarted)]
                searched += "tool_search" in names
                found += want in names
                usage = [
                    f"{u.input + u.cache_read:,}/{u.cache_read:,}"
                    for u in events
                    if isinstance(u, UsageReported) and u.purpose == "turn"
                ]
                print(
                    f"task {text!r} (wants {want}) {time.monotonic() - started:.0f} s"
                    f"{'' if finished else ' [cut]'}: calls {calls or 'none'}; "
                    f"prompt/reused per request {', '.join(usage)}",
                    flush=True,
                )
            trace = s.handles.trace_path
        assert trace is not None
        records = [
            r for r in await anyio.to_thread.run_sync(lambda: list(read_trace(trace))) if r.purpose == "turn"
        ]
    tools = {json.dumps([t.model_dump() for t in r.tools]) for r in records}
    systems = {r.system for r in records}
    prompts = [r.usage.input + r.usage.cache_read for r in records if r.usage is not None]
    reused = [r.usage.cache_read for r in records if r.usage is not None]
    print(f"tasks {done} finished of {tasks}; searched {searched}; right tool called {found}")
    print(
        f"requests {len(records)}; median prompt {median(prompts) if prompts else 0:,.0f}; "
        f"first prompt {prompts[0] if prompts else 0:,}; reused {sum(reused) / max(1, sum(prompts)):.1%}; "
        f"tool list and system stable {'yes' if len(tools) == 1 and len(systems) == 1 else 'NO'}"
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=None, help="tasks to run (default: all; 3 with --local)")
    parser.add_argument(
        "--profile", choices=("full", "compact"), default="full", help="the tool profile shown"
    )
    parser.add_argument("--local", action="store_true", help="the deferred way on the embedded model")
    parser.add_argument("--budget-s", type=float, default=1200.0, help="--local: no task starts after this")
    parser.add_argument("--models-dir", type=Path, default=Path.home() / ".keel" / "models")
    add_set_option(parser)
    args = parser.parse_args()
    if args.local:
        anyio.run(local, min(args.tasks or 3, len(TASKS)), args.budget_s, args.models_dir, overrides(args))
    else:
        anyio.run(main, min(args.tasks or len(TASKS), len(TASKS)), args.profile)
