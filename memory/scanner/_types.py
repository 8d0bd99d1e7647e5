"""The scanner's value types: scopes, categories, findings, and the scan window."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

__all__ = ["SCAN_WINDOW", "Finding", "FindingCategory", "ScanScope"]

ScanScope = Literal["strict", "context"]
FindingCategory = Literal[
    "injection",
    "role_hijack",
    "c2",
    "exfiltration",
    "persistence",
    "secret",
    "invisible_unicode",
    "oversize",
]

SCAN_WINDOW = 65_536
"""Characters scanned; longer text is truncated (callers refuse text they cannot fully scan)."""


@dataclass(frozen=True, slots=True)
class Finding:
    """One thing the scanner objects to.

    Attributes:
        id: a stable pattern id, e.g. `ignore_instructions` or `invisible_unicode_U+200B`.
        category: the threat family.
        description: a short human explanation.
    """

    id: str
    category: FindingCategory
    description: str
