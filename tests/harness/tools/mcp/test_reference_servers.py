"""Real MCP servers nobody here wrote, from the package registry, over stdio: the reference
servers `mcp-server-git` (on a temporary repository) and `mcp-server-time`. Their tools are
listed (sorted, namespaced), called by a scripted model, and their results are in the transcript.
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

from harness.config import KeelConfig, McpServerConfig
from harness.events import ToolResultReady
from harness.testing import FakeTokenizer, ScriptedModel, call_tool, config, run_turn, say
from harness.wiring import SessionOptions, open_session


def _need(module: str, package: str) -> None:
    if importlib.util.find_spec(module) is None:
        pytest.skip(f"needs the reference server {package}: pip install {package} (in the dev extra)")


def _with(*servers: McpServerConfig) -> KeelConfig:
    cfg = config(skills__enabled="false")
    return cfg.model_copy(update={"mcp": cfg.mcp.model_copy(update={"servers": servers})})


async def _ask(
    home: Path, server: McpServerConfig, model: ScriptedModel, question: str
) -> tuple[list[str], list[ToolResultReady], list[str]]:
    """One turn with `server`: its tools' names as listed, the tool results, the transcript's tool messages."""
    async with open_session(
        _with(server), SessionOptions(model=model, home=home, tokenizer=FakeTokenizer())
    ) as s:
        names = [n for n in s.tools.names if n.startswith(f"{server.name}__")]
        events = await run_turn(s, question)
        tool_messages = [m.content for m in s.transcript if m.role == "tool"]
    return names, [e for e in events if isinstance(e, ToolResultReady)], tool_messages


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
    names, (log, status), tool_messages = await _ask(home, server, model, "what is in the repository?")
    assert names == sorted(names) and {"git__git_log", "git__git_status", "git__git_diff"} <= set(names)
    assert not log.is_error and "Add the inventory readme" in log.content
    assert not status.is_error and "notes.txt" in status.content
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
    names, (converted, refused), _ = await _ask(home, server, model, "noon UTC in Tokyo?")
    assert names == ["time__convert_time", "time__get_current_time"]
    assert not converted.is_error
    assert json.loads(converted.content)["target"]["timezone"] == "Asia/Tokyo"
    assert "21:00" in converted.content and "Asia/Tokyo" in converted.content
    assert refused.is_error and "Not/AZone" in refused.content
