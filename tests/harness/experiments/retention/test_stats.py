"""The paired bootstrap on known data."""

from __future__ import annotations

import pytest

from harness.experiments.retention.stats import paired_bootstrap


def test_zero_differences_give_an_interval_of_exactly_zero() -> None:
    a = [1.0, 0.0, 1.0, 1.0, 0.0] * 8
    ci = paired_bootstrap(a, list(a))
    assert ci is not None and (ci.mean, ci.low, ci.high) == (0.0, 0.0, 0.0)


def test_noisy_zero_mean_differences_give_an_interval_around_zero() -> None:
    a = [1.0, 0.0] * 20
    b = [0.0, 1.0] * 20
    ci = paired_bootstrap(a, b)
    assert ci is not None and ci.mean == 0.0
    assert ci.low < 0.0 < ci.high


def test_a_clear_gain_has_an_interval_above_zero() -> None:
    a = [1.0] * 30 + [0.0] * 10
    b = [0.0] * 30 + [0.0] * 10
    ci = paired_bootstrap(a, b)
    assert ci is not None and ci.mean == pytest.approx(0.75)
    assert 0.5 < ci.low <= 0.75 <= ci.high


def test_samples_of_different_lengths_are_refused() -> None:
    with pytest.raises(ValueError, match="differ in length"):
        paired_bootstrap([1.0], [1.0, 0.0])


def test_no_pairs_give_no_interval() -> None:
    assert paired_bootstrap([], []) is None
