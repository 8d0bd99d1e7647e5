"""Server-sent events in, `ModelEvent`s out: the part both streaming clients share.

`SSEDecoder` is a pure line decoder. `SSEReplyStream` reads an httpx response's lines under
the call's `Deadline`, feeds decoded events to a provider-specific `StreamAccumulator`, and
yields its text deltas and finally one `ReplyDone`. There is no producer task: each
`__anext__` reads just enough of the body, so nothing outlives the `async with` that opened
the response and no cancel scope spans the consumer's code.
"""

from __future__ import annotations

import dataclasses
import json
from collections import deque
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from typing import Protocol

from harness.errors import ModelResponseError
from harness.models._http import Deadline, snippet
from harness.models.base import ModelEvent, ModelTextDelta, PromptProgress, ReplyDone
from harness.types import Message, ModelReply, ToolCall

__all__ = [
    "MAX_EVENT_CHARS",
    "MAX_LINE_CHARS",
    "MAX_REPLY_CHARS",
    "PROGRESS_COMMENT",
    "ReplyBudget",
    "SSEDecoder",
    "SSEEvent",
    "SSEReplyStream",
    "StaticEvents",
    "StreamAccumulator",
    "cap_reply",
    "progress_event",
    "split_text",
    "sse_lines",
]

MAX_REPLY_CHARS = 1_000_000
"""The most characters of one reply (text plus tool-call arguments) that are kept.

Far above any model's output limit (~250k tokens); a reply that grows past it is a server
or model stuck in a loop. It is cut there and finishes as if `max_tokens` had been hit,
so nothing unbounded reaches the transcript, the trace or state.db.
"""
MAX_EVENT_CHARS = 8_000_000
"""The most characters one server-sent event may carry before the stream is refused."""

MAX_LINE_CHARS = MAX_EVENT_CHARS
"""The longest line of a stream that is read; a longer one is refused, never buffered whole."""
PROGRESS_COMMENT = ": keel-progress "
"""How keel's embedded server reports prefill progress: an SSE comment (which every other
client ignores) followed by `{"done": N, "total": M}` in prompt tokens."""

_FIELDS = frozenset({"data", "event", "id", "retry"})


async def sse_lines(
    chunks: AsyncIterator[str], *, what: str, limit: int = MAX_LINE_CHARS
) -> AsyncIterator[str]:
    """The lines of a text stream (ended by CRLF, LF or CR, as SSE allows), without their endings.

    Unlike `httpx.Response.aiter_lines`, a line that runs on past `limit` characters without
    ending is refused (`ModelResponseError`) instead of being buffered until memory runs out.
    """
    buf = ""
    async for chunk in chunks:
        buf += chunk
        start = 0
        while True:
            cr, lf = buf.find("\r", start), buf.find("\n", start)
            end = min(i for i in (cr, lf) if i >= 0) if cr >= 0 or lf >= 0 else -1
            if end < 0 or (end == cr and cr == len(buf) - 1):
                break  # no line end yet, or a CR that may be the first half of a CRLF
            yield buf[start:end]
            start = end + (2 if buf.startswith("\r\n", end) else 1)
        buf = buf[start:]
        if len(buf) > limit:
            raise ModelResponseError(
                f"{what} sent a stream line longer than {limit:,} characters without ending; the stream "
                "was refused (check model.base_url points at a chat-completions server)"
            )
    if buf.endswith("\r"):
        buf = buf[:-1]
    if buf:
        yield buf


def progress_event(line: str) -> PromptProgress | None:
    """The prefill progress a keel comment line carries (None for any other line)."""
    if not line.startswith(PROGRESS_COMMENT):
        return None
    try:
        data = json.loads(line[len(PROGRESS_COMMENT) :])
    except ValueError:
        return None
    done, total = (data.get("done"), data.get("total")) if isinstance(data, dict) else (None, None)
    if isinstance(done, int) and isinstance(total, int):
        return PromptProgress(done, total)
    return None


@dataclass(frozen=True, slots=True)
class SSEEvent:
    """One dispatched server-sent event."""

    event: str
    data: str


class ReplyBudget:
    """Counts the characters of one reply against `MAX_REPLY_CHARS` (or `limit`)."""

    def __init__(self, limit: int = MAX_REPLY_CHARS) -> None:
        self.limit = limit
        self.used = 0
        self.exhausted = False

    def take(self, text: str) -> str:
        """The part of `text` that still fits; marks the budget exhausted when cut."""
        room = self.limit - self.used
        if len(text) > room:
            text = text[: max(room, 0)]
            self.exhausted = True
        self.used += len(text)
        return text


def cap_reply(reply: ModelReply, *, finish_reason: str, limit: int = MAX_REPLY_CHARS) -> ModelReply:
    """`reply` with its text and tool-call arguments cut to `limit` characters in total.

    A cut reply gets `finish_reason` (`"length"` / `"max_tokens"`): it ended early, exactly
    as if the output limit had been reached. An uncut reply is returned unchanged.
    """
    budget = ReplyBudget(limit)
    text = budget.take(reply.message.content)
    calls = tuple(
        ToolCall(id=c.id, name=c.name, arguments=budget.take(c.arguments)) for c in reply.message.tool_calls
    )
    if not budget.exhausted:
        return reply
    message = Message(role="assistant", content=text, tool_calls=calls)
    return dataclasses.replace(reply, message=message, finish_reason=finish_reason)


class SSEDecoder:
    """Decodes SSE lines (without their line endings) into events.

    Lines that are neither SSE fields nor comments are ignored as the SSE spec says, but
    the first one is kept in `stray` so a garbage body can be reported as such.
    """

    def __init__(self) -> None:
        self._event = ""
        self._data: list[str] = []
        self._size = 0
        self.stray: str | None = None

    def feed(self, line: str) -> SSEEvent | None:
        """Take one line; return the event it completes, if any."""
        if not line:
            return self._dispatch()
        if line.startswith(":"):
            return None
        name, sep, value = line.partition(":")
        if value.startswith(" "):
            value = value[1:]
        if name == "data":
            self._size += len(value) + 1
            if self._size > MAX_EVENT_CHARS:
                raise ModelResponseError(
                    f"a server-sent event grew past {MAX_EVENT_CHARS:,} characters without ending; "
                    "the stream was refused (check model.base_url points at a chat-completions server)"
                )
            self._data.append(value)
        elif name == "event":
            self._event = value
        elif (name not in _FIELDS or not sep) and self.stray is None:
            self.stray = line
        return None

    def close(self) -> SSEEvent | None:
        """End of input: a final event without its blank line is still dispatched."""
        return self._dispatch()

    def _dispatch(self) -> SSEEvent | None:
        if not self._data:
            self._event, self._size = "", 0
            return None
        event = SSEEvent(event=self._event or "message", data="\n".join(self._data))
        self._event, self._data, self._size = "", [], 0
        return event


class StreamAccumulator(Protocol):
    """Builds one reply from a provider's stream events."""

    @property
    def finished(self) -> bool:
        """A terminal event arrived; nothing more needs reading."""
        ...

    @property
    def complete(self) -> bool:
        """Enough arrived to build the whole reply."""
        ...

    def feed(self, event: SSEEvent) -> list[str]:
        """Take one event; return the text deltas it carried. Raises `ModelError`s."""
        ...

    def progress(self) -> str:
        """What has arrived so far, for a truncation error."""
        ...

    def reply(self) -> ModelReply:
        """The assembled reply (only when `complete`)."""
        ...


class SSEReplyStream:
    """Iterates a streamed reply as `ModelTextDelta`s then one `ReplyDone`.

    Every line read touches the deadline (a silence deadline then starts again), and keel's
    prefill-progress comments become `PromptProgress` events.

    Args:
        lines: The response's lines (`sse_lines(response.aiter_text(), ...)`).
        accumulator: The provider's stream parser.
        deadline: The call's deadline; every read runs inside its scope.
    """

    def __init__(self, lines: AsyncIterator[str], accumulator: StreamAccumulator, deadline: Deadline) -> None:
        self._lines = lines
        self._acc = accumulator
        self._deadline = deadline
        self._decoder = SSEDecoder()
        self._pending: deque[ModelEvent] = deque()
        self._eof = False
        self._done = False

    def __aiter__(self) -> SSEReplyStream:
        return self

    async def __anext__(self) -> ModelEvent:
        while not self._pending:
            if self._done:
                raise StopAsyncIteration
            if self._acc.finished or self._eof:
                self._done = True
                self._pending.append(ReplyDone(self._finish()))
                break
            await self._read_some()
        return self._pending.popleft()

    async def _read_some(self) -> None:
        with self._deadline.scope():
            try:
                line = await self._lines.__anext__()
            except StopAsyncIteration:
                self._eof = True
                event = self._decoder.close()
            else:
                self._deadline.touch()
                event = self._decoder.feed(line)
                progress = progress_event(line)
                if progress is not None:
                    self._pending.append(progress)
        if event is not None:
            self._pending.extend(ModelTextDelta(text) for text in self._acc.feed(event) if text)

    def _finish(self) -> ModelReply:
        if not self._acc.complete:
            stray = self._decoder.stray
            hint = (
                f"; the body held lines that are not server-sent events, starting with {snippet(stray)!r}"
                if stray is not None
                else ""
            )
            raise ModelResponseError(
                f"{self._deadline.what}: the stream ended before the reply was complete "
                f"({self._acc.progress()}){hint}"
            )
        return self._acc.reply()


def split_text(text: str, pieces: int) -> list[str]:
    """Split `text` into at most `pieces` non-empty chunks at word boundaries (joined == text)."""
    if not text:
        return []
    if pieces <= 1:
        return [text]
    size = max(len(text) // pieces, 1)
    chunks: list[str] = []
    start = 0
    while start < len(text) and len(chunks) < pieces - 1:
        end = text.find(" ", start + size)
        if end == -1:
            break
        chunks.append(text[start:end])
        start = end
    chunks.append(text[start:])
    return chunks


class StaticEvents:
    """Iterates a reply that is already complete: its text in chunks, then `ReplyDone`.

    Args:
        reply: The reply to replay.
        chunks: Text chunks to yield first (joined, they should equal the reply text).
        error: Raised on the first `__anext__` instead, when set.
    """

    def __init__(
        self, reply: ModelReply | None, chunks: Sequence[str] = (), *, error: Exception | None = None
    ):
        self._events: deque[ModelEvent] = deque(ModelTextDelta(c) for c in chunks if c)
        if reply is not None:
            self._events.append(ReplyDone(reply))
        self._error = error

    def __aiter__(self) -> StaticEvents:
        return self

    async def __anext__(self) -> ModelEvent:
        if self._error is not None:
            error, self._error = self._error, None
            self._events.clear()
            raise error
        if not self._events:
            raise StopAsyncIteration
        return self._events.popleft()
