"""`tool-session`: a long scripted coding session over the deterministic MCP project server.

The agent reads files, greps and runs the test suite of the made-up `inventory` project
(`harness.testing.project_server`, started over stdio from the scenario's own config), so
most of what the transcript accumulates is tool output — a run of the tests alone is about
6,000 characters — the way real coding-agent contexts fill. One compression is forced near
the end, so the summary prompt, the flush and the rebuilt prefix all see a tool-heavy middle.

`tool_session()` returns the scenario; other experiments use it as filler for long sessions.
"""

from __future__ import annotations

import sys

from harness.experiments.scenarios.spec import InitialMemory, ReplySpec, Scenario, ToolCallSpec, TurnSpec
from harness.testing.project_server import PROJECT

__all__ = ["tool_session"]

_SERVER = "proj"


def _call(tool: str, **arguments: str) -> ReplySpec:
    return ReplySpec(tool_calls=(ToolCallSpec(name=f"{_SERVER}__{tool}", arguments=dict(arguments)),))


def _turn(n: int, paths: list[str]) -> TurnSpec:
    path = paths[n % len(paths)]
    module = path.rsplit("/", 1)[-1].removesuffix(".py")
    kind = n % 4
    if kind == 0:
        return TurnSpec(
            user="Run the tests and tell me what fails.",
            replies=(
                _call("run_tests"),
                ReplySpec(say="One test fails: test_pricing_rule_3_caps (2999 != 3000)."),
            ),
        )
    if kind == 1:
        return TurnSpec(
            user=f"Show me {path}.",
            replies=(
                _call("read_file", path=path),
                ReplySpec(say=f"{path} defines eight rules, each capped."),
            ),
        )
    if kind == 2:
        return TurnSpec(
            user=f"Where is {module}_rule_3 used?",
            replies=(
                _call("grep", pattern=f"{module}_rule_3"),
                ReplySpec(say=f"{module}_rule_3 is defined in {path} and tested once."),
            ),
        )
    return TurnSpec(
        user="List the project files, then read the README.",
        replies=(
            _call("list_files"),
            _call("read_file", path="README.md"),
            ReplySpec(say="The project is a small inventory service with six modules and their tests."),
        ),
    )


def tool_session(turns: int = 40, *, compress_at: int | None = None) -> Scenario:
    """The scenario: `turns` tool-using turns, a compression forced at `compress_at` (default: 3/4 in)."""
    paths = sorted(p for p in PROJECT if p.endswith(".py") and "__init__" not in p)
    at = compress_at if compress_at is not None else max(1, turns * 3 // 4)
    specs = [_turn(n, paths) for n in range(turns)]
    specs[at - 1] = specs[at - 1].model_copy(update={"compress": True})
    return Scenario(
        name="tool-session" if turns == 40 else f"tool-session-{turns}",
        description=(
            "A coding session over an MCP project server: file reads, greps and test runs in every turn, "
            "big tool outputs, one forced compression near the end."
        ),
        config={
            "model": {"context_window": 200_000},
            "mcp": {
                "servers": [
                    {
                        "name": _SERVER,
                        "command": sys.executable,
                        "args": ["-m", "harness.testing.project_server"],
                    }
                ]
            },
        },
        initial_memory=InitialMemory(memory=("The project under work is the inventory service",)),
        turns=tuple(specs),
    )
