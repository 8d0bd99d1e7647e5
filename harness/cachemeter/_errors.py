"""The cache meter's errors: all `KeelError`s, so the CLI prints them and exits 2.

KeelError
└── MeterError               the meter cannot run as asked (missing optional package, bad template)
    └── MeterInputError      a trace file is missing or a line is not a request; names the line
"""

from __future__ import annotations

from harness.errors import KeelError

__all__ = ["MeterError", "MeterInputError"]


class MeterError(KeelError):
    """The cache meter cannot do what was asked; the message says what to change."""


class MeterInputError(MeterError):
    """A trace cannot be read: the message names the file, the line and what is wrong."""
