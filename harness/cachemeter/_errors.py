"""The cache meter's errors, defined (and drawn in the tree) in `harness.errors`."""

from __future__ import annotations

from harness.errors import MeterError, MeterInputError

__all__ = ["MeterError", "MeterInputError"]
