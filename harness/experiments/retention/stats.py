"""Paired bootstrap: how sure is a difference between two arms scored on the same items?

Every arm of the retention eval scores the same items, so the question is the mean of the
per-item differences (arm − off). `paired_bootstrap` resamples the items with replacement
(a fixed seed, so a report is reproducible) and returns the mean difference with the
2.5th and 97.5th percentiles of the resampled means: a 95% interval. With zero differences
everywhere the interval is exactly [0, 0]; with a handful of items it is wide — that is the
point of printing it.
"""

from __future__ import annotations

import random
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["BOOTSTRAP_RESAMPLES", "Interval", "paired_bootstrap"]

BOOTSTRAP_RESAMPLES = 2000


@dataclass(frozen=True, slots=True)
class Interval:
    """A mean paired difference and its bootstrap 95% interval."""

    mean: float
    low: float
    high: float
    n: int


def paired_bootstrap(
    a: Sequence[float], b: Sequence[float], *, resamples: int = BOOTSTRAP_RESAMPLES, seed: int = 0
) -> Interval | None:
    """The mean of `a[i] - b[i]` with its 95% interval; None when there are no pairs.

    Raises:
        ValueError: `a` and `b` differ in length (they must score the same items).
    """
    if len(a) != len(b):
        raise ValueError(f"paired samples differ in length: {len(a)} and {len(b)}")
    if not a:
        return None
    diffs = [x - y for x, y in zip(a, b, strict=True)]
    rng = random.Random(seed)
    n = len(diffs)
    means = sorted(statistics.fmean(rng.choices(diffs, k=n)) for _ in range(resamples))
    low = means[int(0.025 * (resamples - 1))]
    high = means[round(0.975 * (resamples - 1))]
    return Interval(statistics.fmean(diffs), low, high, n)
