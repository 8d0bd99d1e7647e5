"""Retrieval quality of session_search on LoCoMo: recall@1/3/5 of the evidence turns.

    python benchmarks/search_locomo.py [--data PATH] [--json OUT] [--backend sqlite|postgres|both]

Setup. Each LoCoMo conversation gets its own fresh `state.db` (one user's history), and
each of its dated sessions becomes one keel session: speaker_a speaks as `user`,
speaker_b as `assistant`, timestamps are the session's date plus a few seconds per turn,
and a shared image is stored as its caption (`[shares a photo: ...]`) appended to the turn, as a
multimodal transcript would keep it. Every stored message id is mapped back to its
LoCoMo `dia_id`.

Why one lineage per session. The tool groups hits by lineage root and returns one window
per lineage. Chaining a conversation's sessions into one lineage (as compression
continuations) would collapse every query to a single result per conversation, and
recall@3/@5 would mean nothing. LoCoMo sessions are separate days of chatting — in keel,
separate sessions a user starts afresh — so each is its own lineage, and the benchmark
measures exactly what the model gets back: ranked sessions, each a window of ±5 messages
around the best match.

Scoring. For every QA item with evidence, session_search runs in discover mode with the
question as the query and `limit=5`, through the real tool handler (its JSON reply is
parsed). A returned result covers the messages in its window (`messages`, not the
bookends). recall@k = the fraction of the item's evidence turns covered by the top k
results, averaged over items; reported per QA category and overall.

Strategies, side by side on the same databases (`memory/sessions/_ranking.py`):
- `all_terms`: a plain FTS5 AND of the question's words, as the sanitizer keeps them;
- `any_terms`: an OR of the non-stopword terms, ranked by BM25 (porter-stemmed index);
- `best` (the tool's default): the same OR, then every candidate window is re-ranked by
  the BM25 mass of the hits inside it times one plus the IDF-weighted share of the
  question's terms the window covers.
Nothing is tuned per question; the few constants (window decay, coverage weight 1) are
round numbers chosen on this dev file, and the same script runs on any LoCoMo file.

Backends. `--backend postgres` runs the same on the PostgreSQL store (`--postgres-url`,
default `$KEEL_TEST_POSTGRES_URL` or postgresql://postgres@127.0.0.1:5432/test), one fresh
schema per conversation, dropped afterwards; `--backend both` runs both and prints them
side by side. Ranking differs between the backends (BM25 vs `ts_rank_cd`, Porter vs
Snowball stemming), so recall may too; the target is PostgreSQL within 0.03 of SQLite.

The data is CC BY-NC 4.0 and read at run time; nothing derived from it is written except
the optional `--json` report. The last lines are `name value`: `recall@5` (SQLite, `best`)
and/or `pg_recall@5`, plus `pg_recall@5_delta` (PostgreSQL minus SQLite) with `both`.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
import uuid
from collections import defaultdict
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._locomo import Conversation, load_locomo
from benchmarks._pg import postgres_url_default, temporary_pg_schema
from benchmarks._util import default_data_dir
from memory.sessions import (
    PgSessionStore,
    SearchStrategy,
    SessionSearchTool,
    SessionStore,
    StoredMessage,
    open_session_db,
)

Backend = Literal["sqlite", "postgres"]

STRATEGIES: tuple[SearchStrategy, ...] = ("all_terms", "any_terms", "best")
KS = (1, 3, 5)
CATEGORY_NAMES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}


@dataclass
class Tally:
    """Sums of recall@k over QA items, per strategy and category."""

    sums: dict[tuple[str, int, int], float] = field(default_factory=lambda: defaultdict(float))
    counts: dict[int, int] = field(default_factory=lambda: defaultdict(int))

    def add(self, strategy: str, category: int, recalls: dict[int, float]) -> None:
        for k, value in recalls.items():
            self.sums[(strategy, category, k)] += value
            self.sums[(strategy, 0, k)] += value

    def recall(self, strategy: str, category: int, k: int) -> float:
        n = self.counts[category]
        return self.sums[(strategy, category, k)] / n if n else 0.0


async def load_conversation(db: SessionStore, conv: Conversation) -> dict[int, str]:
    """Store every session of one LoCoMo conversation; return message id → dia_id."""
    mapping: dict[int, str] = {}
    for session in conv.sessions:
        session_id = f"{conv.sample_id}-s{session.number}"
        started = session.started_at
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
    windows: list[set[str]] = []
    for result in payload["results"]:
        ids = {m["id"] for m in result.get("messages", [])}
        windows.append({mapping[i] for i in ids if i in mapping})
    return windows


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


async def run(
    conversations: list[Conversation], backend: Backend = "sqlite", url: str = ""
) -> tuple[Tally, dict[str, list[float]]]:
    tally = Tally()
    latencies: dict[str, list[float]] = defaultdict(list)
    with tempfile.TemporaryDirectory(prefix="keel-locomo-") as tmp:
        for conv in conversations:
            async with fresh_store(backend, conv.sample_id, Path(tmp), url) as db:
                mapping = await load_conversation(db, conv)
                known = set(mapping.values())
                tools = {
                    s: SessionSearchTool(db, current_session_id=lambda: None, strategy=s) for s in STRATEGIES
                }
                for item in conv.qa:
                    evidence = item.evidence_ids() & known
                    if not evidence:
                        continue
                    tally.counts[item.category] += 1
                    tally.counts[0] += 1
                    for strategy, tool in tools.items():
                        started = time.perf_counter()
                        reply = await tool.handle({"query": item.question, "limit": max(KS)})
                        latencies[strategy].append(time.perf_counter() - started)
                        windows = _covered(reply, mapping)
                        recalls: dict[int, float] = {}
                        for k in KS:
                            found: set[str] = set().union(*windows[:k])
                            recalls[k] = len(evidence & found) / len(evidence)
                        tally.add(strategy, item.category, recalls)
    return tally, latencies


def report(tally: Tally, latencies: dict[str, list[float]]) -> dict[str, object]:
    categories = [0, *sorted(c for c in tally.counts if c != 0)]
    header = f"{'category':<16}{'n':>5}  " + "  ".join(
        f"{s + ' @' + str(k):>13}" for s in STRATEGIES for k in KS
    )
    print(header)
    table: dict[str, object] = {}
    for c in categories:
        name = "all" if c == 0 else f"{c} {CATEGORY_NAMES.get(c, '')}"
        cells = {f"{s}@{k}": tally.recall(s, c, k) for s in STRATEGIES for k in KS}
        table[name] = {"n": tally.counts[c], **cells}
        print(f"{name:<16}{tally.counts[c]:>5}  " + "  ".join(f"{v:>13.3f}" for v in cells.values()))
    print()
    for s in STRATEGIES:
        lat = sorted(latencies[s])
        median = lat[len(lat) // 2] * 1000 if lat else 0.0
        print(
            f"{s:<10} recall@1 {tally.recall(s, 0, 1):.3f}  recall@3 {tally.recall(s, 0, 3):.3f}  "
            f"recall@5 {tally.recall(s, 0, 5):.3f}  median latency {median:.1f} ms"
        )
    return table


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--data", type=Path, default=default_data_dir() / "locomo-dev.json")
    parser.add_argument("--json", type=Path, default=None, help="write the table as JSON here")
    parser.add_argument("--backend", choices=["sqlite", "postgres", "both"], default="sqlite")
    parser.add_argument("--postgres-url", default=postgres_url_default(), help="the PostgreSQL server")
    args = parser.parse_args(argv)
    if not args.data.exists():
        print(f"LoCoMo data not found at {args.data}; pass --data or set KEEL_DATA_DIR", file=sys.stderr)
        return 2
    conversations = load_locomo(args.data)
    backends: list[Backend] = ["sqlite", "postgres"] if args.backend == "both" else [args.backend]
    tables: dict[str, object] = {}
    recall5: dict[str, float] = {}
    for backend in backends:
        print(f"== {backend}")
        tally, latencies = anyio.run(run, conversations, backend, args.postgres_url)
        tables[backend] = report(tally, latencies)
        recall5[backend] = tally.recall("best", 0, 5)
        print()
    if len(backends) == 2:
        print(f"{'strategy best':<16}{'sqlite':>10}{'postgres':>10}")
        print(f"{'recall@5':<16}{recall5['sqlite']:>10.4f}{recall5['postgres']:>10.4f}")
        print()
    if args.json is not None:
        report_json = tables if len(backends) == 2 else tables[backends[0]]
        args.json.write_text(json.dumps(report_json, indent=2) + "\n", encoding="utf-8")
    if "sqlite" in recall5:
        print(f"recall@5 {recall5['sqlite']:.4f}")
    if "postgres" in recall5:
        print(f"pg_recall@5 {recall5['postgres']:.4f}")
    if len(recall5) == 2:
        print(f"pg_recall@5_delta {recall5['postgres'] - recall5['sqlite']:+.4f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
