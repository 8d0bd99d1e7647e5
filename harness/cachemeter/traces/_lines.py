"""JSON lines of a trace file: strict for traces keel is told to read, forgiving for other logs.

`strict_lines` raises on the first line that is not a JSON object (keel traces, chat JSONL: a
broken line there is a broken input). `log_lines` skips such a line and names it in the
notes (other harnesses' logs: a half-written last line or a foreign record must not cost the
report). Both name the file and the 1-based line number, and neither holds the file in memory.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

from harness.cachemeter._errors import MeterInputError
from harness.types import JsonObject

__all__ = ["log_lines", "strict_lines"]


def _open(path: Path) -> Iterator[tuple[int, bytes]]:
    try:
        fh = path.open("rb")
    except FileNotFoundError as exc:
        raise MeterInputError(f"trace file {str(path)!r} does not exist; check the path") from exc
    except OSError as exc:
        raise MeterInputError(f"trace file {str(path)!r} cannot be read: {exc}") from exc
    with fh:
        for lineno, raw in enumerate(fh, 1):
            if raw.strip():
                yield lineno, raw


def _parse(lineno: int, raw: bytes) -> JsonObject | str:
    """The line's object, or what is wrong with it."""
    try:
        obj = json.loads(raw.decode("utf-8-sig" if lineno == 1 else "utf-8"))
    except UnicodeDecodeError as exc:
        return f"not UTF-8 text ({exc.reason}); save the trace as UTF-8"
    except json.JSONDecodeError as exc:
        return f"not valid JSON ({exc.msg} at column {exc.colno})"
    if not isinstance(obj, dict):
        return f"expected a JSON object, got {type(obj).__name__}"
    return obj


def strict_lines(path: Path) -> Iterator[tuple[int, JsonObject]]:
    """(line number, object) for every non-blank line.

    Raises:
        MeterInputError: the file is missing or unreadable, or a line is not a JSON object.
    """
    for lineno, raw in _open(path):
        found = _parse(lineno, raw)
        if isinstance(found, str):
            raise MeterInputError(f"{path}:{lineno}: {found}; every line must hold one JSON request object")
        yield lineno, found


def log_lines(path: Path, notes: list[str]) -> Iterator[tuple[int, JsonObject]]:
    """(line number, object) for every line that is a JSON object; the others go to `notes`.

    Raises:
        MeterInputError: the file is missing or unreadable.
    """
    for lineno, raw in _open(path):
        found = _parse(lineno, raw)
        if isinstance(found, str):
            notes.append(f"{path}:{lineno}: skipped: {found}")
            continue
        yield lineno, found
