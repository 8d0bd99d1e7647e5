"""The façades' lazy names (`memory.lazy`): `harness` and `memory` install the same `__getattr__`."""

from memory.lazy import lazy_names

__all__ = ["lazy_names"]
