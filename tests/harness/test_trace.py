"""Trace files: appended whole, read back, and owner-only like state.db (they hold conversations)."""

from __future__ import annotations

import dataclasses
import os
import stat
from pathlib import Path

from harness.trace import TraceParts, TraceWriter, read_trace, record_for_request
from harness.types import Message, ModelRequest, ToolSpec


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


async def test_a_new_trace_file_is_owner_only_in_an_owner_only_directory(tmp_path: Path) -> None:
    path = tmp_path / "home" / "traces" / "s1.jsonl"
    writer = TraceWriter(path)
    await writer.write(
        record_for_request(ModelRequest(system="s", messages=()), session_id="s1", turn=1, model="m")
    )
    assert _mode(path) == 0o600
    assert _mode(path.parent) & 0o077 == 0


async def test_an_existing_world_readable_trace_is_narrowed_to_the_owner_on_the_next_write(
    tmp_path: Path,
) -> None:
    path = tmp_path / "old.jsonl"
    path.write_text("", encoding="utf-8")
    path.chmod(0o644)
    writer = TraceWriter(path)
    request = ModelRequest(system="s", messages=(Message(role="user", content="hello"),))
    await writer.write(record_for_request(request, session_id="s1", turn=1, model="m"))
    await writer.write(record_for_request(request, session_id="s1", turn=2, model="m"))
    assert _mode(path) == 0o600
    assert [r.turn for r in read_trace(path)] == [1, 2]


async def test_a_trace_in_an_existing_directory_leaves_that_directory_alone(tmp_path: Path) -> None:
    os.chmod(tmp_path, 0o755)
    writer = TraceWriter(tmp_path / "t.jsonl")
    await writer.write(
        record_for_request(ModelRequest(system="s", messages=()), session_id="s", turn=1, model="m")
    )
    assert _mode(tmp_path) == 0o755


async def test_kept_trace_parts_write_the_same_lines_as_converting_every_message(tmp_path: Path) -> None:
    # The second request repeats the first's messages and adds one; the third rewrites the
    # history (as a compression does): each line must be what a fresh conversion writes.
    mark = '"messages":[],"settings":'  # where a kept line puts the messages, also in the text
    first = (Message(role="user", content="hello"), Message(role="assistant", content="hi"))
    second = (
        *first,
        Message(role="user", content=mark, api_content="again\n[recall]"),
    )
    third = (Message(role="user", content="summary", summary=True), second[-1])
    # the same history, its messages since given store ids (equal, not identical), then one more
    stored = (*(dataclasses.replace(m, store_id=i) for i, m in enumerate(second, 1)), first[0])
    tools = (ToolSpec(name="t", description=mark, parameters={"messages": [], "settings": {}}),)
    kept, fresh_writer, kept_writer = TraceParts(), TraceWriter(tmp_path / "a"), TraceWriter(tmp_path / "b")
    for messages in (first, second, third, second, stored, ()):
        request = ModelRequest(system="s", messages=messages, tools=tools)
        fresh = record_for_request(request, session_id="s1", turn=1, model="m", timestamp=1.0, error=mark)
        reused = record_for_request(
            request, session_id="s1", turn=1, model="m", timestamp=1.0, error=mark, kept=kept
        )
        assert kept.line(reused) == fresh.model_dump_json()
        await fresh_writer.write(fresh)
        await kept_writer.write(reused, kept)
    assert (tmp_path / "a").read_bytes() == (tmp_path / "b").read_bytes()
