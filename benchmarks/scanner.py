"""The write defence's catch and false-positive rates per corpus: the rules alone, then layered.

    python benchmarks/scanner.py [--data PATH] [--quiet]

Corpora (tests/memory/): `scanner_corpus.py` (the original hand-written one),
`scanner_corpus_disguised.py` (disguised attacks and harmless look-alikes),
`scanner_corpus_round2.py` (the second red-team round's kinds of miss, written for issue 28),
`scanner_corpus_holdout.py` (written after the issue-16 rules, not tuned on) and
`scanner_corpus_heldout2.py` (written apart from the tuners for issue 28 and never read by
them). The rules were tuned on the first three and the meaning probe trained on them, so
their layered figures are in-sample; the two held-out corpora are the honest ones.

Catch = share of attacks with any finding; false positives = share of harmless notes with
any finding (strict scope: memory writes). "rules" is `memory.scanner.scan`; "layered" adds
the meaning check (`MeaningCheck`, the shipped probe at its default threshold) — a text is
flagged when either layer flags it. `split` is the round-2 attacks written as two entries:
caught when the second entry is refused by the joined scan (`scan_joined`). Then every
LoCoMo utterance (ordinary chat) is checked as a false-positive check, with the median time
of each layer.

The table ends with the layered figures; the last line is `layered heldout <catch> <fp>`
(the newest held-out corpus), or `layered holdout ...` when that file is absent.
"""

from __future__ import annotations

import argparse
import importlib
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # run as a script from anywhere: this checkout's packages win

from benchmarks._util import default_data_dir, median  # noqa: E402
from harness.experiments.locomo import load_locomo  # noqa: E402
from memory.providers.semantic import MiniLmEmbedder  # noqa: E402
from memory.scanner import MeaningCheck, scan, scan_joined  # noqa: E402

_CORPORA = (
    ("original", "tests.memory.scanner_corpus"),
    ("disguised", "tests.memory.scanner_corpus_disguised"),
    ("round2", "tests.memory.scanner_corpus_round2"),
    ("holdout", "tests.memory.scanner_corpus_holdout"),
    ("heldout2", "tests.memory.scanner_corpus_heldout2"),
    ("heldout3", "tests.memory.scanner_corpus_heldout3"),
)


@dataclass(frozen=True, slots=True)
class _Rates:
    catch: tuple[int, int]
    fp: tuple[int, int]

    def line(self, name: str, layer: str) -> str:
        (caught, attacks), (flagged, benign) = self.catch, self.fp
        return (
            f"{name:<10} {layer:<8} catch {caught / attacks:.3f} ({caught:>3}/{attacks:<3})  "
            f"fp {flagged / benign:.3f} ({flagged:>2}/{benign:<3})"
        )


def _load(module: str) -> ModuleType | None:
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError:
        return None


def _measure(name: str, corpus: ModuleType, meaning: MeaningCheck, *, verbose: bool) -> tuple[_Rates, _Rates]:
    attacks = [text for _, text in corpus.ATTACKS]
    benign = list(corpus.BENIGN)
    rule_a = [bool(scan(t, "strict")) for t in attacks]
    rule_b = [bool(scan(t, "strict")) for t in benign]
    threshold = meaning.threshold
    mean_a = [s >= threshold for s in meaning.scores(attacks)]
    mean_b = [s >= threshold for s in meaning.scores(benign)]
    both_a = [r or m for r, m in zip(rule_a, mean_a, strict=True)]
    both_b = [r or m for r, m in zip(rule_b, mean_b, strict=True)]
    if verbose:
        for text, r, m in zip(attacks, rule_a, mean_a, strict=True):
            if not r:
                print(f"    {'caught by meaning' if m else 'missed'}: {text[:90]!r}")
        for text, r, m in zip(benign, rule_b, mean_b, strict=True):
            if r or m:
                print(f"    flagged by {'rules' if r else 'meaning'}: {text[:90]!r}")
    return (
        _Rates((sum(rule_a), len(attacks)), (sum(rule_b), len(benign))),
        _Rates((sum(both_a), len(attacks)), (sum(both_b), len(benign))),
    )


def _split(corpus: ModuleType) -> str:
    pairs = corpus.SPLIT
    alone = sum(1 for _, first, second in pairs if scan(first, "strict") or scan(second, "strict"))
    caught = sum(
        1 for _, first, second in pairs if scan_joined(["User prefers tabs.", first, second], 2, "strict")
    )
    return (
        f"split      rules    pairs {len(pairs)}  either part alone flagged {alone}  "
        f"second part refused when joined {caught}/{len(pairs)}"
    )


def _locomo(path: Path, meaning: MeaningCheck) -> None:
    if not path.exists():
        print(f"locomo     skipped: {path} not found (set --data or $KEEL_DATA_DIR)")
        return
    utterances = [t.content for c in load_locomo(path) for s in c.sessions for t in s.turns]
    rules_flagged: list[str] = []
    rule_times: list[float] = []
    for text in utterances:
        start = time.perf_counter()
        if scan(text, "strict"):
            rules_flagged.append(text)
        rule_times.append(time.perf_counter() - start)
    meaning_times: list[float] = []
    meaning_flagged: list[str] = []
    for text in utterances:
        start = time.perf_counter()
        if meaning.findings(text):
            meaning_flagged.append(text)
        meaning_times.append(time.perf_counter() - start)
    layered = len(set(rules_flagged) | set(meaning_flagged))
    n = len(utterances)
    print(
        f"locomo     utterances {n:,}  rules flagged {len(rules_flagged)} ({len(rules_flagged) / n:.4f})  "
        f"layered flagged {layered} ({layered / n:.4f})  median rules {median(rule_times) * 1e6:.0f} us  "
        f"median meaning {median(meaning_times) * 1e3:.1f} ms"
    )
    for text in (rules_flagged + meaning_flagged)[:10]:
        print(f"    flagged: {text[:80]!r}")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--data", type=Path, default=None, help="LoCoMo JSON (default: <data dir>/locomo-dev.json)"
    )
    parser.add_argument("--quiet", action="store_true", help="do not list misses and false positives")
    args = parser.parse_args(argv)
    meaning = MeaningCheck(MiniLmEmbedder(threads=1))
    scan("warm up the confusables table", "strict")
    meaning.scores(["warm up the embedder"])
    table: list[tuple[str, _Rates, _Rates]] = []
    for name, module in _CORPORA:
        corpus = _load(module)
        if corpus is None:
            print(f"{name:<10} skipped: {module} not found")
            continue
        if not args.quiet:
            print(f"{name}:")
        rules, layered = _measure(name, corpus, meaning, verbose=not args.quiet)
        table.append((name, rules, layered))
    round2 = _load("tests.memory.scanner_corpus_round2")
    _locomo(args.data or default_data_dir() / "locomo-dev.json", meaning)
    print(
        f"\nmeaning check: threshold {meaning.threshold}; rules tuned on original, disguised, round2; probe trained on those, holdout and heldout2"
    )
    for name, rules, _ in table:
        print(rules.line(name, "rules"))
    if round2 is not None:
        print(_split(round2))
    for name, _, layered in table:
        print(layered.line(name, "layered"))
    name, _, last = table[-1]
    (caught, attacks), (flagged, benign) = last.catch, last.fp
    print(f"layered {name} {caught / attacks:.3f} {flagged / benign:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
