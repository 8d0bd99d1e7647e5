"""The fast simulators agree exactly with deliberately naive O(n²) reference versions.

The references below follow the written rules one token or one block at a time with plain
lists and tuples — slow, but easy to check by eye — and hypothesis feeds both the same
random traces: requests that reuse random prefixes of earlier ones, as agent traces do.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from harness.cachemeter import SimRequest
from harness.cachemeter._seq import pack
from harness.cachemeter.sim import IdealSimulator, LlamaCppSimulator, SglangSimulator, VllmSimulator


class NaiveVllm:
    """vLLM's rule with a block pool, block by block: keys are whole prefixes as tuples."""

    def __init__(self, block: int, budget: int | None) -> None:
        self.block = block
        self.budget = budget
        self.seen: set[tuple[int, ...]] = set()  # unlimited mode: every full block ever
        self.key: list[tuple[int, ...] | None] = []  # per allocated block
        self.registered: list[int] = []  # blocks holding a key, in registration order
        self.free: list[int] = []  # the free queue, head first

    def feed(self, tokens: list[int]) -> int:
        b, n = self.block, len(tokens)
        keys = [tuple(tokens[: (j + 1) * b]) for j in range(n // b)]
        limit = (n - 1) // b if n else 0
        if self.budget is None:
            hits = 0
            while hits < limit and keys[hits] in self.seen:
                hits += 1
            self.seen.update(keys)
            return hits * b
        hit_blocks: list[int] = []
        for j in range(limit):
            holders = [blk for blk in self.registered if self.key[blk] == keys[j]]
            if not holders:
                break
            hit_blocks.append(holders[0])
        for blk in hit_blocks:
            self.free.remove(blk)
        new: list[int] = []
        for _ in range(-(-n // b) - len(hit_blocks)):
            if len(self.key) < self.budget:
                self.key.append(None)
                blk = len(self.key) - 1
            elif self.free:
                blk = self.free.pop(0)
                if self.key[blk] is not None:
                    self.registered.remove(blk)
                self.key[blk] = None
            else:
                break
            new.append(blk)
        for j, blk in enumerate(new, start=len(hit_blocks)):
            if j < len(keys):
                self.key[blk] = keys[j]
                self.registered.append(blk)
        self.free.extend(reversed(hit_blocks + new))
        return len(hit_blocks) * b


class NaiveSglang:
    """A token trie as a dict of prefixes → last use; evict the oldest leaf token by token."""

    def __init__(self, budget: int | None) -> None:
        self.budget = budget
        self.used: dict[tuple[int, ...], int] = {}
        self.clock = 0

    def feed(self, tokens: list[int]) -> int:
        n = len(tokens)
        match = 0
        while match < n and tuple(tokens[: match + 1]) in self.used:
            match += 1
        for k in range(1, n + 1):
            self.used[tuple(tokens[:k])] = self.clock
        self.clock += 1
        if self.budget is not None:
            while len(self.used) > self.budget:
                parents = {p[:-1] for p in self.used}
                leaves = [p for p in self.used if p not in parents]
                del self.used[min(leaves, key=lambda p: self.used[p])]
        return max(0, min(match, n - 1))


def naive_ideal(history: list[list[int]], tokens: list[int]) -> int:
    best = 0
    for earlier in history:
        k = 0
        while k < min(len(earlier), len(tokens)) and earlier[k] == tokens[k]:
            k += 1
        best = max(best, k)
    return best


@st.composite
def traces(draw: st.DrawFn) -> list[list[int]]:
    """Requests over a tiny alphabet that extend, fork and repeat earlier requests."""
    count = draw(st.integers(1, 14))
    out: list[list[int]] = []
    for _ in range(count):
        suffix = draw(st.lists(st.integers(0, 2), max_size=12))
        fork = draw(st.booleans())
        if out and fork:
            base = draw(st.sampled_from(out))
            cut = draw(st.integers(0, len(base)))
            out.append(base[:cut] + suffix)
        else:
            out.append(suffix)
    return out


def _feed_all(sim: VllmSimulator | SglangSimulator | IdealSimulator, trace: list[list[int]]) -> list[int]:
    return [sim.feed(SimRequest(tokens=pack(t))).reusable for t in trace]


@settings(max_examples=300, deadline=None)
@given(trace=traces(), block=st.integers(1, 4), budget=st.one_of(st.none(), st.integers(1, 12)))
def test_vllm_agrees_with_the_naive_block_pool(
    trace: list[list[int]], block: int, budget: int | None
) -> None:
    naive = NaiveVllm(block, budget)
    assert _feed_all(VllmSimulator(block_size=block, budget_blocks=budget), trace) == [
        naive.feed(t) for t in trace
    ]


@settings(max_examples=300, deadline=None)
@given(trace=traces(), budget=st.one_of(st.none(), st.integers(1, 40)))
def test_sglang_agrees_with_the_naive_token_trie(trace: list[list[int]], budget: int | None) -> None:
    naive = NaiveSglang(budget)
    assert _feed_all(SglangSimulator(budget_tokens=budget), trace) == [naive.feed(t) for t in trace]


@settings(max_examples=200, deadline=None)
@given(trace=traces())
def test_ideal_and_llamacpp_agree_with_pairwise_comparison(trace: list[list[int]]) -> None:
    ideal, slot = IdealSimulator(), LlamaCppSimulator()
    for i, tokens in enumerate(trace):
        req = SimRequest(tokens=pack(tokens))
        assert ideal.feed(req).reusable == naive_ideal(trace[:i], tokens)
        expected_slot = naive_ideal(trace[i - 1 : i], tokens) if i else 0
        assert slot.feed(req).reusable == max(0, min(expected_slot, len(tokens) - 1))
