"""Simulators of local inference engines: vLLM and SGLang (llama.cpp: `_llamacpp`).

Rules (shared/reference/caching.md §2.5–2.7):

- vLLM: KV blocks of `block_size` tokens, each identified by a hash chained from its
  parent's hash and its own tokens; only full blocks are cached; the last prompt token is
  always recomputed, so hits are `floor((n - 1) / B) * B` at most. With a budget (a pool of
  blocks) eviction follows vLLM's free queue: blocks are taken from its head; a finished
  request's blocks are appended to its tail in reverse order, so its last block goes first.
  A request longer than the whole pool caches only the blocks that fit.
- SGLang: a radix tree at token granularity; the last token is always recomputed
  (`Req.adjust_max_prefix_ids` caps the match at n - 1). With a token budget, after each
  request the least-recently-used leaves are trimmed until the budget holds.

Both take an optional idle timeout `idle_s` (a TTL-based eviction policy, or a deployment
that drops its cache when idle): an entry unused for longer is gone, and the tokens it would
have served are lost to `ttl_expired`. Trace timestamps are the clock.

Caches are per model (another model means another server). Without a budget, vLLM's hits
are computed from a radix tree instead of a block-hash set: a full block is cached exactly
when an earlier request shared every token up to its end, which the tree answers directly.
"""

from __future__ import annotations

from collections import OrderedDict

from harness.cachemeter._seq import ITEM
from harness.cachemeter.sim._tree import ModelTrees
from harness.cachemeter.sim._types import (
    LossReason,
    SimRequest,
    SimStep,
    check_idle,
    idle_cutoff,
    last_token_rule,
)

__all__ = ["SglangSimulator", "VllmSimulator"]


class _BlockPool:
    """vLLM's block pool for one model: hash → blocks, and the free queue (head = next out)."""

    def __init__(self, size: int) -> None:
        self.size = size
        self.never_used = size
        self.next_id = 0
        self.free: OrderedDict[int, None] = OrderedDict()
        self.block_hash: dict[int, int | None] = {}
        self.writer: dict[int, int] = {}
        self.used: dict[int, float] = {}
        self.by_hash: dict[int, dict[int, None]] = {}

    def forget(self, block: int) -> None:
        """Unregister `block`'s hash: its content is gone (taken over, or idle too long)."""
        old = self.block_hash.pop(block, None)
        if old is not None:
            holders = self.by_hash[old]
            del holders[block]
            if not holders:
                del self.by_hash[old]

    def forget_idle(self, hashes: list[int], cutoff: float) -> None:
        """Unregister every block of these hashes last used before `cutoff`."""
        for h in hashes:
            for block in [blk for blk in self.by_hash.get(h, ()) if self.used[blk] < cutoff]:
                self.forget(block)

    def take(self) -> int | None:
        # Never-used blocks sit at the head of vLLM's initial free queue, ahead of any freed one.
        if self.never_used > 0:
            self.never_used -= 1
            self.next_id += 1
            return self.next_id - 1
        if not self.free:
            return None
        block, _ = self.free.popitem(last=False)
        self.forget(block)
        return block


class VllmSimulator:
    """vLLM automatic prefix caching (see the module docstring)."""

    def __init__(
        self, *, block_size: int = 16, budget_blocks: int | None = None, idle_s: float | None = None
    ) -> None:
        if block_size < 1:
            raise ValueError(f"block_size must be at least 1, got {block_size!r}")
        if budget_blocks is not None and budget_blocks < 1:
            raise ValueError(f"budget_blocks must be at least 1, got {budget_blocks!r}")
        check_idle(idle_s)
        self.block_size = block_size
        self.budget_blocks = budget_blocks
        self.idle_s = idle_s
        self._m = ModelTrees()
        self._pools: dict[str, _BlockPool] = {}

    @property
    def name(self) -> str:
        return "vllm"

    def _rule(self, prefix: int, n: int) -> int:
        b = self.block_size
        return last_token_rule(prefix, n) // b * b

    def feed(self, request: SimRequest) -> SimStep:
        idx, now = self._m.next(request)
        if self.budget_blocks is None:
            return self._feed_unbounded(request, idx, now)
        return self._feed_pool(request, idx, self.budget_blocks, now)

    def _feed_unbounded(self, request: SimRequest, idx: int, now: float) -> SimStep:
        tree = self._m.tree(request.model)
        n = request.n_tokens
        access = tree.access(
            request.tokens, n, stamp=idx, req=idx, now=now, expire_before=idle_cutoff(now, self.idle_s)
        )
        hits = self._rule(access.alive, n)
        potential = self._rule(access.matched, n)
        return SimStep(
            reusable=hits,
            prefix=access.alive // self.block_size * self.block_size,
            source=access.alive_source if hits else None,
            potential=potential,
            loss="ttl_expired" if potential > hits else None,
            policy="block_rounding",
        )

    def _feed_pool(self, request: SimRequest, idx: int, budget: int, now: float) -> SimStep:
        pool = self._pools.get(request.model)
        if pool is None:
            pool = self._pools[request.model] = _BlockPool(budget)
        data, n, b = request.tokens, request.n_tokens, self.block_size
        hashes: list[int] = []
        h: int | None = None
        step = ITEM * b
        for j in range(n // b):
            h = hash((h, data[j * step : (j + 1) * step]))
            hashes.append(h)
        limit = (n - 1) // b if n > 0 else 0
        cutoff = idle_cutoff(now, self.idle_s)
        cached = 0
        lapsed = 0
        hit_blocks: list[int] = []
        while cached < len(hashes) and hashes[cached] in pool.by_hash:
            if cutoff is not None:
                holders = pool.by_hash[hashes[cached]]
                if all(pool.used[blk] < cutoff for blk in holders):
                    # Idle too long: gone, and so is every block after it (used no later).
                    reach = cached
                    while reach < len(hashes) and hashes[reach] in pool.by_hash:
                        reach += 1
                    lapsed = min(reach, limit) * b
                    pool.forget_idle(hashes[cached:reach], cutoff)
                    break
                pool.forget_idle(hashes[cached : cached + 1], cutoff)  # idle duplicates
            if cached < limit:
                # Among duplicates vLLM takes the first block registered under the hash.
                hit_blocks.append(next(iter(pool.by_hash[hashes[cached]])))
            cached += 1
        source = pool.writer[hit_blocks[-1]] if hit_blocks else None
        for block in hit_blocks:
            del pool.free[block]  # touched: in use, out of the free queue
        new_blocks: list[int] = []
        for _ in range(-(-n // b) - len(hit_blocks)):
            taken = pool.take()
            if taken is None:
                break  # the request is longer than the pool: the rest is not cached
            new_blocks.append(taken)
        for k, block in enumerate(new_blocks, start=len(hit_blocks)):
            if k < len(hashes):
                pool.block_hash[block] = hashes[k]
                pool.by_hash.setdefault(hashes[k], {})[block] = None
                pool.writer[block] = idx
            else:
                pool.block_hash[block] = None
        for block in reversed(hit_blocks + new_blocks):
            pool.free[block] = None
            pool.used[block] = now
        hits = len(hit_blocks) * b
        potential = max(hits, lapsed)
        if request.known_prefix is not None:
            potential = max(potential, self._rule(request.known_prefix, n))
        loss: LossReason | None = None
        if potential > hits:
            loss = "ttl_expired" if lapsed > hits else "evicted"
        return SimStep(
            reusable=hits,
            prefix=cached * b,
            source=source,
            potential=potential,
            loss=loss,
            policy="block_rounding",
        )


class SglangSimulator:
    """SGLang RadixAttention (see the module docstring)."""

    def __init__(self, *, budget_tokens: int | None = None, idle_s: float | None = None) -> None:
        if budget_tokens is not None and budget_tokens < 1:
            raise ValueError(f"budget_tokens must be at least 1, got {budget_tokens!r}")
        check_idle(idle_s)
        self.budget_tokens = budget_tokens
        self.idle_s = idle_s
        self._m = ModelTrees(lru=budget_tokens is not None)

    @property
    def name(self) -> str:
        return "sglang"

    def feed(self, request: SimRequest) -> SimStep:
        idx, now = self._m.next(request)
        tree = self._m.tree(request.model)
        n = request.n_tokens
        access = tree.access(
            request.tokens, n, stamp=idx, req=idx, now=now, expire_before=idle_cutoff(now, self.idle_s)
        )
        if self.budget_tokens is not None:
            tree.evict(self.budget_tokens)
        hits = last_token_rule(access.alive, n)
        held = last_token_rule(access.matched, n)
        potential = held
        if self.budget_tokens is not None and request.known_prefix is not None:
            potential = max(held, last_token_rule(request.known_prefix, n))
        loss: LossReason | None = None
        if held > hits:
            loss = "ttl_expired"
        elif potential > hits:
            loss = "evicted"
        return SimStep(
            reusable=hits,
            prefix=access.alive,
            source=access.alive_source if access.alive else None,
            potential=potential,
            loss=loss,
        )
