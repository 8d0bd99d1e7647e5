"""`HolographicProvider`: the local fact store as the session's external memory provider.

Free and offline: facts live in `<home>/memory_store.db` (SQLite + FTS5) — or, given a
`PgPlace`, in rows of the keel PostgreSQL schema (`_pg.py`), one scope per user — ranked by the
hybrid retrieval in `retrieval.py` with HRR vectors when numpy is available. The model
writes facts explicitly with the `fact_store` tool, rates them with `fact_feedback`, and
built-in `memory` adds are mirrored in as facts. Each turn, `prefetch` recalls the top
facts for the user's message as a short markdown list that the harness fences onto the
user message.

Every SQLite call runs in a worker thread (`anyio.to_thread.run_sync`); nothing happens in
the constructor.
"""

from __future__ import annotations

import importlib.util
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path

import anyio
from pydantic import JsonValue

from memory.providers._guard import one_user, recall_safe
from memory.providers._pg import PgPlace
from memory.providers.contract import AgentContext, MemoryProvider, MemoryWrite, ProviderContext
from memory.providers.holographic._pg import PgFactStore
from memory.providers.holographic._tools import FactTools, tool_schemas
from memory.providers.holographic.contract import Category, FactBackend
from memory.providers.holographic.retrieval import RetrievalWeights, Retriever, ScoredFact
from memory.providers.holographic.store import FactStore
from memory.scope import Principal

__all__ = ["HOLOGRAPHIC_PROMPT_BLOCK", "HolographicProvider", "render_recall"]

# Static on purpose: this block sits in the cached system-prompt prefix, so it must be the
# same bytes for the whole session. A live fact count ("Active. 42 facts stored") would
# change the prefix — and miss the provider's prompt cache — every time a fact was added.
HOLOGRAPHIC_PROMPT_BLOCK = (
    "# Holographic Memory\n"
    "You have a local long-term fact store. Facts relevant to each user message are recalled "
    "automatically and attached to it inside <memory-context>. Use `fact_store` to add durable facts "
    "(preferences, people, projects, decisions) as short standalone sentences, to search, probe an "
    "entity, or reason across several entities before answering questions about them, and to fix or "
    "remove facts that are wrong. Use `fact_feedback` to mark a recalled fact helpful or unhelpful."
)

RECALL_HEADING = "## Holographic Memory"


def render_recall(hits: list[ScoredFact]) -> str:
    """Recalled facts as `## Holographic Memory` and one `- [trust] content` line each.

    A fact the write scanner objects to (stored before writes were scanned, or by another
    program) is shown as a `[BLOCKED: ...]` placeholder, never as itself.
    """
    if not hits:
        return ""
    lines = [RECALL_HEADING]
    for hit in hits:
        text = recall_safe(
            " ".join(hit.fact.content.split()),
            source=f"fact {hit.fact.fact_id}",
            remedy=f"Delete it with fact_store(action='remove', fact_id={hit.fact.fact_id}).",
        )
        lines.append(f"- [{hit.fact.trust:.1f}] {text}")
    return "\n".join(lines)


class HolographicProvider(MemoryProvider):
    """The holographic memory provider (config `memory.provider: holographic`).

    Args:
        db_path: the SQLite file; None → `<home>/memory_store.db`; a relative path is
            taken relative to the keel home; `~` is expanded.
        hrr_dim: dimension of the HRR phase vectors.
        default_trust: trust a new fact starts with.
        min_trust: facts below this trust are not recalled or searched by default.
        prefetch_limit: facts recalled per turn.
        use_numpy: True to require numpy (HRR), False for the lexical-only path, None to
            use numpy when it is installed.
        weights: relevance weights with HRR (default 0.40 HRR / 0.35 FTS / 0.25 Jaccard).
        half_life_days: temporal decay of scores; 0 (the default) turns it off.
        now: wall-clock seconds for timestamps and decay.
        pg: keep the facts in this PostgreSQL schema instead of a file (`storage.backend:
            postgres`); `db_path` is then unused and nothing is written to the home.
    """

    name = "holographic"

    def __init__(
        self,
        *,
        db_path: Path | None = None,
        hrr_dim: int = 1024,
        default_trust: float = 0.5,
        min_trust: float = 0.3,
        prefetch_limit: int = 5,
        use_numpy: bool | None = None,
        weights: RetrievalWeights | None = None,
        half_life_days: float = 0.0,
        now: Callable[[], float] = time.time,
        pg: PgPlace | None = None,
    ) -> None:
        if hrr_dim < 1:
            raise ValueError(f"hrr_dim must be positive, got {hrr_dim!r}")
        if prefetch_limit < 1:
            raise ValueError(f"prefetch_limit must be at least 1, got {prefetch_limit!r}")
        self._db_path = db_path
        self._dim = hrr_dim
        self._default_trust = default_trust
        self._min_trust = min_trust
        self._prefetch_limit = prefetch_limit
        self._use_numpy = use_numpy
        self._weights = weights
        self._half_life_days = half_life_days
        self._now = now
        self._pg = pg
        self._store: FactBackend | None = None
        self._retriever: Retriever | None = None
        self._tools: FactTools | None = None
        self._agent_context: AgentContext = "primary"
        self._user_id: str | None = None

    # ------------------------------------------------------------------ state

    @property
    def store(self) -> FactBackend | None:
        """The open fact store (None before `initialize` and after `shutdown`)."""
        return self._store

    @property
    def retriever(self) -> Retriever | None:
        return self._retriever

    def resolve_path(self, home: Path, *, user_id: str | None = None) -> Path:
        """Where the fact database lives for this keel home and user.

        Facts are kept per user: the default user's file is `<home>/memory_store.db` (or the
        configured `db_path`, relative to the home); user `u`'s is the same name under a
        `users/u/` directory beside it, so one user's facts are never recalled for another.
        """
        base = home / "memory_store.db" if self._db_path is None else self._db_path.expanduser()
        path = base if base.is_absolute() else home / base
        return path if user_id is None else Principal(user_id=user_id).user_dir(path.parent) / path.name

    def is_available(self) -> bool:
        # SQLite ships with Python; only an explicit demand for numpy can make us unavailable.
        return self._use_numpy is not True or importlib.util.find_spec("numpy") is not None

    # ------------------------------------------------------------------ lifecycle

    async def initialize(self, context: ProviderContext) -> None:
        self._agent_context = context.agent_context
        home, user_id = context.home, context.user_id
        if self._store is not None:
            one_user("holographic", self._user_id, user_id)
            return
        self._user_id = user_id
        store = await anyio.to_thread.run_sync(self._open_store, home, user_id)
        retriever = Retriever(
            store, weights=self._weights, half_life_days=self._half_life_days, now=self._now
        )
        self._store = store
        self._retriever = retriever
        self._tools = FactTools(store, retriever, min_trust=self._min_trust)

    def _open_store(self, home: Path, user_id: str | None) -> FactBackend:
        """The user's facts: rows in `pg`, else the file `resolve_path` names (blocking)."""
        if self._pg is not None:
            return PgFactStore.open(
                self._pg,
                user_id=user_id,
                dim=self._dim,
                default_trust=self._default_trust,
                use_numpy=self._use_numpy,
                now=self._now,
            )
        return FactStore.open(
            self.resolve_path(home, user_id=user_id),
            dim=self._dim,
            default_trust=self._default_trust,
            use_numpy=self._use_numpy,
            now=self._now,
        )

    def system_prompt_block(self) -> str:
        return HOLOGRAPHIC_PROMPT_BLOCK

    async def prefetch(self, query: str, *, session_id: str) -> str:
        retriever = self._retriever
        if retriever is None or not query.strip():
            return ""
        search = partial(
            retriever.search,
            query,
            min_trust=self._min_trust,
            limit=self._prefetch_limit,
            count_retrieval=True,
        )
        hits = await anyio.to_thread.run_sync(search)
        return render_recall(hits)

    def tool_schemas(self) -> list[dict[str, JsonValue]]:
        return tool_schemas()

    async def handle_tool_call(self, name: str, arguments: dict[str, JsonValue]) -> str:
        tools = self._tools
        if tools is None:
            return '{"error": "the holographic fact store is not open; the session has not initialized it"}'
        return await anyio.to_thread.run_sync(tools.handle, name, arguments)

    async def on_memory_write(self, write: MemoryWrite) -> None:
        """Mirror built-in `add`s as facts (`user` → `user_pref`, `memory` → `general`)."""
        store = self._store
        if (
            store is None
            or self._agent_context != "primary"
            or write.action != "add"
            or not write.content.strip()
        ):
            return
        category: Category = "user_pref" if write.target == "user" else "general"
        await anyio.to_thread.run_sync(partial(store.add_fact, write.content, category=category))

    async def shutdown(self) -> None:
        store = self._store
        self._store = self._retriever = self._tools = None
        if store is not None:
            await anyio.to_thread.run_sync(store.close)
