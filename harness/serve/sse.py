"""Server-Sent Events: the run stream's framing and where a client resumes it."""

from __future__ import annotations

from collections.abc import AsyncIterator

from starlette.requests import Request
from starlette.responses import StreamingResponse

from harness.serve.http import ApiError
from memory.runs import RunEvent

__all__ = ["frame", "resume_point", "sse_response"]

SSE_HEADERS = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}


def frame(event: str, data: str, *, id: int | None = None) -> bytes:
    """One SSE message (`data` is one line of JSON)."""
    head = "" if id is None else f"id: {id}\n"
    return f"{head}event: {event}\ndata: {data}\n\n".encode()


def resume_point(request: Request) -> int:
    """The last event the client has: `Last-Event-ID`, else `?after=N`, else 0.

    Raises:
        ApiError: 400 when the value is not a non-negative integer.
    """
    for field, value in (
        ("Last-Event-ID", request.headers.get("last-event-id")),
        ("after", request.query_params.get("after")),
    ):
        if value is None or value == "":
            continue
        if not value.strip().isdigit():
            raise ApiError(
                400,
                "invalid_request",
                f"{field} {value!r} is not an event id; send the `id:` of an event",
                field=field,
            )
        return int(value)
    return 0


def sse_response(events: AsyncIterator[RunEvent]) -> StreamingResponse:
    """Stream `events`; each is read from the store only when the previous one was sent
    (a slow client slows its own reads, nothing piles up)."""

    async def body() -> AsyncIterator[bytes]:
        async for ev in events:
            yield frame(ev.type, ev.data, id=ev.seq)

    return StreamingResponse(body(), media_type="text/event-stream", headers=SSE_HEADERS)
