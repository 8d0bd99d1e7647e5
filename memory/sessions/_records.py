"""Value types of the session store: what goes in, what comes back.

`memory` never imports `harness`, so these mirror the harness wire types instead of reusing
them: the turn loop converts a `harness.types.Message` into a `StoredMessage` when it
persists it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, TypeAlias

from pydantic import JsonValue

__all__ = [
    "AnchoredView",
    "EndReason",
    "FlushMode",
    "FlushRecord",
    "IndexFeatures",
    "MatchMode",
    "MessageRecord",
    "SearchHit",
    "SearchResult",
    "SearchRoute",
    "SessionRecord",
    "StoredMessage",
    "StoredRole",
    "StoredUsage",
    "storable_text",
    "utf8_safe",
]

StoredRole: TypeAlias = Literal["system", "user", "assistant", "tool"]

EndReason: TypeAlias = Literal[
    "compression",  # rotated into a child session that continues the same conversation
    "user_exit",  # the user quit
    "new_session",  # the user started afresh; the transcript is not carried over
    "branched",  # a branch was forked from it
    "error",  # the run stopped on an unrecoverable error
    "closed",  # the host shut down or cleaned up an abandoned session
]
"""Why a session ended. `compression` continuations share the parent's lineage."""

FlushMode: TypeAlias = Literal["memory_only", "cache_safe", "forced", "off"]
"""The `compression.flush` mode a flush record was made under."""

SearchRoute: TypeAlias = Literal["fts", "trigram", "like"]
"""Which index answered a query: the word index, the trigram index, or a LIKE scan."""

MatchMode: TypeAlias = Literal["all", "any"]
"""`all`: the query as written (implicit AND, OR/NOT, phrases); `any`: an OR of its terms."""


@dataclass(frozen=True, slots=True)
class IndexFeatures:
    """The full-text indexes a store searches with: the word index, the trigram index."""

    fts: bool
    trigram: bool


def utf8_safe(text: str) -> str:
    """`text` with lone surrogates (which UTF-8 cannot hold) replaced by U+FFFD."""
    if text.isascii():  # a flag on the string: no copy, and nearly every text is ASCII
        return text
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return "".join("\ufffd" if 0xD800 <= ord(ch) <= 0xDFFF else ch for ch in text)
    return text


def storable_text(text: str) -> str:
    """`text` as every session store keeps it: NUL characters (which PostgreSQL text cannot
    hold) and lone surrogates (which UTF-8 cannot) become U+FFFD.

    Both backends store this form, and the turn loop keeps this form in its transcript, so the
    stored row, the live transcript and a resumed session all hold the same text.
    """
    text = utf8_safe(text)
    return text.replace("\x00", "\ufffd") if "\x00" in text else text


@dataclass(frozen=True, slots=True, kw_only=True)
class StoredUsage:
    """One model reply's usage, added to its session's counters (`harness.types.Usage` fields).

    `api_calls` is how many model calls it covers (one per reply).
    """

    input: int = 0
    output: int = 0
    cache_read: int = 0
    cache_write: int = 0
    reasoning: int = 0
    api_calls: int = 1

    def as_dict(self) -> dict[str, int]:
        return {
            "input": self.input,
            "output": self.output,
            "cache_read": self.cache_read,
            "cache_write": self.cache_write,
            "reasoning": self.reasoning,
            "api_calls": self.api_calls,
        }


@dataclass(frozen=True, slots=True, kw_only=True)
class StoredMessage:
    """One transcript message as persisted.

    Attributes:
        role: who spoke.
        content: the canonical text; this is what search indexes.
        api_content: the exact text sent to the model when it differs from `content`
            (a user message with fenced recall attached). Stored, never indexed, so
            recalled text does not echo back into search results.
        tool_calls: the assistant's tool calls as JSON text, exactly as sent.
        tool_call_id: on `tool` messages, the call this result answers.
        tool_name: on `tool` messages, the tool's name.
        timestamp: Unix seconds.
        token_count: the message's token count, when the caller measured it.
        summary: True on the reference-only summary message compression inserts.
    """

    role: StoredRole
    content: str
    timestamp: float
    api_content: str | None = None
    tool_calls: str | None = None
    tool_call_id: str | None = None
    tool_name: str | None = None
    token_count: int | None = None
    summary: bool = False


@dataclass(frozen=True, slots=True)
class MessageRecord:
    """A stored message with its database identity.

    Attributes:
        id: the row id; unique across the whole database and increasing with time.
        session_id: the session the message belongs to.
        seq: the message's 0-based position inside its session.
        message: the message itself.
    """

    id: int
    session_id: str
    seq: int
    message: StoredMessage


@dataclass(frozen=True, slots=True)
class SessionRecord:
    """One row of the `sessions` table.

    Token counters follow `harness.types.Usage`: `input_tokens` counts uncached prompt
    tokens only; cache reads and writes are separate. `user_id` is the principal the
    session ran for (`""`: the default single user).
    """

    id: str
    source: str
    user_id: str
    model: str | None
    parent_session_id: str | None
    started_at: float
    ended_at: float | None
    end_reason: EndReason | None
    title: str | None
    message_count: int
    last_active_at: float
    input_tokens: int
    output_tokens: int
    cache_read_tokens: int
    cache_write_tokens: int
    reasoning_tokens: int
    api_call_count: int
    memory_snapshot: str | None = None
    """The curated memory's `snapshot_pin()` the session's prompt was built from."""


@dataclass(frozen=True, slots=True)
class FlushRecord:
    """A memory flush made before a compression, logged after its transcript was removed.

    Attributes:
        saved: the memory writes that landed (JSON, as the caller described them).
        refused: the writes that were refused, with their reasons.
        reply: the text of the model's flush reply.
    """

    id: int
    session_id: str
    timestamp: float
    mode: FlushMode
    saved: JsonValue
    refused: JsonValue
    reply: str


@dataclass(frozen=True, slots=True)
class SearchHit:
    """One message that matched a full-text query.

    Attributes:
        score: higher is better. BM25 (sign-flipped) on the FTS routes; the number of
            matched terms on the LIKE route. Comparable only within one query.
        route: which index answered.
        terms: the query's terms this message holds (see `SearchResult.terms`).
    """

    message_id: int
    session_id: str
    seq: int
    role: StoredRole
    timestamp: float
    score: float
    route: SearchRoute
    terms: frozenset[str] = frozenset()


@dataclass(frozen=True, slots=True)
class SearchResult:
    """The answer to one full-text query.

    Attributes:
        route: which index answered.
        terms: the query's meaningful terms, lower-cased, in query order.
        weights: each term's weight (BM25's IDF on the word index: rarer weighs more;
            1.0 on the substring routes).
        hits: matching messages, best first.
    """

    route: SearchRoute
    terms: tuple[str, ...]
    weights: dict[str, float]
    hits: tuple[SearchHit, ...]


@dataclass(frozen=True, slots=True)
class AnchoredView:
    """A message with its neighbours and the session's opening and closing messages.

    Attributes:
        session: the session the anchor belongs to.
        anchor: the message the view is centred on.
        before: up to `window` visible messages right before the anchor, oldest first.
        after: up to `window` visible messages right after it.
        bookend_start: up to `bookend` visible, non-empty, non-summary messages that open
            the session, outside the window.
        bookend_end: the same at the session's end.
        messages_before: how many messages of the session precede the window.
        messages_after: how many follow it.
    """

    session: SessionRecord
    anchor: MessageRecord
    before: tuple[MessageRecord, ...]
    after: tuple[MessageRecord, ...]
    bookend_start: tuple[MessageRecord, ...]
    bookend_end: tuple[MessageRecord, ...]
    messages_before: int
    messages_after: int
