"""Retrieval quality of session_search on LoCoMo: lexical vs hybrid, per category, on both backends.

    python benchmarks/search_locomo.py [--data PATH] [--backend sqlite|postgres|both]
                                       [--conversations heldout|tuning|all] [--json OUT]

Setup. Each LoCoMo conversation gets its own fresh store (a `state.db`, or a fresh
PostgreSQL schema dropped afterwards), and each of its dated sessions becomes one keel
session: speaker_a speaks as `user`, speaker_b as `assistant`, timestamps are the
session's date plus 30 s per turn, and a shared image is stored as its caption appended to
the turn. Every stored message id is mapped back to its LoCoMo `dia_id`. Sessions are
separate lineages (separate days of chatting), so recall@5 means five sessions' windows.

Two rankings run through the real tool handler (`SessionSearchTool.handle`, discover mode,
`limit=5`) on the same store:

- `lexical`: the tool's `best` strategy, words only (what keel does without the semantic extra);
- `hybrid`: the same with the store's message embeddings (MiniLM, the semantic extra),
  indexed by `DenseIndex.catch_up` after loading, then routed and fused
  (`memory.sessions.dense.hybrid`).

Scoring, per QA item with evidence (category names as in the LoCoMo paper's numbering of
this file: 1 multi-hop, 2 temporal, 3 open-domain, 4 single-hop, 5 adversarial):
- recall@5: the fraction of the evidence turns inside the top five windows (`messages`);
- Hit@1: the first window holds at least one evidence turn;
- NDCG@5: a window is relevant when it holds an evidence turn no better-ranked window held;
  the ideal ranking has one relevant window per session holding evidence (at most five).

Held-out. The fusion constants and the routing rule were fixed on conv-26 and conv-30;
by default (`--conversations heldout`) only the file's other conversations are scored
(conv-41 and conv-42 in `locomo-dev.json`; every conversation of a file without those
two). `tuning` scores the two tuning conversations, `all` every one.

The data is CC BY-NC 4.0 and read at run time; nothing derived from it is written except
the optional `--json` report (counts and rates). Embeddings are computed once per
conversation and shared by the two backends. The last two lines are `recall@5 X` and
`multi_hop_recall@5 Y`: hybrid, on SQLite (PostgreSQL's when only it ran).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import tempfile
import time
import uuid
from collections import Counter, defaultdict
from collections.abc import AsyncIterator, Sequence
from collections.abc import Set as AbstractSet
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal

import anyio
import numpy as np
from numpy.typing import NDArray

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._pg import postgres_url_default, temporary_pg_schema
from benchmarks._util import default_data_dir
from harness.experiments.locomo import LocomoConversation as Conversation
from harness.experiments.locomo import load_locomo
from memory.providers.semantic import MiniLmEmbedder, embedder_unavailable_reason
from memory.sessions import (
    DenseIndex,
    PgSessionStore,
    SessionSearchTool,
    SessionStore,
    StoredMessage,
    open_session_db,
    open_vectors,
    route_query,
)

Backend = Literal["sqlite", "postgres"]
Mode = Literal["lexical", "hybrid"]
MODES: tuple[Mode, ...] = ("lexical", "hybrid")
METRICS = ("recall@5", "hit@1", "ndcg@5")
TUNING = ("conv-26", "conv-30")
CATEGORY_NAMES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}
K = 5


class CachedEmbedder:
    """MiniLM with a text → vector cache, so the second backend reuses the first one's vectors."""

    def __init__(self) -> None:
        self._inner = MiniLmEmbedder()
        self._cache: dict[str, NDArray[np.float32]] = {}
        self.model_id = self._inner.model_id
        self.embedded = 0

    def embed(self, texts: Sequence[str]) -> NDArray[np.float32]:
        missing = [t for t in dict.fromkeys(texts) if t not in self._cache]
        if missing:
            for text, vector in zip(missing, self._inner.embed(missing), strict=True):
                self._cache[text] = vector
            self.embedded += len(missing)
        return np.stack([self._cache[t] for t in texts]) if texts else np.zeros((0, 384), np.float32)


@dataclass
class Tally:
    """Sums of each metric per (mode, category); category 0 is every item."""

    sums: dict[tuple[Mode, int, str], float] = field(default_factory=lambda: defaultdict(float))
    counts: Counter[int] = field(default_factory=Counter)
    routes: Counter[str] = field(default_factory=Counter)

    def add(self, mode: Mode, category: int, values: dict[str, float]) -> None:
        for name, value in values.items():
            self.sums[(mode, category, name)] += value
            self.sums[(mode, 0, name)] += value

    def rate(self, mode: Mode, category: int, metric: str) -> float:
        n = self.counts[category]
        return self.sums[(mode, category, metric)] / n if n else 0.0


def score(windows: list[set[str]], evidence: AbstractSet[str]) -> dict[str, float]:
    """recall@5, Hit@1 and NDCG@5 of ranked windows (sets of dia_ids) against the evidence."""
    top = windows[:K]
    found: set[str] = set().union(*top) if top else set()
    gains: list[float] = []
    seen: set[str] = set()
    for window in top:
        new = (window & evidence) - seen
        gains.append(1.0 if new else 0.0)
        seen |= new
    ideal = min(K, len({d.split(":")[0] for d in evidence}))
    dcg = sum(g / math.log2(i + 2) for i, g in enumerate(gains))
    idcg = sum(1 / math.log2(i + 2) for i in range(ideal))
    return {
        "recall@5": len(evidence & found) / len(evidence),
        "hit@1": 1.0 if top and top[0] & evidence else 0.0,
        "ndcg@5": dcg / idcg if idcg else 0.0,
    }


async def load_conversation(db: SessionStore, conv: Conversation) -> dict[int, str]:
    """Store every session of one LoCoMo conversation; return message id → dia_id."""
    mapping: dict[int, str] = {}
    for session in conv.sessions:
        session_id = f"{conv.sample_id}-s{session.number}"
        when = datetime.strptime(session.date_time.strip(), "%I:%M %p on %d %B, %Y")
        started = when.replace(tzinfo=UTC).timestamp()
        await db.create_session(
            session_id, source="locomo", started_at=started, title=f"session {session.number}"
        )
        messages = [
            StoredMessage(
                role="user" if turn.speaker == conv.speaker_a else "assistant",
                content=turn.content,
                timestamp=started + 30 * i,
            )
            for i, turn in enumerate(session.turns)
        ]
        ids = await db.append_messages(session_id, messages)
        mapping.update({mid: turn.dia_id for mid, turn in zip(ids, session.turns, strict=True)})
    return mapping


def _covered(reply: str, mapping: dict[int, str]) -> list[set[str]]:
    """The dia_ids inside each returned window, in rank order."""
    payload = json.loads(reply)
    if not payload.get("success"):
        raise RuntimeError(f"session_search failed: {reply}")
    return [
        {mapping[m["id"]] for m in result.get("messages", []) if m["id"] in mapping}
        for result in payload["results"]
    ]


@asynccontextmanager
async def fresh_store(backend: Backend, name: str, tmp: Path, url: str) -> AsyncIterator[SessionStore]:
    """An empty store for one conversation: a new state.db, or a new PostgreSQL schema."""
    if backend == "sqlite":
        async with open_session_db(tmp / f"{name}.db") as db:
            yield db
        return
    with temporary_pg_schema(url, f"keel_locomo_{uuid.uuid4().hex[:12]}") as schema:
        async with await PgSessionStore.open(url, schema=schema, pool_size=2) as pg:
            yield pg


async def run_one(
    db: SessionStore,
    conv: Conversation,
    embedder: CachedEmbedder,
    tally: Tally,
    latencies: dict[Mode, list[float]],
) -> None:
    mapping = await load_conversation(db, conv)
    vectors = open_vectors(db)
    assert vectors is not None
    index = DenseIndex(vectors, embedder)
    try:
        await index.catch_up()
        tools = {
            "lexical": SessionSearchTool(db, current_session_id=lambda: None),
            "hybrid": SessionSearchTool(db, current_session_id=lambda: None, dense=index),
        }
        known = set(mapping.values())
        for item in conv.questions:
            evidence = item.evidence_ids() & known
            if not evidence:
                continue
            tally.counts[item.category] += 1
            tally.counts[0] += 1
            tally.routes[route_query(item.question).route] += 1
            for mode in MODES:
                started = time.perf_counter()
                reply = await tools[mode].handle({"query": item.question, "limit": K})
                latencies[mode].append(time.perf_counter() - started)
                tally.add(mode, item.category, score(_covered(reply, mapping), evidence))
    finally:
        await index.aclose()


async def run(
    conversations: list[Conversation], backend: Backend, url: str, embedder: CachedEmbedder
) -> tuple[Tally, dict[Mode, list[float]]]:
    tally = Tally()
    latencies: dict[Mode, list[float]] = defaultdict(list)
    with tempfile.TemporaryDirectory(prefix="keel-locomo-") as tmp:
        for conv in conversations:
            async with fresh_store(backend, conv.sample_id, Path(tmp), url) as db:
                await run_one(db, conv, embedder, tally, latencies)
    return tally, latencies


def report(tally: Tally, latencies: dict[Mode, list[float]]) -> dict[str, object]:
    categories = [0, *sorted(c for c in tally.counts if c != 0)]
    cells = [f"{m[:3]} {mode[:3]}" for m in METRICS for mode in MODES]
    print(f"{'category':<16}{'n':>5}  " + "".join(f"{c:>10}" for c in cells))
    table: dict[str, object] = {}
    for c in categories:
        name = "all" if c == 0 else f"{c} {CATEGORY_NAMES.get(c, '')}"
        values = {f"{mode} {m}": tally.rate(mode, c, m) for m in METRICS for mode in MODES}
        table[name] = {"n": tally.counts[c], **values}
        print(f"{name:<16}{tally.counts[c]:>5}  " + "".join(f"{v:>10.3f}" for v in values.values()))
    routes = ", ".join(f"{r} {n}" for r, n in sorted(tally.routes.items()))
    print(f"routes: {routes}")
    for mode in MODES:
        lat = sorted(latencies[mode])
        median = lat[len(lat) // 2] * 1000 if lat else 0.0
        print(f"{mode:<8} median latency {median:.1f} ms over {len(lat)} queries")
    return table


def pick(conversations: list[Conversation], which: str) -> list[Conversation]:
    if which == "all":
        return conversations
    if which == "tuning":
        return [c for c in conversations if c.sample_id in TUNING]
    return [c for c in conversations if c.sample_id not in TUNING]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--data", type=Path, default=default_data_dir() / "locomo-dev.json")
    parser.add_argument("--json", type=Path, default=None, help="write the tables as JSON here")
    parser.add_argument("--backend", choices=["sqlite", "postgres", "both"], default="both")
    parser.add_argument("--conversations", choices=["heldout", "tuning", "all"], default="heldout")
    parser.add_argument("--postgres-url", default=postgres_url_default(), help="the PostgreSQL server")
    args = parser.parse_args(argv)
    if not args.data.exists():
        print(f"LoCoMo data not found at {args.data}; pass --data or set KEEL_DATA_DIR", file=sys.stderr)
        return 2
    reason = embedder_unavailable_reason()
    if reason is not None:
        print(f"hybrid search needs the embedder: {reason}", file=sys.stderr)
        return 2
    conversations = pick(load_locomo(args.data), args.conversations)
    if not conversations:
        print(f"no {args.conversations} conversations in {args.data}", file=sys.stderr)
        return 2
    print(f"conversations ({args.conversations}): {', '.join(c.sample_id for c in conversations)}")
    backends: list[Backend] = ["sqlite", "postgres"] if args.backend == "both" else [args.backend]
    embedder = CachedEmbedder()
    tables: dict[str, object] = {}
    tallies: dict[Backend, Tally] = {}
    for backend in backends:
        print(f"== {backend}")
        started = time.perf_counter()
        tally, latencies = anyio.run(run, conversations, backend, args.postgres_url, embedder)
        tables[backend] = report(tally, latencies)
        tallies[backend] = tally
        print(f"({time.perf_counter() - started:.0f} s, {embedder.embedded} texts embedded so far)")
        print()
    if len(backends) == 2:
        print(f"{'hybrid recall@5':<24}{'sqlite':>10}{'postgres':>10}{'delta':>10}")
        for c in [0, *sorted(c for c in tallies["sqlite"].counts if c != 0)]:
            a, b = (
                tallies["sqlite"].rate("hybrid", c, "recall@5"),
                tallies["postgres"].rate("hybrid", c, "recall@5"),
            )
            name = "all" if c == 0 else CATEGORY_NAMES.get(c, str(c))
            print(f"{name:<24}{a:>10.4f}{b:>10.4f}{b - a:>+10.4f}")
        print()
    if args.json is not None:
        args.json.write_text(json.dumps(tables, indent=2) + "\n", encoding="utf-8")
    main_tally = tallies["sqlite"] if "sqlite" in tallies else tallies["postgres"]
    for backend, tally in tallies.items():
        print(f"{backend}_lexical_recall@5 {tally.rate('lexical', 0, 'recall@5'):.4f}")
        print(f"{backend}_hybrid_recall@5 {tally.rate('hybrid', 0, 'recall@5'):.4f}")
    print(f"recall@5 {main_tally.rate('hybrid', 0, 'recall@5'):.4f}")
    print(f"multi_hop_recall@5 {main_tally.rate('hybrid', 1, 'recall@5'):.4f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
