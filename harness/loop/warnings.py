"""Where a session's warnings go: the running turn's events, else held for the next turn.

The sink exists before everything else a session is built from, so the model client (retries),
the transcript (a refused write) and the model calls (refused usage counters) all warn into it
directly, even while the session is still being opened.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from anyio.streams.memory import MemoryObjectSendStream

from harness.events import Event, Warning

__all__ = ["WarningSink"]


class WarningSink:
    """Warnings for the user; call it with the text."""

    def __init__(self) -> None:
        self._stream: MemoryObjectSendStream[Event] | None = None
        self._pending: list[str] = []

    def __call__(self, text: str) -> None:
        if self._stream is not None:
            self._stream.send_nowait(Warning(text))
        else:
            self._pending.append(text)

    @contextmanager
    def streaming(self, send: MemoryObjectSendStream[Event]) -> Iterator[None]:
        """Within this block warnings go straight into `send` (a running turn's events)."""
        self._stream = send
        try:
            yield
        finally:
            self._stream = None

    def take_pending(self) -> list[str]:
        """The warnings raised between turns, oldest first; they are handed out once."""
        pending, self._pending = self._pending, []
        return pending
