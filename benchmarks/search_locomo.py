"""Retrieval quality of session_search on LoCoMo: recall@1/3/5 of the evidence turns.

    python benchmarks/search_locomo.py [--data PATH] [--json OUT]

Setup. Each LoCoMo conversation gets its own fresh `state.db` (one user's history), and
each of its dated sessions becomes one keel session: speaker_a speaks as `user`,
speaker_b as `assistant`, timestamps are the session's date plus a few seconds per turn,
and a shared image is stored as its caption (`[image: ...]`) appended to the turn, as a
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

Strategies, side by side on the same databases (`memory/_search_rank.py`):
- `all_terms`: a plain FTS5 AND of the question's words, as the sanitizer keeps them;
- `any_terms`: an OR of the non-stopword terms, ranked by BM25 (porter-stemmed index);
- `best` (the tool's default): the same OR, then every candidate window is re-ranked by
  the BM25 mass of the hits inside it times one plus the IDF-weighted share of the
  question's terms the window covers.
Nothing is tuned per question; the few constants (window decay, coverage weight 1) are
round numbers chosen on this dev file, and the same script runs on any LoCoMo file.

The data is CC BY-NC 4.0 and read at run time; nothing derived from it is written except
the optional `--json` report. The last line printed is `recall@5 <value>` for `best`.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._locomo import Conversation, load_locomo
from benchmarks._util import default_data_dir
from memory.sessions._records import StoredMessage
from memory.sessions._search_rank import SearchStrategy
from memory.sessions.search import SessionSearchTool
from memory.sessions.store import SessionDB, open_session_db

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


async def load_conversation(db: SessionDB, conv: Conversation) -> dict[int, str]:
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


async def run(conversations: list[Conversation]) -> tuple[Tally, dict[str, list[float]]]:
    tally = Tally()
    latencies: dict[str, list[float]] = defaultdict(list)
    with tempfile.TemporaryDirectory(prefix="keel-locomo-") as tmp:
        for conv in conversations:
            async with open_session_db(Path(tmp) / f"{conv.sample_id}.db") as db:
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
    args = parser.parse_args(argv)
    if not args.data.exists():
        print(f"LoCoMo data not found at {args.data}; pass --data or set KEEL_DATA_DIR", file=sys.stderr)
        return 2
    tally, latencies = anyio.run(run, load_locomo(args.data))
    table = report(tally, latencies)
    if args.json is not None:
        args.json.write_text(json.dumps(table, indent=2) + "\n", encoding="utf-8")
    print(f"recall@5 {tally.recall('best', 0, 5):.4f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
