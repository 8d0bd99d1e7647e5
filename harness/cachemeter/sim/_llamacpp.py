"""Simulators of llama.cpp's prompt reuse: one slot, and llama-cpp-python's RAM cache.

Rules (shared/reference/caching.md §2.7–2.8): the common prefix with the previous prompt of
the one slot, last token always evaluated. `llamacpp-ram` keeps N prompt states (LlamaRAMCache)
and resumes from the one sharing the longest prefix. Caches are per model (another model
means another server). An optional idle timeout `idle_s` drops a state unused for longer
(a server that frees its slots when idle); what it would have served is `ttl_expired`.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass

from harness.cachemeter._seq import common_prefix
from harness.cachemeter.sim._types import (
    Clock,
    LossReason,
    SimRequest,
    SimStep,
    check_idle,
    last_token_rule,
)

__all__ = ["LlamaCppRamSimulator", "LlamaCppSimulator", "slot_step"]


@dataclass(slots=True)
class _State:
    """A saved prompt: which request left it, and when it was last used."""

    req: int
    used: float


class LlamaCppSimulator:
    """One llama.cpp slot: reuse the common prefix with the previous prompt only."""

    def __init__(self, *, idle_s: float | None = None) -> None:
        check_idle(idle_s)
        self.idle_s = idle_s
        self._slots: dict[str, tuple[bytes, _State]] = {}
        self._count = 0
        self._clock = Clock()

    @property
    def name(self) -> str:
        return "llamacpp"

    def feed(self, request: SimRequest) -> SimStep:
        idx = self._count
        self._count += 1
        now = self._clock.tick(request)
        previous = self._slots.get(request.model)
        shared, source, alive = 0, None, True
        if previous is not None:
            shared, source = common_prefix(request.tokens, previous[0]), previous[1].req
            alive = self.idle_s is None or previous[1].used >= now - self.idle_s
        self._slots[request.model] = (request.tokens, _State(idx, now))
        if not alive:
            return slot_step(request, 0, None, expired=shared)
        return slot_step(request, shared, source if shared else None)


class LlamaCppRamSimulator:
    """llama-cpp-python with its RAM prompt cache: resume from the best of N saved states."""

    def __init__(self, *, states: int = 8, idle_s: float | None = None) -> None:
        if states < 1:
            raise ValueError(f"states must be at least 1, got {states!r}")
        check_idle(idle_s)
        self.states = states
        self.idle_s = idle_s
        self._caches: dict[str, OrderedDict[bytes, _State]] = {}
        self._count = 0
        self._clock = Clock()

    @property
    def name(self) -> str:
        return "llamacpp-ram"

    def feed(self, request: SimRequest) -> SimStep:
        idx = self._count
        self._count += 1
        now = self._clock.tick(request)
        cache = self._caches.get(request.model)
        if cache is None:
            cache = self._caches[request.model] = OrderedDict()
        expired = 0
        if self.idle_s is not None:
            cutoff = now - self.idle_s
            for key in [k for k, state in cache.items() if state.used < cutoff]:
                expired = max(expired, common_prefix(request.tokens, key))
                del cache[key]
        best, best_key, source = 0, None, None
        for key, state in reversed(cache.items()):  # most recent first: it wins ties
            shared = common_prefix(request.tokens, key)
            if shared > best:
                best, best_key, source = shared, key, state.req
        if best_key is not None:
            cache[best_key].used = now
            cache.move_to_end(best_key)  # a state that is read is recently used
        cache.pop(request.tokens, None)
        cache[request.tokens] = _State(idx, now)
        while len(cache) > self.states:
            cache.popitem(last=False)
        return slot_step(request, best, source, expired=expired)


def slot_step(request: SimRequest, shared: int, source: int | None, *, expired: int = 0) -> SimStep:
    """`expired`: the prefix a state dropped for idleness would have given."""
    n = request.n_tokens
    hits = last_token_rule(shared, n)
    lapsed = last_token_rule(expired, n)
    potential = max(hits, lapsed)
    if request.known_prefix is not None:
        potential = max(potential, last_token_rule(request.known_prefix, n))
    loss: LossReason | None = None
    if potential > hits:
        loss = "ttl_expired" if lapsed > hits else "evicted"
    return SimStep(
        reusable=hits,
        prefix=shared,
        source=source,
        potential=potential,
        loss=loss,
    )
