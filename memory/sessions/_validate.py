"""Argument checks every session-store backend makes before it writes anything.

Invalid arguments raise `ValueError` (a programming error in the caller, not a store
failure); text that UTF-8 cannot hold is repaired rather than refused, so a message is
never lost for one bad character.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import replace
from typing import get_args

from memory.sessions._records import (
    EndReason,
    FlushMode,
    StoredMessage,
    StoredRole,
    StoredUsage,
    storable_text,
)

__all__ = [
    "check_end_reason",
    "check_flush_mode",
    "check_id",
    "check_time",
    "check_usage",
    "check_usage_counts",
    "check_user_id",
    "check_user_ids",
    "checked_message",
]

_ROLES = frozenset(get_args(StoredRole))
_END_REASONS = frozenset(get_args(EndReason))
_FLUSH_MODES = frozenset(get_args(FlushMode))
_MAX_ID_CHARS = 256


def check_id(value: str, what: str) -> None:
    """Session ids and sources: non-empty strings of at most 256 characters."""
    if not isinstance(value, str) or not value or len(value) > _MAX_ID_CHARS:
        raise ValueError(f"{what} must be a non-empty string of at most 256 characters, not {value!r}")


def check_user_id(value: str) -> None:
    """A user id is any string of at most 256 characters; `""` is the default user."""
    if not isinstance(value, str) or len(value) > _MAX_ID_CHARS:
        raise ValueError(f"user_id must be a string of at most 256 characters, not {value!r}")


def check_user_ids(values: Sequence[str] | None) -> tuple[str, ...] | None:
    """A user filter as a tuple (None stays None: no filter); a bare string is refused."""
    if values is None:
        return None
    if isinstance(values, str):
        raise ValueError(f"user_ids must be a sequence of user ids, not the string {values!r}")
    out = tuple(values)
    for value in out:
        check_user_id(value)
    return out


def check_time(value: float, what: str) -> None:
    if not math.isfinite(value):
        raise ValueError(f"{what} must be a finite Unix time in seconds, not {value!r}")


def check_end_reason(reason: EndReason) -> None:
    if reason not in _END_REASONS:
        raise ValueError(f"end reason {reason!r} is unknown; use one of {sorted(_END_REASONS)}")


def check_flush_mode(mode: FlushMode) -> None:
    if mode not in _FLUSH_MODES:
        raise ValueError(f"flush mode {mode!r} is unknown; use one of {sorted(_FLUSH_MODES)}")


def check_usage(values: dict[str, int]) -> None:
    for name, value in values.items():
        if not isinstance(value, int) or value < 0:
            raise ValueError(f"usage {name} must be a non-negative int, not {value!r}")


def check_usage_counts(usage: StoredUsage | None) -> None:
    if usage is not None:
        check_usage(usage.as_dict())


def checked_message(message: StoredMessage) -> StoredMessage:
    """The message with a known role and a finite time, its text made storable as UTF-8."""
    if message.role not in _ROLES:
        raise ValueError(f"message role {message.role!r} is unknown; use one of {sorted(_ROLES)}")
    check_time(message.timestamp, "message timestamp")

    # A lone surrogate (from a broken decode upstream) cannot be stored as UTF-8, and
    # refusing the message would lose the rest of it.
    def fix(value: str | None) -> str | None:
        return None if value is None else storable_text(value)

    texts = (
        message.content,
        message.api_content,
        message.tool_calls,
        message.tool_call_id,
        message.tool_name,
    )
    if all(t is None or storable_text(t) is t for t in texts):
        return message  # nearly always: nothing to repair, nothing to copy
    return replace(
        message,
        content=storable_text(message.content),
        api_content=fix(message.api_content),
        tool_calls=fix(message.tool_calls),
        tool_call_id=fix(message.tool_call_id),
        tool_name=fix(message.tool_name),
    )
