"""Slot 8: the session line — the date (never a clock time), platform and model.

A clock time would change the prefix on every rebuild and throw the cache away; the date
changes at most once a day.
"""

from __future__ import annotations

import datetime as dt

__all__ = ["session_line"]


def session_line(date: dt.date, *, platform: str | None = None, model: str | None = None) -> str:
    lines = [f"Conversation started: {date:%A}, {date:%B} {date.day}, {date.year}"]
    if platform:
        lines.append(f"Platform: {platform}")
    if model:
        lines.append(f"Model: {model}")
    return "\n".join(lines)
