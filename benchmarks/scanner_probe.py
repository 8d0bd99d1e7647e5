"""Options for the scanner's meaning check, measured; and the probe it ships, trained.

    python benchmarks/scanner_probe.py [--write]

Both options read the local embedder's vectors (all-MiniLM-L6-v2 int8, the `semantic`
extra). Each is trained on four of the five older corpora (tests/memory/scanner_corpus.py,
scanner_corpus_disguised.py, scanner_corpus_round2.py, scanner_corpus_holdout.py,
scanner_corpus_heldout2.py) and tested on the fifth, so every number is on texts it never saw:

- knn: a text is an attack when its nearest labelled attack is at least `tau` close and
  closer than its nearest harmless text by `margin`;
- probe: logistic regression on the vector (L2 1.0, full-batch gradient descent from zero:
  deterministic), reported at a score threshold.

Until issue 43 the probe was trained on the first three only; the two held-out corpora of
issues 16 and 28 joined the training set once a third one was written
(scanner_corpus_heldout3.py), which is never read here. Leave-one-corpus-out over the five
kept L2 1.0 and the 0.9 threshold: the only setting whose mean false-positive rate on the
unseen corpus stayed under 0.05 (0.039) with the best catch. With `--write` the probe is
trained on all five and written to memory/scanner/meaning_probe.json. The last line is
`probe <threshold> catch <worst> fp <worst>`.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # run as a script from anywhere: this checkout's packages win

from memory.providers.semantic import MiniLmEmbedder  # noqa: E402
from tests.memory import (  # noqa: E402
    scanner_corpus,
    scanner_corpus_disguised,
    scanner_corpus_heldout2,
    scanner_corpus_holdout,
    scanner_corpus_round2,
)

Matrix = NDArray[np.float64]
_CORPORA = {
    "original": scanner_corpus,
    "disguised": scanner_corpus_disguised,
    "round2": scanner_corpus_round2,
    "holdout": scanner_corpus_holdout,
    "heldout2": scanner_corpus_heldout2,
}
_SCALE = 4.0  # unit vectors have tiny coordinates; scaling makes plain gradient descent converge
_OUT = REPO / "memory" / "scanner" / "meaning_probe.json"


def train_probe(
    x: Matrix, y: Matrix, *, l2: float = 1.0, steps: int = 3000, rate: float = 0.5
) -> tuple[Matrix, float]:
    """Logistic regression by full-batch gradient descent; returns weights for *unscaled* vectors."""
    xs = x * _SCALE
    w = np.zeros(x.shape[1])
    b = 0.0
    for _ in range(steps):
        p = 1.0 / (1.0 + np.exp(-(xs @ w + b)))
        w -= rate * (xs.T @ (p - y) / len(y) + l2 * w / len(y))
        b -= rate * float((p - y).mean())
    return w * _SCALE, b


def _sigmoid(z: Matrix) -> Matrix:
    out: Matrix = 1.0 / (1.0 + np.exp(-z))
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help=f"write the probe trained on all five to {_OUT}")
    args = parser.parse_args(argv)
    embedder = MiniLmEmbedder(threads=2)
    vectors: dict[str, tuple[Matrix, Matrix]] = {}
    for name, corpus in _CORPORA.items():
        attacks = embedder.embed([t for _, t in corpus.ATTACKS]).astype(np.float64)
        benign = embedder.embed(list(corpus.BENIGN)).astype(np.float64)
        vectors[name] = (attacks, benign)
    worst: dict[float, tuple[float, float]] = {}
    for test in _CORPORA:
        train = [n for n in _CORPORA if n != test]
        a = np.concatenate([vectors[n][0] for n in train])
        b = np.concatenate([vectors[n][1] for n in train])
        ta, tb = vectors[test]
        for tau, margin in ((0.5, 0.1), (0.6, 0.05), (0.7, 0.0)):
            near_a, near_b = (ta @ a.T).max(axis=1), (ta @ b.T).max(axis=1)
            knn_catch = float(((near_a >= tau) & (near_a - near_b >= margin)).mean())
            near_a, near_b = (tb @ a.T).max(axis=1), (tb @ b.T).max(axis=1)
            knn_fp = float(((near_a >= tau) & (near_a - near_b >= margin)).mean())
            print(
                f"knn    {'+'.join(train):<18} -> {test:<9} tau {tau:.2f} margin {margin:.2f}  "
                f"catch {knn_catch:.3f}  fp {knn_fp:.3f}"
            )
        w, bias = train_probe(np.concatenate([a, b]), np.r_[np.ones(len(a)), np.zeros(len(b))])
        for threshold in (0.7, 0.8, 0.9, 0.95):
            catch = float((_sigmoid(ta @ w + bias) >= threshold).mean())
            fp = float((_sigmoid(tb @ w + bias) >= threshold).mean())
            low_catch, high_fp = worst.get(threshold, (1.0, 0.0))
            worst[threshold] = (min(low_catch, catch), max(high_fp, fp))
            print(
                f"probe  {'+'.join(train):<18} -> {test:<9} threshold {threshold:.2f}       "
                f"catch {catch:.3f}  fp {fp:.3f}"
            )
    if args.write:
        a = np.concatenate([v[0] for v in vectors.values()])
        b = np.concatenate([v[1] for v in vectors.values()])
        w, bias = train_probe(np.concatenate([a, b]), np.r_[np.ones(len(a)), np.zeros(len(b))])
        sizes = ", ".join(f"{n} {len(v[0])}+{len(v[1])}" for n, v in vectors.items())
        payload = {
            "model_id": embedder.model_id,
            "trained_on": f"attacks+benign: {sizes} (benchmarks/scanner_probe.py)",
            "bias": round(bias, 6),
            "weights": [round(float(x), 6) for x in w],
        }
        _OUT.write_text(json.dumps(payload, indent=0) + "\n", encoding="utf-8")
        print(f"wrote {_OUT.relative_to(REPO)}")
    low_catch, high_fp = worst[0.9]
    print(f"probe 0.90 catch {low_catch:.3f} fp {high_fp:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
