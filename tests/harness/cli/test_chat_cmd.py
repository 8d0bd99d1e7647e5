"""`keel chat` on a scripted model: each tool call and a short form of its result show as
they happen, and template markup or a call written as text never reaches the screen."""

from __future__ import annotations

import io
import sys
from pathlib import Path

import pytest

from harness.cli._render import short_result
from harness.cli.commands.chat import _chat
from harness.testing import FakeTokenizer, ScriptedModel, call_tool, config, say
from harness.wiring import SessionOptions

LOG = "".join(f"step {i:04d}: compiled module_{i}\n" for i in range(500))


def build_log() -> str:
    """The full build log."""
    return LOG


async def _chat_on(
    home: Path,
    model: ScriptedModel,
    lines: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> str:
    monkeypatch.setattr(sys, "stdin", io.StringIO(lines))
    options = SessionOptions(
        model=model, home=home, tokenizer=FakeTokenizer(), source="chat", tools=(build_log,)
    )
    await _chat(config(skills__enabled="false"), False, options=options)
    return capsys.readouterr().out


async def test_chat_shows_each_tool_call_and_a_short_result_before_the_answer(
    home: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    model = ScriptedModel(
        [
            call_tool("build_log", {}),
            call_tool("session_search", {"message_id": "not a number"}),
            say("The build compiled 500 modules."),
        ]
    )
    out = await _chat_on(home, model, "How did the build go?\n/quit\n", monkeypatch, capsys)
    lines = out.splitlines()
    call = next(i for i, line in enumerate(lines) if "→ build_log({})" in line)
    result = lines[call + 1]
    assert result.strip().startswith(f"✓ build_log: {len(LOG):,} chars: step 0000: compiled module_0")
    assert len(result) < 140 and "module_499" not in out  # a short form, not the log
    failed = next(line for line in lines if "✗ session_search:" in line)
    assert "message_id" in failed and '"success"' not in failed  # the error's message, not its JSON
    answer = next(i for i, line in enumerate(lines) if "The build compiled 500 modules." in line)
    assert call < answer


async def test_chat_never_shows_template_markup_or_a_call_written_as_text(
    home: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    model = ScriptedModel(
        [
            say(
                'I will save it. {"name": "memory", "arguments": {"target": "user", "content": "neo'
            ),  # cut short
            say("<|im_start|>assistant\nSaved."),
            say("Noted: you use neovim."),
        ],
        stream_chunks=25,
    )
    out = await _chat_on(home, model, "I use neovim.\n", monkeypatch, capsys)
    assert "<|im_start|>" not in out and '{"name"' not in out and '"arguments"' not in out
    assert "I will save it." in out and "Noted: you use neovim." in out
    assert out.count("✗ unparsed_call:") == 2  # each refused reply is shown as a refused call


def test_a_short_result_is_the_text_itself_an_error_message_or_a_sized_start() -> None:
    assert short_result("ok", is_error=False) == "ok"
    assert short_result('{"success": false, "error": "no such file"}', is_error=True) == "no such file"
    long = short_result("line\n" * 1_000, is_error=False)
    assert long.startswith("5,000 chars: line line") and len(long) <= 100
