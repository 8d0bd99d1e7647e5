"""session_search at scale: insert throughput and query latency over a large session store.

    python benchmarks/search_scale.py [--messages N] [--sessions N] [--queries N] [--data PATH]
                                      [--backend sqlite|postgres|both] [--postgres-url URL]

Builds a fresh store — a `state.db` in a temporary directory, or a fresh schema on the
PostgreSQL server (`--postgres-url`, default `$KEEL_TEST_POSTGRES_URL` or
postgresql://postgres@127.0.0.1:5432/test; dropped afterwards) — with `--messages`
messages (default 100,000; `--messages 1000000` for the full-size run) spread over
`--sessions` sessions (default messages / 50), alternating user/assistant turns. With
`--backend both` the two stores get the same messages (same seed), and the queries are
measured interleaved (each query on one store, then the other) so a busy machine slows
both alike. Text is realistic: every message is one or two
sentences drawn at random from all LoCoMo dialog turns (read at run time); without the
data a synthetic generator (Zipf-distributed words) stands in.

Reports: bulk insert throughput (one transaction per session through `append_messages`;
on PostgreSQL a batch that size goes in by COPY), single-message append throughput (the per-turn path the turn loop
uses, one transaction each, measured on a sample), and session_search discover latency
(the full tool path: sanitize, full-text search, lineage grouping, hydration, JSON) over
`--queries` realistic queries (LoCoMo questions, or synthetic ones) for each strategy.
On PostgreSQL the tables are VACUUM ANALYZEd after the load (autovacuum would do the
same a little later), so the planner knows how common each word is.

Hybrid search (unless `--no-dense`, and when the semantic extra is installed): after the
load every embeddable message gets a synthetic unit vector through the real vector table
(random: embedding a million messages for real takes about an hour on this CPU, and the
search's cost does not depend on what the vectors mean), and the hybrid discover (query
embedded for real, sign-code prefilter over every vector, exact cosine on the nearest
1,000, fused with `best`) is measured like the strategies, after a few queries that load
the sign codes. The vectors' size on disk and the real embedder's messages per second
(the write-time cost, paid in the background) are printed too.

The last lines are `name value`: per backend `sqlite_*` / `pg_*` figures for the default
(`best`) strategy — `..._search_p50_ms`, `..._search_p99_ms`, `..._bulk_msg_per_s` — and,
when SQLite ran, `p50_ms` (its p50, as before) and `hybrid_p50_ms` (the hybrid search's).
"""

from __future__ import annotations

import argparse
import json
import random
import re
import sqlite3
import sys
import tempfile
import time
import uuid
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager, closing
from pathlib import Path
from typing import Literal

import anyio
import anyio.to_thread
import numpy as np
import psycopg

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._pg import postgres_url_default, temporary_pg_schema
from benchmarks._util import default_data_dir, median, percentile
from harness.experiments.locomo import load_locomo
from memory.providers.semantic import MiniLmEmbedder, embedder_unavailable_reason
from memory.sessions import (
    DenseIndex,
    PgSessionStore,
    SearchStrategy,
    SessionSearchTool,
    SessionStore,
    StoredMessage,
    open_session_db,
    open_vectors,
)
from memory.sessions.dense import vector_rows

Backend = Literal["sqlite", "postgres"]
PREFIX: dict[Backend, str] = {"sqlite": "sqlite", "postgres": "pg"}

STRATEGIES: tuple[SearchStrategy, ...] = ("all_terms", "any_terms", "best")
_SINGLE_APPENDS = 2000


def load_corpus(data: Path, rng: random.Random) -> tuple[list[str], list[str]]:
    """(sentences, questions) from LoCoMo, or synthetic stand-ins when the file is absent."""
    if data.exists():
        sentences: list[str] = []
        questions: list[str] = []
        for conv in load_locomo(data):
            for session in conv.sessions:
                for turn in session.turns:
                    parts = re.split(r"(?<=[.!?])\s+", turn.text.strip())
                    sentences += [p for p in parts if len(p) > 3]
            questions += [item.question for item in conv.questions]
        return sentences, questions
    print(f"(LoCoMo data not found at {data}; using synthetic text)")
    vocabulary = [f"w{i}" for i in range(30_000)]
    weights = [1 / (i + 1) for i in range(len(vocabulary))]
    sentences = [
        " ".join(rng.choices(vocabulary, weights, k=rng.randint(5, 25))) + "." for _ in range(20_000)
    ]
    questions = [" ".join(rng.choices(vocabulary[:5000], k=rng.randint(3, 8))) + "?" for _ in range(1000)]
    return sentences, questions


def _message(sentences: list[str], rng: random.Random, seq: int, ts: float) -> StoredMessage:
    k = 1 if rng.random() < 0.5 else 2
    return StoredMessage(
        role="user" if seq % 2 == 0 else "assistant",
        content=" ".join(rng.choices(sentences, k=k)),
        timestamp=ts,
    )


async def build(
    db: SessionStore, sentences: list[str], *, messages: int, sessions: int, rng: random.Random
) -> float:
    """Fill the store; return bulk insert throughput in messages per second."""
    per_session, extra = divmod(messages, sessions)
    base = 1_600_000_000.0
    started = time.perf_counter()
    done = 0
    for s in range(sessions):
        count = per_session + (1 if s < extra else 0)
        sid = f"s{s:06d}"
        t0 = base + s * 3600.0
        await db.create_session(sid, source="cli", model="bench", started_at=t0)
        batch = [_message(sentences, rng, i, t0 + i * 20.0) for i in range(count)]
        await db.append_messages(sid, batch)
        done += count
        if (s + 1) % max(1, sessions // 20) == 0:
            rate = done / (time.perf_counter() - started)
            print(f"  {done:>9,} messages  {rate:,.0f} msg/s", flush=True)
    return done / (time.perf_counter() - started)


async def single_appends(db: SessionStore, sentences: list[str], rng: random.Random) -> float:
    """Per-turn appends (one transaction each), messages per second."""
    sid = "single-append"
    await db.create_session(sid, source="cli", started_at=1_500_000_000.0)
    started = time.perf_counter()
    for i in range(_SINGLE_APPENDS):
        await db.append_message(sid, _message(sentences, rng, i, 1_500_000_000.0 + i))
    return _SINGLE_APPENDS / (time.perf_counter() - started)


async def measure_one(tool: SessionSearchTool, query: str) -> float:
    started = time.perf_counter()
    reply = await tool.handle({"query": query})
    elapsed = (time.perf_counter() - started) * 1000
    if not json.loads(reply).get("success"):
        raise RuntimeError(f"query {query!r} failed: {reply}")
    return elapsed


async def measure(
    stores: dict[Backend, SessionStore],
    queries: list[str],
    strategy: SearchStrategy,
    dense: dict[Backend, DenseIndex] | None = None,
) -> dict[Backend, list[float]]:
    """Latency per query on each store, interleaved (query 1 on each, query 2 on each, ...)
    so a busy machine slows every backend alike. With `dense`, the hybrid search."""
    tools = {
        b: SessionSearchTool(
            db, current_session_id=lambda: None, strategy=strategy, dense=None if dense is None else dense[b]
        )
        for b, db in stores.items()
    }
    samples: dict[Backend, list[float]] = {b: [] for b in stores}
    for query in queries:
        for backend, tool in tools.items():
            samples[backend].append(await measure_one(tool, query))
    return samples


async def fill_vectors(backend: Backend, db: SessionStore, seed: int) -> tuple[DenseIndex, dict[str, float]]:
    """Give every embeddable message a synthetic unit vector (random, 384 dimensions) through the
    real vector table; a DenseIndex over it with the real embedder (queries are embedded for real).

    Synthetic because embedding a million messages takes about an hour on this CPU; the search's
    cost does not depend on what the vectors mean. The real embedder's write cost is measured
    on a sample instead (`embed_msg_per_s`)."""
    vectors = open_vectors(db)
    assert vectors is not None
    embedder = MiniLmEmbedder()
    index = DenseIndex(vectors, embedder)
    await index.prepare()
    rng = np.random.default_rng(seed)
    started = time.perf_counter()
    done, after = 0, 0
    while pending := await vectors.pending(after=after, limit=20_000):
        block = rng.standard_normal((len(pending), embedder.dim), dtype=np.float32)
        block /= np.linalg.norm(block, axis=1, keepdims=True)
        await vectors.put(vector_rows([m.message_id for m in pending], block))
        after = pending[-1].message_id
        done += len(pending)
    fill_s = time.perf_counter() - started
    sample = [m.text for m in await vectors.pending(after=0, limit=1)] or ["warm up"]
    await anyio.to_thread.run_sync(embedder.embed, sample)  # load the model
    texts = [f"message number {i} about the trip, the deploy and the dog" for i in range(512)]
    started = time.perf_counter()
    await anyio.to_thread.run_sync(embedder.embed, texts)
    embed_rate = len(texts) / (time.perf_counter() - started)
    print(
        f"[{backend}] vectors: {done:,} stored in {fill_s:,.0f} s ({done / max(fill_s, 1e-9):,.0f}/s, synthetic); "
        f"the real embedder: {embed_rate:,.0f} messages/s on one thread"
    )
    return index, {"vectors": float(done), "embed_msg_per_s": embed_rate}


def _size_mb(folder: Path) -> float:
    for db in folder.glob("*.db"):  # what a checkpoint leaves: the WAL's pages back in the file
        with closing(sqlite3.connect(db)) as conn:
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    return sum(p.stat().st_size for p in folder.iterdir()) / 1e6


def _pg_analyze_and_size(url: str, schema: str) -> float:
    """VACUUM ANALYZE the store's tables (what autovacuum does after a load); their size in MB."""
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f'VACUUM (ANALYZE) "{schema}".sessions')
        conn.execute(f'VACUUM (ANALYZE) "{schema}".messages')
        row = conn.execute(
            "SELECT sum(pg_total_relation_size(c.oid)) FROM pg_class c "
            "JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = %s AND c.relkind = 'r'",
            (schema,),
        ).fetchone()
    return float(row[0] or 0) / 1e6 if row else 0.0


@asynccontextmanager
async def fresh_store(backend: Backend, url: str) -> AsyncIterator[tuple[SessionStore, str]]:
    """(an empty store, where it is) for one run; removed afterwards."""
    if backend == "sqlite":
        with tempfile.TemporaryDirectory(prefix="keel-scale-") as tmp:
            async with open_session_db(Path(tmp) / "state.db") as db:
                yield db, tmp
        return
    with temporary_pg_schema(url, f"keel_scale_{uuid.uuid4().hex[:12]}") as schema:
        async with await PgSessionStore.open(url, schema=schema, pool_size=2) as pg:
            yield pg, schema


async def build_store(
    backend: Backend, db: SessionStore, where: str, args: argparse.Namespace
) -> dict[str, float]:
    rng = random.Random(args.seed)  # the same messages on every backend
    sentences, _ = load_corpus(args.data, rng)
    sessions = args.sessions or max(1, args.messages // 50)
    print(f"[{backend}] building {args.messages:,} messages in {sessions:,} sessions at {db.location}")
    started = time.perf_counter()
    bulk = await build(db, sentences, messages=args.messages, sessions=sessions, rng=rng)
    single = await single_appends(db, sentences, rng)
    if backend == "sqlite":
        size_mb = await anyio.to_thread.run_sync(_size_mb, Path(where))
    else:
        size_mb = await anyio.to_thread.run_sync(_pg_analyze_and_size, args.postgres_url, where)
    print(
        f"[{backend}] insert: bulk {bulk:,.0f} msg/s (one transaction per session); "
        f"single append {single:,.0f} msg/s; store {size_mb:,.0f} MB; "
        f"built in {time.perf_counter() - started:,.0f} s"
    )
    return {"bulk_msg_per_s": bulk, "single_append_msg_per_s": single, "store_mb": size_mb}


async def run(args: argparse.Namespace, backends: list[Backend]) -> dict[Backend, dict[str, float]]:
    rng = random.Random(args.seed)
    _, questions = load_corpus(args.data, rng)
    queries = random.Random(args.seed + 1).sample(questions, min(args.queries, len(questions)))
    results: dict[Backend, dict[str, float]] = {}
    async with AsyncExitStack() as stack:
        stores: dict[Backend, SessionStore] = {}
        for backend in backends:
            db, where = await stack.enter_async_context(fresh_store(backend, args.postgres_url))
            results[backend] = await build_store(backend, db, where, args)
            stores[backend] = db
        dense: dict[Backend, DenseIndex] = {}
        if args.dense:
            for backend, db in stores.items():
                size_before = results[backend]["store_mb"]
                index, figures = await fill_vectors(backend, db, args.seed)
                stack.push_async_callback(index.aclose)
                dense[backend] = index
                if backend == "sqlite":
                    size_after = await anyio.to_thread.run_sync(_size_mb, Path(str(db.location)).parent)
                    figures["vectors_mb"] = size_after - size_before
                    print(f"[{backend}] the vectors take {size_after - size_before:,.0f} MB on disk")
                results[backend] |= figures
        await measure(stores, queries[:20], "best")  # warm the caches
        if dense:
            started = time.perf_counter()
            await measure(stores, queries[:3], "best", dense)  # loads the sign codes once
            print(f"first hybrid queries (the sign codes loaded): {time.perf_counter() - started:,.1f} s")
            samples = await measure(stores, queries, "best", dense)
            for backend, values in samples.items():
                print(
                    f"[{backend}] hybrid     {len(values)} queries  p50 {median(values):7.2f} ms  "
                    f"p95 {percentile(values, 95):7.2f} ms  p99 {percentile(values, 99):7.2f} ms  "
                    f"max {max(values):7.2f} ms"
                )
                results[backend] |= {
                    "hybrid_search_p50_ms": median(values),
                    "hybrid_search_p99_ms": percentile(values, 99),
                }
        for strategy in STRATEGIES:
            samples = await measure(stores, queries, strategy)
            for backend, values in samples.items():
                print(
                    f"[{backend}] {strategy:<10} {len(values)} queries  p50 {median(values):7.2f} ms  "
                    f"p95 {percentile(values, 95):7.2f} ms  p99 {percentile(values, 99):7.2f} ms  "
                    f"max {max(values):7.2f} ms"
                )
                if strategy == "best":
                    results[backend] |= {
                        "search_p50_ms": median(values),
                        "search_p99_ms": percentile(values, 99),
                    }
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--messages", type=int, default=100_000)
    parser.add_argument("--sessions", type=int, default=None, help="default: messages / 50")
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--data", type=Path, default=default_data_dir() / "locomo-dev.json")
    parser.add_argument("--backend", choices=["sqlite", "postgres", "both"], default="sqlite")
    parser.add_argument("--postgres-url", default=postgres_url_default(), help="the PostgreSQL server")
    parser.add_argument(
        "--no-dense", dest="dense", action="store_false", help="words only: no vectors, no hybrid search"
    )
    args = parser.parse_args(argv)
    if args.dense and embedder_unavailable_reason() is not None:
        print(f"(hybrid search skipped: {embedder_unavailable_reason()})")
        args.dense = False
    backends: list[Backend] = ["sqlite", "postgres"] if args.backend == "both" else [args.backend]
    results = anyio.run(run, args, backends)
    if len(results) == 2:
        print()
        print(f"{'best strategy':<26}{'sqlite':>12}{'postgres':>12}")
        for name in results["sqlite"]:
            print(f"{name:<26}{results['sqlite'][name]:>12,.2f}{results['postgres'][name]:>12,.2f}")
    print()
    print(f"messages {args.messages}")
    for backend, figures in results.items():
        for name, value in figures.items():
            print(f"{PREFIX[backend]}_{name} {value:.2f}")
    if "sqlite" in results:
        print(f"p50_ms {results['sqlite']['search_p50_ms']:.2f}")
        if "hybrid_search_p50_ms" in results["sqlite"]:
            print(f"hybrid_p50_ms {results['sqlite']['hybrid_search_p50_ms']:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
