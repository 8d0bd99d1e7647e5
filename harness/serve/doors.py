"""What the OpenAI-compatible doors share: the session a request names, the new user text,
a run followed to its end, and usage in OpenAI's shapes."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from dataclasses import dataclass

from harness.serve.http import ApiError, ErrorCode
from harness.serve.state import ServeState
from memory import Principal
from memory.runs import RunEvent, RunRecord

__all__ = ["SESSION_HEADER", "Finished", "failed", "finish", "last_user_text", "start_turn", "usage_numbers"]

SESSION_HEADER = "X-Keel-Session"


def text_of(content: object) -> str | None:
    """The text of a message's `content`: a string, or the text parts of a list of parts."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [
            p.get("text") for p in content if isinstance(p, dict) and p.get("type") in ("text", "input_text")
        ]
        texts = [t for t in parts if isinstance(t, str)]
        return "".join(texts) if texts else None
    return None


def last_user_text(messages: object, field: str) -> str:
    """The last user message's text: keel holds the history, so only it is the new turn.

    Raises:
        ApiError: 400 naming `field` when there is no user message with text.
    """
    if isinstance(messages, str) and messages:
        return messages
    if isinstance(messages, list):
        for item in reversed(messages):
            if isinstance(item, dict) and item.get("role") == "user":
                text = text_of(item.get("content"))
                if text:
                    return text
    raise ApiError(
        400, "invalid_request", f"{field!r} holds no user message with text; send at least one", field=field
    )


@dataclass(frozen=True, slots=True)
class Finished:
    """A run followed to its end: its text, its usage (keel's counts), or its error."""

    text: str
    usage: dict[str, int]
    error: dict[str, str] | None


async def finish(events: AsyncIterator[RunEvent]) -> Finished:
    """Read a run's events to its last."""
    chunks: list[str] = []
    async for ev in events:
        data = json.loads(ev.data)
        if ev.type == "text.delta":
            chunks.append(str(data["text"]))
        elif ev.type == "run.completed":
            return Finished(str(data.get("output") or "".join(chunks)), dict(data.get("usage") or {}), None)
        elif ev.type == "run.failed":
            return Finished("".join(chunks), {}, dict(data.get("error") or {}))
    return Finished("".join(chunks), {}, {"code": "run_failed", "message": "the run's events ended early"})


def usage_numbers(usage: dict[str, int]) -> tuple[int, int, int]:
    """`(prompt tokens with cached ones, cached tokens, output tokens)` from keel's counts."""
    cached = int(usage.get("cache_read_tokens", 0))
    prompt = int(usage.get("input_tokens", 0)) + cached + int(usage.get("cache_write_tokens", 0))
    return prompt, cached, int(usage.get("output_tokens", 0))


def failed(error: dict[str, str] | None, session: str) -> ApiError:
    """The HTTP error for a run that failed (502 when the model failed)."""
    code = (error or {}).get("code", "run_failed")
    message = (error or {}).get("message", "the run failed")
    api_code: ErrorCode = "model_error" if code == "model_error" else "run_failed"
    return ApiError(502, api_code, f"{message} (session {session!r} is intact; send the turn again)")


async def start_turn(
    state: ServeState, principal: Principal, named: str | None, text: str, model: object
) -> tuple[str, RunRecord, str]:
    """Admit `text` as a turn of the session `named` (404 if not the principal's; a new session
    when None); `(lineage root, run, model name to answer with)`.

    Raises:
        ApiError: 404, or 409 (carrying the `X-Keel-Session` header).
    """
    worker = state.worker
    root = await worker.conversation(principal, named) if named else await worker.new_session(principal)
    try:
        run = await worker.submit(principal, root, text)
    except ApiError as exc:
        exc.headers[SESSION_HEADER] = root
        raise
    return root, run, str(model or worker.parts.model.model_name)
