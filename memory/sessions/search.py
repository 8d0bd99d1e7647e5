"""The `session_search` tool: find, read and scroll past sessions in the session store.

The mode follows from the arguments:

- **discover** (`query`): full-text search, grouped by lineage (a compressed conversation
  and its continuations count once), the current lineage skipped except for ancestors that
  ended by compression (their turns left the context); each result is a window
  of ±5 messages around the best match plus the session's first and last 3 messages;
- **read** (`session_id`): the whole session if it has at most 30 messages, else the
  first 20 and the last 10 with a hint to scroll;
- **scroll** (`session_id` + `around_message_id`): ±`window` messages around one message;
- **message** (`message_id`, optionally `offset`): one message's whole text, a page of
  `page_chars` at a time from `offset` — how the agent reads a tool output that the
  transcript holds capped (the capped text names the message id and the offset to read on
  from). Unlike read and scroll this works inside the current session too: the cut part is
  not in the context;
- **browse** (no arguments): the most recently active sessions with a preview.

With `summarize=True` (the classic pipeline) each discover window is summarized by an
injected async summarizer, a few at a time; a failed summary falls back to the raw window.

Replies are compact JSON strings. Bad arguments and hostile queries come back as
`{"success": false, "error": ...}` — the handler never raises for them.

Scope: given `user_ids`, the tool sees only those users' sessions. Discover and browse
filter inside the store's queries (another user's rows can neither appear nor crowd the
caller's out); read and scroll answer a session or message id of another user exactly as
they answer one that does not exist, so ids cannot be probed.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, tzinfo
from typing import TYPE_CHECKING, TypeAlias

import anyio
from pydantic import BaseModel, ConfigDict, Field, JsonValue, ValidationError, field_validator

from memory.errors import SessionStoreError
from memory.sessions._ranking import RankedSession, SearchStrategy, rank_sessions
from memory.sessions._records import AnchoredView, utf8_safe
from memory.sessions._render import (
    WINDOW_CHARS,
    make_snippet,
    message_json,
    session_meta,
    transcript,
    view_json,
)
from memory.sessions._scoped import UserScopedReader
from memory.sessions.contract import SessionReader

if TYPE_CHECKING:  # the index (and numpy) loads only when dense search is configured
    from memory.sessions.dense import DenseIndex

__all__ = [
    "SESSION_SEARCH_TOOL_NAME",
    "DiscoverResult",
    "SessionSearchArgs",
    "SessionSearchTool",
    "Summarizer",
    "session_search_schema",
]

Summarizer: TypeAlias = Callable[[str, str], Awaitable[str]]
"""`(topic, transcript) -> summary`: an auxiliary-model call the harness provides."""

SESSION_SEARCH_TOOL_NAME = "session_search"
_READ_ALL_MAX = 30
_READ_HEAD, _READ_TAIL = 20, 10
_BROWSE_DEFAULT = 10
_PREVIEW_CHARS = 80
_RAW_MARKER = "[Raw window — summarization failed]"
_PAGE_CHARS = 8_000


class SessionSearchArgs(BaseModel):
    """The tool's arguments as the model sends them (validated at this trust boundary).

    `limit` and `window` are clamped later rather than refused: a model asking for 50
    results gets 10. Text that cannot be encoded (lone surrogates) is repaired here.
    """

    model_config = ConfigDict(extra="forbid")

    query: str | None = None
    limit: int | None = None
    session_id: str | None = None
    around_message_id: int | None = Field(None, ge=1, le=2**63 - 1)
    window: int | None = None
    message_id: int | None = Field(None, ge=1, le=2**63 - 1)
    offset: int | None = Field(None, ge=0)

    @field_validator("query", "session_id")
    @classmethod
    def _encodable(cls, value: str | None) -> str | None:
        return None if value is None else utf8_safe(value)


def session_search_schema(description: str) -> dict[str, JsonValue]:
    """The tool as the model sees it: `{"name", "description", "parameters"}`.

    Args:
        description: the tool description (`prompts/text/tool_session_search.md`, which
            the harness loads: `memory` cannot import `prompts`).
    """
    return {
        "name": SESSION_SEARCH_TOOL_NAME,
        "description": description,
        "parameters": {
            "type": "object",
            "properties": {
                "query": {
                    "type": "string",
                    "description": "Words to look for in past sessions. Omit to browse recent sessions.",
                },
                "limit": {
                    "type": "integer",
                    "minimum": 1,
                    "maximum": 10,
                    "description": "How many sessions to return (default 3).",
                },
                "session_id": {
                    "type": "string",
                    "description": "Read this session (from an earlier result) instead of searching.",
                },
                "around_message_id": {
                    "type": "integer",
                    "description": "With session_id: show the messages around this message id.",
                },
                "window": {
                    "type": "integer",
                    "minimum": 1,
                    "maximum": 20,
                    "description": "With around_message_id: messages to show on each side (default 5).",
                },
                "message_id": {
                    "type": "integer",
                    "description": "Read this one message in full (a capped tool output names its id).",
                },
                "offset": {
                    "type": "integer",
                    "minimum": 0,
                    "description": "With message_id: the character to start reading at (default 0).",
                },
            },
            "additionalProperties": False,
        },
    }


class _ToolInputError(ValueError):
    """The arguments make sense as JSON but not as a request; the message tells the model why."""


@dataclass(frozen=True, slots=True)
class DiscoverResult:
    """One hydrated discover result (the CLI prints these; the tool renders them to JSON)."""

    ranked: RankedSession
    view: AnchoredView
    payload: dict[str, JsonValue]


def _reply(payload: dict[str, JsonValue]) -> str:
    return json.dumps(payload, ensure_ascii=False, separators=(",", ":"))


def _error(message: str) -> str:
    return _reply({"success": False, "error": message})


def _clamp(value: int | None, low: int, high: int, default: int) -> int:
    return default if value is None else max(low, min(high, value))


class SessionSearchTool:
    """The handler behind `session_search`.

    Args:
        db: the open session store (the tool only reads).
        current_session_id: returns the session the agent is in now (its lineage is
            skipped by discover, and it cannot be read: it is already in context).
        summarizer: `(topic, transcript) -> text`, needed when `summarize` is on.
        summarize: summarize each discover window (the classic pipeline).
        max_concurrency: summaries running at once.
        summary_timeout_s: a summary taking longer than this falls back to the raw window.
        default_limit: sessions returned when the model gives no `limit`.
        strategy: the retrieval strategy (`best` unless measuring the others).
        max_reply_chars: a discover reply larger than this drops bookends, then windows,
            from the lowest-ranked results first.
        tz: the time zone dates are shown in.
        user_ids: the users whose sessions this tool may see (the principal, plus any
            shared users); None sees every session (the operator's view).
        page_chars: the most characters (as JSON-escaped text) of one message the message
            mode returns per call; keep it under the transcript's cap on tool results.
        dense: the store's message embeddings; discover then fuses meaning with words
            for queries that `route_query` does not send to words alone (None: words only).
    """

    name = SESSION_SEARCH_TOOL_NAME

    def __init__(
        self,
        db: SessionReader,
        *,
        current_session_id: Callable[[], str | None],
        summarizer: Summarizer | None = None,
        summarize: bool = False,
        max_concurrency: int = 3,
        summary_timeout_s: float = 60.0,
        default_limit: int = 3,
        strategy: SearchStrategy = "best",
        max_reply_chars: int = 60_000,
        tz: tzinfo = UTC,
        user_ids: Sequence[str] | None = None,
        page_chars: int = _PAGE_CHARS,
        dense: DenseIndex | None = None,
    ) -> None:
        if summarize and summarizer is None:
            raise ValueError("summarize=True needs a summarizer (topic, transcript) -> text")
        self._db: SessionReader = db if user_ids is None else UserScopedReader(db, user_ids)
        self._current = current_session_id
        self._summarizer = summarizer
        self._summarize = summarize
        self._limiter = anyio.CapacityLimiter(max(1, max_concurrency))
        self._summary_timeout_s = summary_timeout_s
        self._default_limit = _clamp(default_limit, 1, 10, 3)
        self._strategy: SearchStrategy = strategy
        self._max_reply_chars = max_reply_chars
        self._tz = tz
        self._page_chars = max(100, page_chars)
        self._dense = dense
        self._user_ids = None if user_ids is None else tuple(user_ids)

    async def handle(self, arguments: object) -> str:
        """Run one tool call; `arguments` is the model's JSON text or an already-parsed object."""
        try:
            args = self._parse(arguments)
            if args.session_id is not None and args.query is not None:
                raise _ToolInputError("pass either query (to search) or session_id (to read), not both")
            if args.message_id is not None:
                payload = await self._message(args)
            elif args.offset is not None:
                raise _ToolInputError("offset goes with message_id; pass the message id to read")
            elif args.around_message_id is not None:
                payload = await self._scroll(args)
            elif args.session_id is not None:
                payload = await self._read(args.session_id)
            elif args.query is not None:
                payload = await self._discover(args.query, _clamp(args.limit, 1, 10, self._default_limit))
            else:
                payload = await self._browse(_clamp(args.limit, 1, 10, _BROWSE_DEFAULT))
        except _ToolInputError as exc:
            return _error(str(exc))
        except SessionStoreError as exc:
            return _error(f"the session store failed: {exc}")
        return _reply(payload)

    def _parse(self, arguments: object) -> SessionSearchArgs:
        raw = arguments
        if isinstance(raw, str | bytes):
            try:
                raw = json.loads(raw) if raw.strip() else {}
            except ValueError as exc:
                raise _ToolInputError(f"arguments are not valid JSON ({exc}); send an object") from exc
        if raw is None:
            raw = {}
        try:
            args = SessionSearchArgs.model_validate(raw)
        except ValidationError as exc:
            problems = "; ".join(
                f"{'.'.join(map(str, e['loc'])) or 'arguments'}: {e['msg']}" for e in exc.errors()
            )
            raise _ToolInputError(f"invalid arguments ({problems}); see the tool schema") from exc
        query = args.query.strip() if args.query is not None else None
        session_id = args.session_id.strip() if args.session_id is not None else None
        return args.model_copy(update={"query": query or None, "session_id": session_id or None})

    # ------------------------------------------------------------------ discover

    async def discover(self, query: str, *, limit: int | None = None) -> list[DiscoverResult]:
        """Search and hydrate: the typed form of the discover mode (used by the CLI)."""
        ranked = await rank_sessions(
            self._db,
            query,
            strategy=self._strategy,
            limit=_clamp(limit, 1, 10, self._default_limit),
            current=self._current(),
            dense=self._dense,
            user_ids=self._user_ids,
        )
        results: list[DiscoverResult] = []
        views = await self._db.anchored_views([item.anchor_id for item in ranked])
        for item, view in zip(ranked, views, strict=True):
            if view is None:
                continue  # deleted between the search and now
            payload = session_meta(view.session, self._tz)
            payload["lineage_root"] = item.root
            payload["match_message_id"] = item.anchor_id
            payload["matched_role"] = view.anchor.message.role
            payload["snippet"] = make_snippet(view.anchor.message.content, query)
            payload |= view_json(view, bookends=True)
            results.append(DiscoverResult(item, view, payload))
        return results

    async def _discover(self, query: str, limit: int) -> dict[str, JsonValue]:
        results = await self.discover(query, limit=limit)
        if self._summarize:
            await self._summarize_all(query, results)
        payloads = self._fit([r.payload for r in results])
        reply: dict[str, JsonValue] = {
            "success": True,
            "mode": "discover",
            "query": query,
            "count": len(payloads),
            "results": list[JsonValue](payloads),
        }
        if not payloads:
            reply["message"] = "No matching sessions found."
        return reply

    def _fit(self, payloads: list[dict[str, JsonValue]]) -> list[dict[str, JsonValue]]:
        # Degrade from the lowest-ranked result up: bookends go first, then whole windows
        # (the matched message stays, marked `detail: compact`).
        def fits() -> bool:
            return len(_reply({"results": list[JsonValue](payloads)})) <= self._max_reply_chars

        for payload in reversed(payloads):
            if fits():
                return payloads
            payload.pop("bookend_start", None)
            payload.pop("bookend_end", None)
        for payload in reversed(payloads):
            if fits():
                return payloads
            window = payload.get("messages")
            kept = (
                [m for m in window if isinstance(m, dict) and m.get("match") is True]
                if isinstance(window, list)
                else []
            )
            payload["messages"] = list[JsonValue](kept)
            payload["detail"] = "compact"
        return payloads

    async def _summarize_all(self, query: str, results: list[DiscoverResult]) -> None:
        async def one(result: DiscoverResult) -> None:
            assert self._summarizer is not None
            async with self._limiter:
                try:
                    with anyio.fail_after(self._summary_timeout_s):
                        summary = await self._summarizer(query, transcript(result.view))
                except Exception as exc:  # any summarizer failure: keep the raw window
                    result.payload["summary_error"] = f"{type(exc).__name__}: {exc}"[:300]
                    result.payload["note"] = _RAW_MARKER
                    return
            result.payload["summary"] = summary
            for key in ("messages", "bookend_start", "bookend_end"):
                result.payload.pop(key, None)

        async with anyio.create_task_group() as tg:
            for result in results:
                tg.start_soon(one, result)

    # ------------------------------------------------------------------ read / scroll / browse

    async def _readable(self, session_id: str) -> dict[str, JsonValue]:
        session = await self._db.get_session(session_id)
        if session is None:
            raise _ToolInputError(f"no session {session_id!r}; use an id from a search or browse result")
        if session_id == self._current():
            raise _ToolInputError("that is the current session; its messages are already in your context")
        return session_meta(session, self._tz)

    async def _read(self, session_id: str) -> dict[str, JsonValue]:
        meta = await self._readable(session_id)
        total = meta.get("message_count")
        count = total if isinstance(total, int) else 0
        payload: dict[str, JsonValue] = {"success": True, "mode": "read", "session": meta}
        if count <= _READ_ALL_MAX:
            records = await self._db.get_messages(session_id)
            payload["messages"] = [message_json(r, cap=WINDOW_CHARS) for r in records]
            return payload
        head = await self._db.get_messages(session_id, limit=_READ_HEAD)
        tail = await self._db.get_messages(session_id, limit=_READ_TAIL, from_end=True)
        payload["messages"] = [message_json(r, cap=WINDOW_CHARS) for r in head]
        payload["omitted"] = count - len(head) - len(tail)
        payload["messages_end"] = [message_json(r, cap=WINDOW_CHARS) for r in tail]
        payload["hint"] = (
            f"{payload['omitted']} messages in the middle are not shown; call again with "
            "session_id and around_message_id (an id near the part you need) to scroll"
        )
        return payload

    async def _scroll(self, args: SessionSearchArgs) -> dict[str, JsonValue]:
        assert args.around_message_id is not None
        anchor = await self._db.get_message(args.around_message_id)
        if anchor is None or (args.session_id is not None and anchor.session_id != args.session_id):
            raise _ToolInputError(
                f"message {args.around_message_id!r} is not in session {args.session_id!r}; "
                "use a message id from that session's results"
            )
        meta = await self._readable(anchor.session_id)
        window = _clamp(args.window, 1, 20, 5)
        view = await self._db.anchored_view(anchor.id, window=window, bookend=0)
        if view is None:
            raise _ToolInputError(f"message {args.around_message_id!r} no longer exists")
        payload: dict[str, JsonValue] = {"success": True, "mode": "scroll", "session": meta}
        payload["around_message_id"] = anchor.id
        payload |= view_json(view, bookends=False)
        return payload

    async def _message(self, args: SessionSearchArgs) -> dict[str, JsonValue]:
        assert args.message_id is not None
        if args.query is not None or args.around_message_id is not None:
            raise _ToolInputError("message_id reads one message; pass it without query or around_message_id")
        record = await self._db.get_message(args.message_id)
        if record is None or (args.session_id is not None and record.session_id != args.session_id):
            raise _ToolInputError(
                f"no message {args.message_id!r}; use a message id from a capped tool output or a result"
            )
        text = record.message.content
        start = min(args.offset or 0, len(text))
        end = min(start + self._page_chars, len(text))
        # The page is measured as sent: JSON escaping (newlines, quotes) must not push the
        # reply past the transcript's cap, or the page itself would come back cut.
        while end > start + 1 and len(json.dumps(text[start:end], ensure_ascii=False)) > self._page_chars:
            end = start + (end - start) * 4 // 5
        payload: dict[str, JsonValue] = {"success": True, "mode": "message", "message_id": record.id}
        payload["session_id"] = record.session_id
        payload["role"] = record.message.role
        if record.message.tool_name:
            payload["tool_name"] = record.message.tool_name
        payload["chars"] = len(text)
        payload["offset"] = start
        payload["content"] = text[start:end]
        if end < len(text):
            payload["next_offset"] = end
            payload["hint"] = f"{len(text) - end:,} characters follow; call again with offset={end}"
        return payload

    async def _browse(self, limit: int) -> dict[str, JsonValue]:
        current = self._current()
        skip_root = None if current is None else await self._db.lineage_root(current)
        entries: list[JsonValue] = []
        offset = 0
        page = limit + 10
        while len(entries) < limit:
            sessions = await self._db.list_sessions(page, offset, order="last_active")
            if not sessions:
                break
            offset += len(sessions)
            roots = await self._db.lineage_roots([s.id for s in sessions])
            for session in sessions:
                if session.id == current or (skip_root is not None and roots.get(session.id) == skip_root):
                    continue
                first = await self._db.get_messages(session.id, limit=1, roles=("user",))
                entry = session_meta(session, self._tz)
                entry["preview"] = (
                    " ".join(first[0].message.content.split())[:_PREVIEW_CHARS] if first else ""
                )
                entries.append(entry)
                if len(entries) == limit:
                    break
        payload: dict[str, JsonValue] = {"success": True, "mode": "browse", "count": len(entries)}
        payload["sessions"] = entries
        if not entries:
            payload["message"] = "No past sessions yet."
        return payload
