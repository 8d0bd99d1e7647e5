"""Trace files: keel JSONL traces and chat JSONL, read line by line into `MeterRequest`s.

The format is detected per file from its first non-blank line: a keel trace record has
`session_id`, `purpose` and `system`; anything else with a `messages` list is a chat line
(`harness.cachemeter.traces._chat`).

A line that is not a request raises `MeterInputError` naming the file, the line number and
what is wrong; nothing is skipped silently.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Literal, TypeAlias

from pydantic import ValidationError

from harness.cachemeter._errors import MeterInputError
from harness.cachemeter._request import MeterRequest
from harness.cachemeter.traces._chat import request_from_chat
from harness.cachemeter.traces._keel import request_from_record
from harness.trace import TraceRecord
from harness.types import JsonObject

__all__ = ["TraceFormat", "detect_format", "read_requests"]

TraceFormat: TypeAlias = Literal["keel", "chat"]


def _is_keel(obj: JsonObject) -> bool:
    return "session_id" in obj and "purpose" in obj and "system" in obj and "turn" in obj


def _lines(path: Path) -> Iterator[tuple[int, JsonObject]]:
    try:
        fh = path.open("rb")
    except FileNotFoundError as exc:
        raise MeterInputError(f"trace file {str(path)!r} does not exist; check the path") from exc
    except OSError as exc:
        raise MeterInputError(f"trace file {str(path)!r} cannot be read: {exc}") from exc
    with fh:
        for lineno, raw in enumerate(fh, 1):
            if not raw.strip():
                continue
            where = f"{path}:{lineno}"
            try:
                obj = json.loads(raw.decode("utf-8-sig" if lineno == 1 else "utf-8"))
            except UnicodeDecodeError as exc:
                raise MeterInputError(
                    f"{where}: not UTF-8 text ({exc.reason}); save the trace as UTF-8"
                ) from exc
            except json.JSONDecodeError as exc:
                raise MeterInputError(
                    f"{where}: not valid JSON ({exc.msg} at column {exc.colno}); "
                    "every line must hold one JSON request object"
                ) from exc
            if not isinstance(obj, dict):
                raise MeterInputError(
                    f"{where}: expected a JSON object, got {type(obj).__name__}; "
                    "every line must hold one request object"
                )
            yield lineno, obj


def detect_format(path: Path) -> TraceFormat | None:
    """The format of a trace file from its first non-blank line (None for an empty file)."""
    for lineno, obj in _lines(path):
        if _is_keel(obj):
            return "keel"
        if "messages" in obj:
            return "chat"
        raise MeterInputError(
            f"{path}:{lineno}: neither a keel trace record nor a chat request "
            f"(keys {sorted(obj)[:6]!r}); chat lines need a 'messages' list"
        )
    return None


def read_requests(path: Path) -> Iterator[MeterRequest]:
    """Yield the requests of a trace file in order (a blocking generator).

    Raises:
        MeterInputError: the file is missing, or a line is not a request of the file's
            format; the message names the line.
    """
    fmt = detect_format(path)
    for lineno, obj in _lines(path):
        where = f"{path}:{lineno}"
        if fmt == "keel":
            try:
                record = TraceRecord.model_validate(obj)
            except ValidationError as exc:
                problems = "; ".join(
                    f"{'.'.join(str(p) for p in e['loc']) or '(line)'}: {e['msg']}" for e in exc.errors()[:3]
                )
                raise MeterInputError(f"{where}: not a keel trace record: {problems}") from exc
            yield request_from_record(record, line=lineno)
        else:
            try:
                yield request_from_chat(obj, line=lineno)
            except ValueError as exc:
                raise MeterInputError(f"{where}: not a chat request: {exc}") from exc
