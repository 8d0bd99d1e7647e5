"""The holographic provider's exceptions.

HolographicError         root of everything this package raises on purpose
├── FactInputError       the request was wrong (empty content, unknown fact id, a
│                        duplicate on update): the tool answers with the message and
│                        nothing changes
└── FactStoreError       the database could not be opened or used (a translated
                         `sqlite3.Error`, numpy required but missing)
"""

from __future__ import annotations

from memory.errors import MemoryLayerError

__all__ = ["FactInputError", "FactStoreError", "HolographicError"]


class HolographicError(MemoryLayerError):
    """Root of the holographic provider's errors."""


class FactInputError(HolographicError):
    """A fact-store request that cannot be carried out as asked; nothing was changed."""


class FactStoreError(HolographicError):
    """The fact database failed; the message says which file and what to do."""
