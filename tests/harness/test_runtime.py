"""The collector setting for hosts of many sessions: raised, never lowered, restorable."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from harness.runtime import SESSIONS_GC_YOUNG_THRESHOLD, tune_gc_for_sessions


@pytest.fixture(autouse=True)
def restore_gc() -> Iterator[None]:
    before = gc.get_threshold()
    yield
    gc.set_threshold(*before)


def test_the_young_threshold_is_raised_and_the_old_ones_kept() -> None:
    gc.set_threshold(700, 10, 10)
    previous = tune_gc_for_sessions()
    assert previous == (700, 10, 10)
    assert gc.get_threshold() == (SESSIONS_GC_YOUNG_THRESHOLD, 10, 10)
    gc.set_threshold(*previous)
    assert gc.get_threshold() == (700, 10, 10)


def test_a_higher_threshold_set_by_the_host_is_not_lowered() -> None:
    gc.set_threshold(50_000, 20, 10)
    tune_gc_for_sessions(10_000)
    assert gc.get_threshold() == (50_000, 20, 10)


def test_a_threshold_that_would_disable_the_collector_is_refused() -> None:
    with pytest.raises(ValueError, match="positive"):
        tune_gc_for_sessions(0)
