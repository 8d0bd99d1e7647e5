"""Simulators of llama.cpp's prompt reuse: one slot, and llama-cpp-python's RAM cache.

Rules (shared/reference/caching.md §2.8): the common prefix with the previous prompt of the
one slot, last token always evaluated. `llamacpp-ram` keeps N prompt states (LlamaRAMCache)
and resumes from the one sharing the longest prefix. Caches are per model (another model
means another server).
"""

from __future__ import annotations

from collections import OrderedDict

from harness.cachemeter._seq import common_prefix
from harness.cachemeter.sim._types import SimRequest, SimStep, last_token_rule

__all__ = ["LlamaCppRamSimulator", "LlamaCppSimulator"]


class LlamaCppSimulator:
    """One llama.cpp slot: reuse the common prefix with the previous prompt only."""

    def __init__(self) -> None:
        self._slots: dict[str, tuple[bytes, int]] = {}
        self._count = 0

    @property
    def name(self) -> str:
        return "llamacpp"

    def feed(self, request: SimRequest) -> SimStep:
        idx = self._count
        self._count += 1
        previous = self._slots.get(request.model)
        shared, source = 0, None
        if previous is not None:
            shared, source = common_prefix(request.tokens, previous[0]), previous[1]
        self._slots[request.model] = (request.tokens, idx)
        return _slot_step(request, shared, source if shared else None)


class LlamaCppRamSimulator:
    """llama-cpp-python with its RAM prompt cache: resume from the best of N saved states."""

    def __init__(self, *, states: int = 8) -> None:
        if states < 1:
            raise ValueError(f"states must be at least 1, got {states!r}")
        self.states = states
        self._caches: dict[str, OrderedDict[bytes, int]] = {}
        self._count = 0

    @property
    def name(self) -> str:
        return "llamacpp-ram"

    def feed(self, request: SimRequest) -> SimStep:
        idx = self._count
        self._count += 1
        cache = self._caches.get(request.model)
        if cache is None:
            cache = self._caches[request.model] = OrderedDict()
        best, best_key, source = 0, None, None
        for key, req in reversed(cache.items()):  # most recent first: it wins ties
            shared = common_prefix(request.tokens, key)
            if shared > best:
                best, best_key, source = shared, key, req
        if best_key is not None:
            cache.move_to_end(best_key)  # a state that is read is recently used
        cache.pop(request.tokens, None)
        cache[request.tokens] = idx
        while len(cache) > self.states:
            cache.popitem(last=False)
        return _slot_step(request, best, source)


def _slot_step(request: SimRequest, shared: int, source: int | None) -> SimStep:
    n = request.n_tokens
    hits = last_token_rule(shared, n)
    potential = hits if request.known_prefix is None else max(hits, last_token_rule(request.known_prefix, n))
    return SimStep(
        reusable=hits,
        prefix=shared,
        source=source,
        potential=potential,
        loss="evicted" if potential > hits else None,
    )
