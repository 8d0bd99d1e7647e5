"""Helpers for the trace-reader tests."""

from __future__ import annotations

import json
from pathlib import Path


def write_lines(path: Path, *objs: object) -> Path:
    """Write each object as one JSON line; return the path."""
    path.write_text("".join(json.dumps(o) + "\n" for o in objs), encoding="utf-8")
    return path
