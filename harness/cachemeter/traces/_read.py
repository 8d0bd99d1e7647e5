"""Trace files, read line by line into `MeterRequest`s.

The format is detected per file from its first non-blank line: a keel trace record has
`session_id`, `purpose` and `system`; anything else with a `messages` list is a chat line
(`_chat`); a `user`/`assistant`/`summary` line with Claude Code's envelope is a Claude Code
transcript (`_claude`); a `{"timestamp", "type", "payload"}` line a Codex rollout (`_codex`).

In a keel trace or chat JSONL a line that is not a request raises `MeterInputError` naming
the file, the line number and what is wrong. Other harnesses' logs are read forgivingly: such
a line is skipped and named in the notes. Nothing is skipped silently.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Literal, TypeAlias

from pydantic import ValidationError

from harness.cachemeter._errors import MeterInputError
from harness.cachemeter._request import MeterRequest
from harness.cachemeter.traces._chat import request_from_chat
from harness.cachemeter.traces._claude import is_claude_code, read_claude_code
from harness.cachemeter.traces._codex import is_codex, read_codex
from harness.cachemeter.traces._keel import request_from_record
from harness.cachemeter.traces._lines import strict_lines
from harness.errors import validation_problems
from harness.trace import TraceRecord
from harness.types import JsonObject

__all__ = ["TraceFormat", "detect_format", "read_requests"]

TraceFormat: TypeAlias = Literal["keel", "chat", "claude-code", "codex"]


def _is_keel(obj: JsonObject) -> bool:
    return "session_id" in obj and "purpose" in obj and "system" in obj and "turn" in obj


def detect_format(path: Path) -> TraceFormat | None:
    """The format of a trace file from its first non-blank line (None for an empty file)."""
    for lineno, obj in strict_lines(path):
        if _is_keel(obj):
            return "keel"
        if "messages" in obj:
            return "chat"
        if is_claude_code(obj):
            return "claude-code"
        if is_codex(obj):
            return "codex"
        raise MeterInputError(
            f"{path}:{lineno}: neither a keel trace record nor a chat request, a Claude Code "
            f"transcript or a Codex rollout (keys {sorted(obj)[:6]!r}); chat lines need a 'messages' list"
        )
    return None


def read_requests(path: Path, *, notes: list[str] | None = None) -> Iterator[MeterRequest]:
    """Yield the requests of a trace file in order (a blocking generator).

    Other harnesses' logs (Claude Code, Codex) are read forgivingly: a line that is not a
    request is skipped and named in `notes`, as is what the format does not carry (pass a
    list to receive them; the CLI always does).

    Raises:
        MeterInputError: the file is missing, or a line of a keel trace or chat JSONL is not
            a request of the file's format; the message names the line.
    """
    fmt = detect_format(path)
    if fmt == "claude-code":
        yield from read_claude_code(path, [] if notes is None else notes)
        return
    if fmt == "codex":
        yield from read_codex(path, [] if notes is None else notes)
        return
    for lineno, obj in strict_lines(path):
        where = f"{path}:{lineno}"
        if fmt == "keel":
            try:
                record = TraceRecord.model_validate(obj)
            except ValidationError as exc:
                problems = validation_problems(exc, whole="(line)", most=3)
                raise MeterInputError(f"{where}: not a keel trace record: {problems}") from exc
            yield request_from_record(record, line=lineno)
        else:
            try:
                yield request_from_chat(obj, line=lineno)
            except ValueError as exc:
                raise MeterInputError(f"{where}: not a chat request: {exc}") from exc
