"""The write scanner's catch and false-positive rates on three corpora, plus a LoCoMo FP check.

    python benchmarks/scanner.py [--data PATH]

Corpora (tests/memory/): `scanner_corpus.py` (the original hand-written one),
`scanner_corpus_disguised.py` (attacks in disguise and harmless look-alikes, written before
the issue-16 rules — but read while writing them, so optimistic), `scanner_corpus_holdout.py`
(written after the rules and never tuned on). Catch = share of attacks with any finding;
false positives = share of harmless notes with any finding, strict scope (memory writes).
Then every LoCoMo utterance (ordinary chat between two people) is scanned as a
false-positive check, and the median scan time per utterance is printed.

The last line is `catch <rate> fp <rate>`: the worst catch and the worst false-positive rate
over the original and disguised corpora (the issue's goal: catch >= 0.95, fp <= 0.02 on each).
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # run as a script from anywhere: this checkout's packages win

from benchmarks._locomo import load_locomo  # noqa: E402
from benchmarks._util import default_data_dir, median  # noqa: E402
from memory.scanner import FindingCategory, scan  # noqa: E402
from tests.memory import scanner_corpus, scanner_corpus_disguised, scanner_corpus_holdout  # noqa: E402


def _rates(
    name: str, attacks: Sequence[tuple[FindingCategory, str]], benign: Sequence[str], *, verbose: bool
) -> tuple[float, float]:
    missed = [text for _, text in attacks if not scan(text, "strict")]
    wrong_category = [
        text
        for category, text in attacks
        if (f := scan(text, "strict")) and category not in {x.category for x in f}
    ]
    flagged = [(text, [f.id for f in scan(text, "strict")]) for text in benign if scan(text, "strict")]
    catch = 1 - len(missed) / len(attacks)
    fp = len(flagged) / len(benign)
    print(
        f"{name:<10} attacks {len(attacks):>3}  catch {catch:.3f} ({len(attacks) - len(missed)}/{len(attacks)}, "
        f"{len(wrong_category)} under another category)   benign {len(benign):>3}  fp {fp:.3f} "
        f"({len(flagged)}/{len(benign)})"
    )
    if verbose:
        for text in missed:
            print(f"    missed: {text[:100]!r}")
        for text, ids in flagged:
            print(f"    flagged: {text[:80]!r} {ids}")
    return catch, fp


def _locomo(path: Path) -> None:
    if not path.exists():
        print(f"locomo     skipped: {path} not found (set --data or $KEEL_DATA_DIR)")
        return
    utterances = [t.content for c in load_locomo(path) for s in c.sessions for t in s.turns]
    flagged: list[tuple[str, list[str]]] = []
    times: list[float] = []
    for text in utterances:
        start = time.perf_counter()
        findings = scan(text, "strict")
        times.append(time.perf_counter() - start)
        if findings:
            flagged.append((text, [f.id for f in findings]))
    print(
        f"locomo     utterances {len(utterances):,}  flagged {len(flagged)} ({len(flagged) / len(utterances):.4f})  "
        f"median scan {median(times) * 1e6:.0f} us"
    )
    for text, ids in flagged[:20]:
        print(f"    flagged: {text[:80]!r} {ids}")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--data", type=Path, default=None, help="LoCoMo JSON (default: <data dir>/locomo-dev.json)"
    )
    parser.add_argument("--quiet", action="store_true", help="do not list misses and false positives")
    args = parser.parse_args(argv)
    verbose = not args.quiet
    scan("warm up the confusables table", "strict")
    original = _rates("original", scanner_corpus.ATTACKS, scanner_corpus.BENIGN, verbose=verbose)
    disguised = _rates(
        "disguised", scanner_corpus_disguised.ATTACKS, scanner_corpus_disguised.BENIGN, verbose=verbose
    )
    _rates("holdout", scanner_corpus_holdout.ATTACKS, scanner_corpus_holdout.BENIGN, verbose=verbose)
    _locomo(args.data or default_data_dir() / "locomo-dev.json")
    print(f"catch {min(original[0], disguised[0]):.3f} fp {max(original[1], disguised[1]):.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
