"""`harness.tools.workers`: a Python tool cannot take the session down — not by raising
`SystemExit`, not by never returning, not by swallowing cancellation, not by blocking its loop —
and a `keel chat` process whose tools did all of that still answers and exits."""

from __future__ import annotations

import argparse
import asyncio
import json
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import anyio
import pytest

from harness.events import Warning
from harness.tools.functions import python_tool, tool
from harness.tools.registry import RawTool, ToolOutput, ToolRegistry
from harness.tools.workers import run_sync
from harness.types import ToolCall, ToolSpec


def bad_flags(flags: str) -> str:
    """Run a command line (argparse exits on a flag it does not know)."""
    parser = argparse.ArgumentParser(prog="bad_flags", exit_on_error=True)
    parser.add_argument("--known")
    parser.parse_args(flags.split())
    return "parsed"


async def interrupt() -> str:
    """Raise KeyboardInterrupt from the tool's own code."""
    raise KeyboardInterrupt


def generator_exit() -> str:
    """Raise GeneratorExit from the tool's own code."""
    raise GeneratorExit


@pytest.mark.parametrize(
    ("fn", "arguments", "words"),
    [
        (bad_flags, {"flags": "--nope"}, "exit(2)"),
        (interrupt, {}, "KeyboardInterrupt"),
        (generator_exit, {}, "GeneratorExit"),
    ],
)
async def test_a_tool_raising_a_base_exception_is_a_tool_error(
    fn: object, arguments: dict[str, str], words: str, capsys: pytest.CaptureFixture[str]
) -> None:
    out = await python_tool(fn)(json.dumps(arguments))  # type: ignore[arg-type]  # each a plain tool function
    capsys.readouterr()  # argparse's usage line
    assert out.is_error
    assert words in json.loads(out.content)["error"]


async def test_the_registry_turns_a_base_exception_of_any_tool_into_a_tool_error() -> None:
    async def leave(arguments: str) -> ToolOutput:
        raise SystemExit(arguments)

    registry = ToolRegistry()
    registry.add(RawTool(ToolSpec("leave", "Exit.", {"type": "object"}), leave))
    result, _ = await registry.run(ToolCall("c1", "leave", "{}"))
    assert result.is_error and "SystemExit" in result.content


async def test_an_async_tool_that_swallows_cancellation_is_abandoned_at_its_timeout() -> None:
    @tool(timeout_s=0.3)
    async def stubborn() -> str:
        """Refuse to stop."""
        while True:
            try:
                await anyio.sleep(10)
            except asyncio.CancelledError:
                continue

    out = await python_tool(stubborn)("{}")
    assert out.is_error and "timed out after 0.3 s" in out.content
    assert (await python_tool(bad_flags)('{"flags": "--known x"}')).content == "parsed"  # tools still run


async def test_a_blocking_call_inside_an_async_tool_is_reported_and_the_session_loop_keeps_running() -> None:
    async def blocking() -> str:
        """Sleep without yielding."""
        time.sleep(0.8)  # noqa: ASYNC251  # the blocking call under test
        return "woke"

    ticks_during_call = 0
    running = True

    async def ticker() -> None:
        nonlocal ticks_during_call
        while running:
            await anyio.sleep(0.02)
            ticks_during_call += 1

    async with anyio.create_task_group() as tg:
        tg.start_soon(ticker)
        out = await python_tool(blocking)("{}")
        running = False
    assert out.content == "woke" and not out.is_error
    warnings = [e for e in out.events if isinstance(e, Warning)]
    assert warnings and "'blocking' blocked its event loop" in warnings[0].message
    assert ticks_during_call > 1  # the session's loop was never the one blocked


async def test_an_async_tool_that_yields_is_not_reported_as_blocking() -> None:
    async def patient() -> str:
        """Sleep politely."""
        await anyio.sleep(0.7)
        return "ok"

    out = await python_tool(patient)("{}")
    assert out.content == "ok" and out.events == ()


async def test_sync_calls_reuse_a_daemon_thread_and_one_that_hangs_is_left_behind() -> None:
    release = threading.Event()
    seen: list[threading.Thread] = []

    def where() -> str:
        seen.append(threading.current_thread())
        return "here"

    def hang() -> str:
        seen.append(threading.current_thread())
        release.wait(30)
        return "late"

    first = await run_sync(where, name="where", timeout_s=5)
    second = await run_sync(where, name="where", timeout_s=5)
    stuck = await run_sync(hang, name="hang", timeout_s=0.2)
    third = await run_sync(where, name="where", timeout_s=5)  # does not wait behind the hung call
    release.set()
    assert (first.value, second.value, third.value) == ("here", "here", "here")
    assert stuck.timed_out
    assert seen[0] is seen[1]  # one thread served both calls: no thread started per call
    assert seen[3] is not seen[2]  # the hung call kept its thread; the next call got another
    assert all(t.daemon for t in seen)  # never joined at exit


_CHAT = """
import argparse, asyncio, functools, io, pathlib, sys, time
import anyio
import harness
from harness.cli.commands.chat import _chat
from harness.testing import FakeTokenizer, ScriptedModel, call_tool, config, say
from harness.wiring import SessionOptions

def bad_flags(flags: str) -> str:
    \"\"\"Parse flags.\"\"\"
    argparse.ArgumentParser(prog="bad_flags").parse_args(flags.split())
    return "parsed"

@harness.tool(timeout_s=0.5)
def stuck() -> str:
    \"\"\"Never return.\"\"\"
    time.sleep(3600)
    return "never"

@harness.tool(timeout_s=0.5)
async def stubborn() -> str:
    \"\"\"Swallow cancellation.\"\"\"
    while True:
        try:
            await anyio.sleep(10)
        except asyncio.CancelledError:
            pass

@harness.tool(timeout_s=30)
async def blocking() -> str:
    \"\"\"Block the loop.\"\"\"
    time.sleep(0.6)
    return "woke"

model = ScriptedModel([
    call_tool("bad_flags", {"flags": "--nope"}),
    call_tool("stuck", {}),
    call_tool("stubborn", {}),
    call_tool("blocking", {}),
    say("first answer"),
    say("second answer"),
])
sys.stdin = io.StringIO("break things\\nare you there?\\n/quit\\n")
options = SessionOptions(model=model, home=pathlib.Path(__HOME__), tokenizer=FakeTokenizer(), source="chat",
                         tools=(bad_flags, stuck, stubborn, blocking))
code = anyio.run(functools.partial(_chat, config(skills__enabled="false"), False, options=options))
print("EXIT", code)
sys.exit(code)
"""


def test_keel_chat_survives_tools_that_exit_hang_swallow_cancellation_and_block_then_exits(
    tmp_path: Path,
) -> None:
    script = tmp_path / "chat.py"
    script.write_text(textwrap.dedent(_CHAT).replace("__HOME__", repr(str(tmp_path / "home"))))
    done = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=120, check=False
    )
    out = done.stdout
    assert done.returncode == 0, done.stderr[-2000:]
    assert "EXIT 0" in out
    assert "first answer" in out and "second answer" in out  # the session went on after all four
    assert "exit(2)" in out and "timed out after 0.5 s" in out
    assert "blocked its event loop" in out
