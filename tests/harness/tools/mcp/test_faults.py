"""MCP failures are tool errors, always: the fault server (`harness.testing.fault_server`)
breaks a call every way a real one can — over stdio and streamable HTTP — and each time the
model reads a tool error naming the server, and the session (and `keel chat`) goes on."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
from collections.abc import Awaitable, Callable, Iterator, Sequence
from pathlib import Path

import anyio
import pytest

from harness.config import KeelConfig, McpServerConfig
from harness.events import ToolResultReady, TurnEnded, Warning
from harness.testing import FakeTokenizer, ScriptedModel, call_tool, config, run_turn, say
from harness.testing.fault_server import Mode
from harness.wiring import SessionOptions, open_session
from tests.harness.tools.mcp.mcpkit import children_named, start_http_server

FAULTS = [sys.executable, "-m", "harness.testing.fault_server"]


def _with(server: McpServerConfig) -> KeelConfig:
    cfg = config(skills__enabled="false")
    return cfg.model_copy(update={"mcp": cfg.mcp.model_copy(update={"servers": (server,)})})


def _stdio(mode: Mode, **extra: object) -> McpServerConfig:
    return McpServerConfig.model_validate(
        {"name": "bad", "command": FAULTS[0], "args": [*FAULTS[1:], mode], "timeout_s": 5, **extra}
    )


def _start_http(mode: Mode) -> tuple[subprocess.Popen[bytes], str]:
    """The fault server over HTTP on a loopback port, once it answers (blocking: run in a thread)."""
    return start_http_server([*FAULTS, mode])


@pytest.fixture
def http_faults() -> Iterator[list[subprocess.Popen[bytes]]]:
    started: list[subprocess.Popen[bytes]] = []
    yield started
    for proc in started:
        if proc.poll() is None:
            proc.kill()
        proc.wait(timeout=10)


def _http(url: str, **extra: object) -> McpServerConfig:
    return McpServerConfig.model_validate({"name": "bad", "url": url, "timeout_s": 5, **extra})


def _results(events: Sequence[object]) -> list[ToolResultReady]:
    return [e for e in events if isinstance(e, ToolResultReady)]


async def _act_then_echo(home: Path, server: McpServerConfig) -> tuple[list[ToolResultReady], str]:
    """One turn that calls `act` then `echo`; a second, tool-free turn; its answer."""
    model = ScriptedModel(
        [
            call_tool("bad__act", {}),
            call_tool("bad__echo", {"text": "still here"}),
            say("first"),
            say("second"),
        ]
    )
    async with open_session(
        _with(server), SessionOptions(model=model, home=home, tokenizer=FakeTokenizer())
    ) as s:
        events = await run_turn(s, "break it")
        after = await run_turn(s, "and now?")
    final = [e for e in after if isinstance(e, TurnEnded)][-1].final_text
    return _results(events), final


async def _echo_across_a_break(
    home: Path, server: McpServerConfig, break_it: Callable[[], Awaitable[None]]
) -> tuple[ToolResultReady, ToolResultReady, str]:
    """Echo `one` in a turn, `break_it()`, echo `two` in the next: both results and the final answer."""
    model = ScriptedModel(
        [
            call_tool("bad__echo", {"text": "one"}),
            say("first"),
            call_tool("bad__echo", {"text": "two"}),
            say("second"),
        ]
    )
    async with open_session(
        _with(server), SessionOptions(model=model, home=home, tokenizer=FakeTokenizer())
    ) as s:
        first = _results(await run_turn(s, "one"))
        await break_it()
        events = await run_turn(s, "two")
    return first[0], _results(events)[0], [e for e in events if isinstance(e, TurnEnded)][-1].final_text


def _error(result: ToolResultReady) -> str:
    assert result.is_error, result.content
    message: str = json.loads(result.content)["error"]
    assert "'bad'" in message  # the server is named
    return message


@pytest.mark.parametrize(
    ("mode", "extra", "act_words", "echo_words"),
    [
        ("die", {}, "not available", "not available"),
        ("mid_body", {}, "not available", "not available"),
        ("huge", {}, "over 16,000,000 bytes", None),
        ("endless", {"max_result_bytes": 1_000_000, "timeout_s": 2}, "over 1,000,000 bytes", "did not end"),
    ],
)
async def test_a_stdio_server_that_breaks_a_call_gives_tool_errors_and_the_session_goes_on(
    home: Path, mode: Mode, extra: dict[str, object], act_words: str, echo_words: str | None
) -> None:
    (act, echo), final = await _act_then_echo(home, _stdio(mode, **extra))
    assert act_words in _error(act)
    if echo_words is None:
        assert echo.content == "still here" and not echo.is_error  # the server is fine after it
    else:
        assert echo_words in _error(echo)
    assert final == "second"


async def test_a_stray_stdout_line_is_skipped_and_the_server_stays(home: Path) -> None:
    (act, echo), final = await _act_then_echo(home, _stdio("stray"))
    assert (act.content, echo.content) == ("acted", "still here")
    assert final == "second"


async def test_an_invalid_relist_keeps_the_previous_list_with_a_warning(home: Path) -> None:
    model = ScriptedModel([call_tool("bad__act", {}), say("acted"), say("after the rebuild")])
    async with open_session(
        _with(_stdio("relist")), SessionOptions(model=model, home=home, tokenizer=FakeTokenizer())
    ) as s:
        await run_turn(s, "act")
        before = s.tools.names
        await s.new_conversation()  # a prompt rebuild re-lists
        events = await run_turn(s, "again")
        after = s.tools.names
    assert before == after and "bad__broken" not in after
    warnings = [e.message for e in events if isinstance(e, Warning)]
    assert any("re-listing its tools failed" in w and "old tools are kept" in w for w in warnings), warnings
    assert [e for e in events if isinstance(e, TurnEnded)][-1].final_text == "after the rebuild"


async def test_a_stdio_server_killed_between_turns_is_a_tool_error_next_turn(home: Path) -> None:
    async def kill_it() -> None:
        for pid in await anyio.to_thread.run_sync(children_named, b"fault_server"):
            os.kill(pid, signal.SIGKILL)

    first, second, final = await _echo_across_a_break(home, _stdio("ok"), kill_it)
    assert first.content == "one"
    assert "not available" in _error(second)
    assert final == "second"


@pytest.mark.parametrize(
    ("mode", "extra", "act_words", "echo_words"),
    [
        ("die", {}, "", "the request failed"),
        ("mid_body", {}, "broke off", "the request failed"),
        ("bad_chunk", {}, "broke off", None),
        ("huge", {}, "over 16,000,000 bytes", None),
        ("endless", {"max_result_bytes": 1_000_000}, "over 1,000,000 bytes", None),
    ],
)
async def test_an_http_server_that_breaks_a_call_gives_tool_errors_and_the_session_goes_on(
    home: Path,
    http_faults: list[subprocess.Popen[bytes]],
    mode: Mode,
    extra: dict[str, object],
    act_words: str,
    echo_words: str | None,
) -> None:
    proc, url = await anyio.to_thread.run_sync(_start_http, mode)
    http_faults.append(proc)
    (act, echo), final = await _act_then_echo(home, _http(url, **extra))
    assert act_words in _error(act)
    if echo_words is None:
        assert echo.content == "still here" and not echo.is_error
    else:
        assert echo_words in _error(echo)
    assert final == "second"


async def test_an_http_server_down_between_turns_is_a_tool_error_and_back_when_it_is(
    home: Path, http_faults: list[subprocess.Popen[bytes]]
) -> None:
    proc, url = await anyio.to_thread.run_sync(_start_http, "ok")
    http_faults.append(proc)

    async def stop_it() -> None:
        proc.kill()
        await anyio.to_thread.run_sync(proc.wait)

    first, second, final = await _echo_across_a_break(home, _http(url), stop_it)
    assert first.content == "one"
    assert "the request failed" in _error(second)
    assert final == "second"


_CHAT = """
import functools, io, pathlib, sys
import anyio
from harness.cli.commands.chat import _chat
from harness.config import McpServerConfig
from harness.testing import FakeTokenizer, ScriptedModel, call_tool, config, say
from harness.wiring import SessionOptions

cfg = config(skills__enabled="false")
server = McpServerConfig(name="bad", url=__URL__, timeout_s=5)
cfg = cfg.model_copy(update={"mcp": cfg.mcp.model_copy(update={"servers": (server,)})})
model = ScriptedModel([call_tool("bad__act", {}), say("first answer"), say("second answer")])
sys.stdin = io.StringIO("break it\\nare you there?\\n/quit\\n")
options = SessionOptions(model=model, home=pathlib.Path(__HOME__), tokenizer=FakeTokenizer(), source="chat")
code = anyio.run(functools.partial(_chat, cfg, False, options=options))
print("EXIT", code)
sys.exit(code)
"""


def test_keel_chat_goes_on_when_an_http_server_dies_mid_call(
    tmp_path: Path, http_faults: list[subprocess.Popen[bytes]]
) -> None:
    proc, url = _start_http("die")
    http_faults.append(proc)
    script = tmp_path / "chat.py"
    script.write_text(
        textwrap.dedent(_CHAT).replace("__URL__", repr(url)).replace("__HOME__", repr(str(tmp_path / "home")))
    )
    done = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "first answer" in done.stdout and "second answer" in done.stdout and "EXIT 0" in done.stdout
    assert "Traceback" not in done.stderr


async def test_a_server_that_reorders_its_tools_gives_the_same_sorted_list_and_prefix(home: Path) -> None:
    model = ScriptedModel([call_tool("bad__act", {}), say("re-ordered"), say("after the rebuild")])
    async with open_session(
        _with(_stdio("shuffle")), SessionOptions(model=model, home=home, tokenizer=FakeTokenizer())
    ) as s:
        before = s.tools.names
        await run_turn(s, "act")  # the server says its list changed, and lists in another order
        await s.new_conversation()
        events = await run_turn(s, "again")
        after = s.tools.names
    ours = [n for n in before if n.startswith("bad__")]
    assert ours == sorted(ours) and len(ours) == 12
    assert before == after
    assert not [e for e in events if isinstance(e, Warning)]  # the same tools: nothing to say
    sent = [tuple(t.name for t in r.tools) for r in model.requests if r.purpose == "turn"]
    assert len(set(sent)) == 1  # byte-stable tool list across the re-list


@pytest.mark.parametrize(
    ("mode", "present", "absent", "words"),
    [
        ("many", "bad__tool_0297", "bad__tool_0298", "offers 1,002 tools; only the first 300"),
        ("bigschema", "bad__echo", "bad__big", "over mcp.servers[].max_schema_bytes"),
        ("dupe", "bad__act", "bad__echo", "advertises tool 'echo' 2 times"),
    ],
)
async def test_a_bad_tool_list_is_made_safe_with_a_warning_and_the_session_goes_on(
    home: Path, mode: Mode, present: str, absent: str, words: str
) -> None:
    model = ScriptedModel([call_tool("bad__act", {}), say("fine")])
    async with open_session(
        _with(_stdio(mode)), SessionOptions(model=model, home=home, tokenizer=FakeTokenizer())
    ) as s:
        names = s.tools.names
        events = await run_turn(s, "go on")
    assert present in names and absent not in names
    warnings = [e.message for e in events if isinstance(e, Warning)]
    assert any(words in w for w in warnings), warnings
    assert _results(events)[0].content == "acted"


async def test_the_current_protocol_with_a_current_server_and_the_handshake_with_an_older_one() -> None:
    from harness.tools.mcp import connect

    project = McpServerConfig(
        name="proj", command=sys.executable, args=("-m", "harness.testing.project_server")
    )
    async with connect(project, environ={}, max_output_chars=1000) as modern:
        assert modern.protocol_version == "2026-07-28"  # server/discover, no initialize
        assert not (await modern.call("list_files", {})).is_error
    async with connect(_stdio("ok"), environ={}, max_output_chars=1000) as legacy:
        assert legacy.protocol_version == "2025-11-25"  # discover refused: the initialize handshake
        assert (await legacy.call("echo", {"text": "hi"})).content == "hi"


async def test_a_current_server_s_list_change_arrives_on_its_subscription_stream() -> None:
    from harness.tools.mcp import connect

    project = McpServerConfig(
        name="proj", command=sys.executable, args=("-m", "harness.testing.project_server", "--faults")
    )
    async with connect(project, environ={}, max_output_chars=1000) as connection:

        def stale() -> bool:
            return connection.stale

        assert not stale()
        assert (await connection.call("grow", {})).content == "grown"
        with anyio.move_on_after(20):
            while not stale():  # noqa: ASYNC110  # polling the flag the stream sets
                await anyio.sleep(0.05)
        assert stale()  # marked for the next rebuild, nothing else changed
        assert "extra" not in [t.name for t in connection.tools]
