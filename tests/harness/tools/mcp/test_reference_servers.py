"""Real MCP servers nobody here wrote, from the package registries: over stdio the reference
servers `mcp-server-git` (on a temporary repository) and `mcp-server-time` (PyPI), over
streamable HTTP the reference `@modelcontextprotocol/server-everything` (npm, the version
`npm/package-lock.json` pins). Their tools are listed (sorted, namespaced), called by a
scripted model, and their results are in the transcript.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.config import KeelConfig, McpServerConfig
from harness.events import Event, ToolResultReady
from harness.testing import FakeTokenizer, ScriptedModel, call_tool, config, run_turn, say
from harness.tools.mcp import connect
from harness.types import Message
from harness.wiring import SessionOptions, open_session
from tests.harness.tools.mcp.mcpkit import free_port, npm_servers, wait_for_port


def _need(module: str, package: str) -> None:
    if importlib.util.find_spec(module) is None:
        pytest.skip(f"needs the reference server {package}: pip install {package} (in the dev extra)")


def _with(*servers: McpServerConfig) -> KeelConfig:
    cfg = config(skills__enabled="false")
    return cfg.model_copy(update={"mcp": cfg.mcp.model_copy(update={"servers": servers})})


async def _play(
    server: McpServerConfig, model: ScriptedModel, home: Path, text: str
) -> tuple[list[str], list[Event], tuple[Message, ...]]:
    """One turn of a session with `server`: the server's tool names, the events, the transcript."""
    options = SessionOptions(model=model, home=home, tokenizer=FakeTokenizer())
    async with open_session(_with(server), options) as s:
        names = [n for n in s.tools.names if n.startswith(f"{server.name}__")]
        events = await run_turn(s, text)
        return names, events, s.transcript


def _repository(root: Path) -> Path:
    repo = root / "repo"
    repo.mkdir()
    git = ["git", "-C", str(repo), "-c", "user.name=Ada", "-c", "user.email=ada@example.com"]
    subprocess.run([*git, "init", "-q", "-b", "main"], check=True)
    (repo / "README.md").write_text("# inventory\n")
    subprocess.run([*git, "add", "README.md"], check=True)
    subprocess.run([*git, "commit", "-q", "-m", "Add the inventory readme"], check=True)
    (repo / "notes.txt").write_text("not yet added\n")
    return repo


async def test_mcp_server_git_lists_and_runs_its_tools_on_a_temporary_repository(
    home: Path, tmp_path: Path
) -> None:
    _need("mcp_server_git", "mcp-server-git")
    repo = _repository(tmp_path)
    server = McpServerConfig(
        name="git", command=sys.executable, args=("-m", "mcp_server_git", "--repository", str(repo))
    )
    model = ScriptedModel(
        [
            call_tool("git__git_log", {"repo_path": str(repo), "max_count": 5}),
            call_tool("git__git_status", {"repo_path": str(repo)}),
            say("one commit, one untracked file"),
        ]
    )
    names, events, transcript = await _play(server, model, home, "what is in the repository?")
    assert names == sorted(names) and {"git__git_log", "git__git_status", "git__git_diff"} <= set(names)
    log, status = [e for e in events if isinstance(e, ToolResultReady)]
    assert not log.is_error and "Add the inventory readme" in log.content
    assert not status.is_error and "notes.txt" in status.content
    tool_messages = [m.content for m in transcript if m.role == "tool"]
    assert any("Add the inventory readme" in m for m in tool_messages)


async def test_mcp_server_time_answers_and_refuses_a_bad_timezone_as_a_tool_error(home: Path) -> None:
    _need("mcp_server_time", "mcp-server-time")
    server = McpServerConfig(
        name="time", command=sys.executable, args=("-m", "mcp_server_time", "--local-timezone", "UTC")
    )
    model = ScriptedModel(
        [
            call_tool(
                "time__convert_time",
                {"source_timezone": "UTC", "time": "12:00", "target_timezone": "Asia/Tokyo"},
            ),
            call_tool("time__get_current_time", {"timezone": "Not/AZone"}),
            say("21:00 in Tokyo"),
        ]
    )
    names, events, _ = await _play(server, model, home, "noon UTC in Tokyo?")
    assert names == ["time__convert_time", "time__get_current_time"]
    converted, refused = [e for e in events if isinstance(e, ToolResultReady)]
    assert not converted.is_error
    assert json.loads(converted.content)["target"]["timezone"] == "Asia/Tokyo"
    assert "21:00" in converted.content and "Asia/Tokyo" in converted.content
    assert refused.is_error and "Not/AZone" in refused.content


@pytest.fixture
def everything_url() -> Iterator[str]:
    """The npm reference server `server-everything` in its streamable HTTP mode, on a free port."""
    root = npm_servers()
    script = root / "node_modules" / "@modelcontextprotocol" / "server-everything" / "dist" / "index.js"
    port = free_port()
    argv = ["node", str(script), "streamableHttp"]
    proc = subprocess.Popen(
        argv,
        env={**os.environ, "PORT": str(port)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_for_port(proc, port, argv)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        proc.terminate()
        proc.wait(timeout=10)


async def test_server_everything_over_streamable_http_lists_and_runs_its_tools(
    home: Path, everything_url: str
) -> None:
    server = McpServerConfig(name="everything", url=everything_url)
    model = ScriptedModel(
        [
            call_tool("everything__echo", {"message": "hello from keel"}),
            call_tool("everything__get-sum", {"a": 19, "b": 23}),
            call_tool("everything__get-sum", {"a": "nineteen"}),
            say("the sum is 42"),
        ]
    )
    names, events, transcript = await _play(server, model, home, "echo and add")
    assert names == sorted(names) and {"everything__echo", "everything__get-sum"} <= set(names)
    echoed, added, refused = [e for e in events if isinstance(e, ToolResultReady)]
    assert not echoed.is_error and "Echo: hello from keel" in echoed.content
    assert not added.is_error and "The sum of 19 and 23 is 42." in added.content
    assert refused.is_error
    tool_messages = [m.content for m in transcript if m.role == "tool"]
    assert any("The sum of 19 and 23 is 42." in m for m in tool_messages)


async def test_server_everything_answers_the_discover_probe_as_a_previous_version_server(
    everything_url: str,
) -> None:
    server = McpServerConfig(name="everything", url=everything_url)
    async with connect(server, environ={}, max_output_chars=10_000) as connection:
        version = connection.protocol_version
        names = [t.name for t in connection.tools]
    assert version == "2025-11-25"  # no server/discover: keel negotiated down to the handshake
    assert names == sorted(names) and "get-sum" in names
