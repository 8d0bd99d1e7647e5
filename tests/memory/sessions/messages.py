"""`msg`: a stored message for the session-store tests, at a fixed time `T0` unless told."""

from __future__ import annotations

from memory import StoredMessage

__all__ = ["T0", "msg"]

T0 = 1_700_000_000.0


def msg(content: str, *, role: str = "user", at: float = T0, **extra: object) -> StoredMessage:
    return StoredMessage(role=role, content=content, timestamp=at, **extra)  # type: ignore[arg-type]  # tests pass literal roles
