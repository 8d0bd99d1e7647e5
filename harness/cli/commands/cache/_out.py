"""Where the meter's verbs write: the JSON report (a file, or `-` for stdout) and the text."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import anyio.to_thread
from rich.console import Console

from harness.cachemeter import MeterError
from harness.cli._common import console
from harness.types import JsonObject
from memory import atomic_write

__all__ = ["text_console", "write_json"]


def _write(path: Path, text: str) -> None:
    atomic_write(path, text.encode("utf-8"))


async def write_json(where: str, data: JsonObject) -> None:
    """Write `data` as indented JSON to the file `where` (atomically), or to stdout for `-`.

    Raises:
        MeterError: the file cannot be written.
    """
    text = json.dumps(data, indent=2, ensure_ascii=False) + "\n"
    if where == "-":
        sys.stdout.write(text)
        sys.stdout.flush()
        return
    try:
        await anyio.to_thread.run_sync(_write, Path(where), text)
    except OSError as exc:
        raise MeterError(f"cannot write the JSON report to {where!r}: {exc}") from exc


def text_console() -> Console:
    """The terminal's console; piped output has no width to respect, so wide tables stay readable."""
    return console if console.is_terminal else Console(highlight=False, width=200)
