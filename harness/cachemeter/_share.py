"""The one rule every ratio of the meter's tables follows: a share of nothing is `empty`."""

from __future__ import annotations

__all__ = ["share"]


def share(part: float, whole: float, *, empty: float = 0.0) -> float:
    """`part / whole`, or `empty` when `whole` is 0 (no requests, no tokens, no cost)."""
    return part / whole if whole else empty
