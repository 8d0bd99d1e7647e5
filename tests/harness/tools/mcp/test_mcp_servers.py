"""MCP servers as tool sources, against real servers written with the SDK: the project server
(`harness.testing.project_server`) as a subprocess over stdio and over streamable HTTP on
loopback. A scripted model calls the tools; the transcript, the trace and the errors are checked.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path

import anyio
import pytest

from harness.config import KeelConfig, McpServerConfig
from harness.errors import ConfigError, ToolServerError
from harness.events import ToolResultReady, Warning
from harness.testing import (
    FakeTokenizer,
    ScriptedModel,
    assert_cache_stable,
    call_tool,
    config,
    run_turn,
    say,
)
from harness.trace import read_trace
from harness.wiring import SessionOptions, open_session
from tests.harness.tools.mcp.mcpkit import children_named, free_port, start_http_server

SERVER = [sys.executable, "-m", "harness.testing.project_server", "--faults"]


def _stdio(name: str = "proj", **extra: object) -> McpServerConfig:
    return McpServerConfig.model_validate({"name": name, "command": SERVER[0], "args": SERVER[1:], **extra})


def _with_servers(*servers: McpServerConfig, **env: str) -> KeelConfig:
    cfg = config(**env)
    return cfg.model_copy(update={"mcp": cfg.mcp.model_copy(update={"servers": servers})})


@pytest.fixture
def http_server() -> Iterator[str]:
    """The project server over streamable HTTP on a loopback port, stopped after the test."""
    proc, url = start_http_server(SERVER)
    try:
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def _servers_started_by_us() -> list[int]:
    """Live project-server processes whose parent is this test process."""
    return children_named(b"project_server")


def _results(events: Sequence[object]) -> dict[str, ToolResultReady]:
    return {e.name: e for e in events if isinstance(e, ToolResultReady)}


async def _refused_at_open(home: Path, match: str, *servers: McpServerConfig) -> None:
    """Opening a session with `servers` fails with a `ToolServerError` matching `match`."""
    options = SessionOptions(model=ScriptedModel([]), home=home, tokenizer=FakeTokenizer())
    with pytest.raises(ToolServerError, match=match):
        async with open_session(_with_servers(*servers), options):
            pass


async def test_stdio_tools_are_listed_namespaced_in_a_stable_order_and_called(home: Path) -> None:
    model = ScriptedModel(
        [
            call_tool("proj__read_file", {"path": "README.md"}),
            call_tool("proj__refuse", {}),
            call_tool("proj__read_file", {"path": 3}),
            say("done"),
        ]
    )
    cfg = _with_servers(_stdio())
    async with open_session(cfg, SessionOptions(model=model, home=home, tokenizer=FakeTokenizer())) as s:
        names = [n for n in s.tools.names if n.startswith("proj__")]
        events = await run_turn(s, "read the readme")
        transcript = s.transcript
        trace = s.handles.trace_path
    assert names == sorted(names) and "proj__run_tests" in names and "proj__grep" in names
    sent = [t.name for t in model.requests[0].tools]
    assert sent[-len(names) :] == names  # after keel's own tools, in the same order
    results = [e for e in events if isinstance(e, ToolResultReady)]
    assert "# inventory" in results[0].content and not results[0].is_error
    assert results[1].is_error and "refused on purpose" in results[1].content
    assert results[2].is_error  # a wrong argument type: the server's validation, as a tool error
    tool_messages = [m for m in transcript if m.role == "tool"]
    assert "# inventory" in tool_messages[0].content
    assert trace is not None
    records = await anyio.to_thread.run_sync(lambda: list(read_trace(trace)))
    last = records[-1]
    assert "proj__read_file" in [t.name for t in last.tools]
    assert any(m.role == "tool" and "# inventory" in str(m.content) for m in last.messages)


async def test_images_structured_content_and_a_5_mb_result_are_mapped_and_capped(home: Path) -> None:
    model = ScriptedModel(
        [
            call_tool("proj__picture", {}),
            call_tool("proj__report", {}),
            call_tool("proj__huge", {}),
            say("ok"),
        ]
    )
    cfg = _with_servers(_stdio(timeout_s=120), limits__tool_output_chars="4000")
    async with open_session(cfg, SessionOptions(model=model, home=home, tokenizer=FakeTokenizer())) as s:
        events = await run_turn(s, "show me")
    got = _results(events)
    assert got["proj__picture"].content.startswith("[image: image/png")
    assert json.loads(got["proj__report"].content) == {"passed": 47, "failed": 1}
    huge = got["proj__huge"].content
    assert len(huge) < 4200 and "characters cut" in huge and not got["proj__huge"].is_error


async def test_a_server_that_dies_mid_session_turns_its_calls_into_tool_errors(home: Path) -> None:
    model = ScriptedModel(
        [
            call_tool("proj__crash", {}),
            call_tool("proj__list_files", {}),
            say("the server is gone"),
            say("still here"),
        ]
    )
    cfg = _with_servers(_stdio())
    async with open_session(cfg, SessionOptions(model=model, home=home, tokenizer=FakeTokenizer())) as s:
        events = await run_turn(s, "crash it")
        after = await run_turn(s, "are you there?")
    results = [e for e in events if isinstance(e, ToolResultReady)]
    assert all(r.is_error for r in results)
    assert "not available" in results[1].content and "proj" in results[1].content
    assert any(getattr(e, "final_text", "") == "still here" for e in after)


async def test_a_call_that_hangs_times_out_as_a_tool_error(home: Path) -> None:
    model = ScriptedModel([call_tool("proj__hang", {}), call_tool("proj__list_files", {}), say("ok")])
    cfg = _with_servers(_stdio(timeout_s=1))
    async with open_session(cfg, SessionOptions(model=model, home=home, tokenizer=FakeTokenizer())) as s:
        events = await run_turn(s, "wait")
    results = [e for e in events if isinstance(e, ToolResultReady)]
    assert results[0].is_error and "timed out after 1 s" in results[0].content
    assert not results[1].is_error and "README.md" in results[1].content  # the server still answers


async def test_list_changed_takes_effect_at_the_next_prompt_rebuild_only(home: Path) -> None:
    model = ScriptedModel([call_tool("proj__grow", {}), say("grown"), say("same tools"), say("after")])
    cfg = _with_servers(_stdio())
    async with open_session(cfg, SessionOptions(model=model, home=home, tokenizer=FakeTokenizer())) as s:
        await run_turn(s, "grow")
        await run_turn(s, "again")
        before = s.tools.names
        await s.new_conversation()  # a prompt rebuild
        events = await run_turn(s, "after the rebuild")
        trace = s.handles.trace_path
    assert "proj__extra" not in before
    assert "proj__extra" in [t.name for t in model.requests[-1].tools]
    assert any(isinstance(e, Warning) and "tool list changed" in e.message for e in events)
    turn_requests = [r for r in model.requests if r.purpose == "turn"]
    # every request before the rebuild carried the same tools: the prefix stayed byte-stable
    assert len({tuple(t.name for t in r.tools) for r in turn_requests[:3]}) == 1
    assert trace is not None
    assert_cache_stable(trace)


async def test_streamable_http_server_lists_calls_and_times_out(home: Path, http_server: str) -> None:
    model = ScriptedModel(
        [call_tool("web__grep", {"pattern": "def pricing_rule_3"}), call_tool("web__hang", {}), say("ok")]
    )
    server = McpServerConfig(name="web", url=http_server, timeout_s=1)
    async with open_session(
        _with_servers(server), SessionOptions(model=model, home=home, tokenizer=FakeTokenizer())
    ) as s:
        assert "web__run_tests" in s.tools.names
        events = await run_turn(s, "find it")
    results = [e for e in events if isinstance(e, ToolResultReady)]
    assert "inventory/pricing.py" in results[0].content and not results[0].is_error
    assert results[1].is_error and "timed out" in results[1].content


async def test_a_missing_command_is_a_clear_error_and_nothing_is_left_running(home: Path) -> None:
    first = _stdio("first")
    missing = McpServerConfig(name="nope", command="keel-no-such-server-command")
    await _refused_at_open(
        home, r"'nope'.*command 'keel-no-such-server-command' was not found", first, missing
    )
    assert await anyio.to_thread.run_sync(_servers_started_by_us) == []  # the first server was stopped


async def test_a_server_that_fails_at_start_names_itself_and_quotes_its_stderr(home: Path) -> None:
    broken = McpServerConfig(
        name="broken",
        command=sys.executable,
        args=("-c", "import sys; sys.stderr.write('boom at start\\n'); sys.exit(2)"),
    )
    await _refused_at_open(home, r"(?s)'broken'.*failed to start.*boom at start", broken)


async def test_a_url_nobody_answers_is_a_clear_error_at_open(home: Path) -> None:
    server = McpServerConfig(name="away", url=f"http://127.0.0.1:{free_port()}/mcp", startup_timeout_s=5)
    await _refused_at_open(home, r"'away'.*failed to start", server)


async def test_a_server_that_never_answers_at_start_is_a_clear_error_at_open(home: Path) -> None:
    silent = McpServerConfig(
        name="silent",
        command=sys.executable,
        args=("-c", "import time; time.sleep(120)"),
        startup_timeout_s=2,
    )
    await _refused_at_open(home, r"'silent'.*did not start and list its tools within 2 s", silent)


def test_bad_server_entries_are_refused_by_the_config() -> None:
    with pytest.raises(ValueError, match="two servers are named 'a'"):
        KeelConfig.model_validate(
            {"mcp": {"servers": [{"name": "a", "command": "x"}, {"name": "a", "command": "y"}]}}
        )
    with pytest.raises(ValueError, match="is not an http"):
        McpServerConfig(name="u", url="ftp://example")
    with pytest.raises(ValueError, match="exactly one of command"):
        McpServerConfig(name="u")


async def test_a_server_tool_that_clashes_with_a_python_tool_is_refused_at_open(home: Path) -> None:
    def proj__grep(pattern: str) -> str:
        """Mine."""
        return pattern

    with pytest.raises(ConfigError, match="'proj__grep'"):
        async with open_session(
            _with_servers(_stdio()),
            SessionOptions(
                model=ScriptedModel([]), home=home, tokenizer=FakeTokenizer(), tools=(proj__grep,)
            ),
        ):
            pass


async def test_a_tool_whose_schema_is_invalid_is_a_clear_error_at_open_with_nothing_running(
    home: Path,
) -> None:
    def untyped(x) -> str:  # type: ignore[no-untyped-def]  # the bad input under test
        """No annotation on x."""
        return str(x)

    with pytest.raises(ConfigError, match=r"'untyped'.*no type annotation"):
        async with open_session(
            _with_servers(_stdio()),
            SessionOptions(model=ScriptedModel([]), home=home, tokenizer=FakeTokenizer(), tools=(untyped,)),
        ):
            pass
    assert await anyio.to_thread.run_sync(_servers_started_by_us) == []
