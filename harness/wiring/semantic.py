"""The semantic memory provider as a session builds it: config in, model calls through the session.

The provider learns with the session's own model: `SessionCompleter` turns its
`complete(messages)` into a `ModelRequest` with purpose `extract`, sent through the
session's `ModelCalls` (so it is traced and its tokens are counted like every other call).
The prompts come from `prompts/text/semantic_*.md` (memory cannot import prompts).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence

from harness.config import KeelConfig
from harness.types import Message, ModelReply, ModelRequest
from memory import TurnMessage
from memory.providers import PgPlace
from memory.providers.semantic import MiniLmEmbedder, Reconciliation, SemanticProvider
from prompts import load_text

__all__ = ["SessionCompleter", "semantic_provider"]

Send = Callable[[ModelRequest], Awaitable[ModelReply]]


class SessionCompleter:
    """A `memory.providers.semantic.Completer` over the session's model.

    Args:
        send: sends one request through the session (traced, accounted).
        max_tokens: the reply budget of each call.
    """

    def __init__(self, send: Send, *, max_tokens: int) -> None:
        self._send = send
        self._max_tokens = max_tokens

    async def complete(self, messages: Sequence[TurnMessage]) -> str:
        request = ModelRequest(
            system="",
            messages=tuple(Message(m.role, m.content) for m in messages),
            purpose="extract",
            max_tokens=self._max_tokens,
            temperature=0.0,
        )
        reply = await self._send(request)
        return reply.message.content


def semantic_provider(config: KeelConfig, *, send: Send, pg: PgPlace | None = None) -> SemanticProvider:
    """The provider `memory.semantic` describes, learning through `send` when `learn` is on,
    its memories in `pg` when given (else the home's `semantic.db` files)."""
    c = config.memory.semantic
    return SemanticProvider(
        completer=SessionCompleter(send, max_tokens=c.learn_max_tokens) if c.learn else None,
        extract_prompt=load_text("semantic_extract"),
        reconcile_prompt=load_text("semantic_reconcile"),
        embedder=MiniLmEmbedder(threads=c.embedder_threads),
        db_path=c.db_path,
        prefetch_limit=c.prefetch_limit,
        min_similarity=c.min_similarity,
        reconciliation=Reconciliation(
            duplicate_similarity=c.duplicate_similarity,
            related_similarity=c.related_similarity,
            superseding_similarity=min(Reconciliation().superseding_similarity, c.related_similarity),
        ),
        breaker_failures=c.breaker_failures,
        breaker_pause_s=c.breaker_pause_s,
        # the provider has the embedder already: `auto` costs one dot product per write
        meaning_threshold=None if config.memory.meaning_check == "never" else config.memory.meaning_threshold,
        pg=pg,
    )
