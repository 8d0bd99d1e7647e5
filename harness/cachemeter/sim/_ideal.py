"""The `ideal` simulator: the longest prefix shared with ANY earlier request — the ceiling.

It also answers the content question the attribution needs: which earlier request gives
that prefix, whether that request is wholly a prefix of this one (then the miss is only
the new suffix), and whether a request of *another* model would have shared more (the
cache was lost because the model changed).
"""

from __future__ import annotations

from dataclasses import dataclass

from harness.cachemeter.sim._tree import RadixTree
from harness.cachemeter.sim._types import SimRequest, SimStep

__all__ = ["IdealSimulator", "PrefixMatch"]


@dataclass(frozen=True, slots=True)
class PrefixMatch:
    """The content view of one request against everything before it.

    Attributes:
        prefix: longest prefix shared with an earlier request of the same model.
        source: that request's feed index (one that ends exactly there when there is one).
        source_is_prefix: an earlier same-model request ends exactly at `prefix`: this
            request only appended to it.
        seen_model: an earlier request used this model.
        other_prefix: longest prefix shared with an earlier request of another model.
        other_model: that request's model.
    """

    prefix: int
    source: int | None
    source_is_prefix: bool
    seen_model: bool
    other_prefix: int = 0
    other_model: str | None = None


class IdealSimulator:
    """Longest common token prefix with any earlier request of the same model (a radix tree)."""

    def __init__(self) -> None:
        self._trees: dict[str, RadixTree] = {}
        self._count = 0

    @property
    def name(self) -> str:
        return "ideal"

    def match(self, request: SimRequest) -> PrefixMatch:
        """Answer for one request with the full content view, then remember it."""
        data, n = request.tokens, request.n_tokens
        tree = self._trees.get(request.model)
        seen = tree is not None
        other, other_model = 0, None
        # Only traces that switch models pay for this walk of the other models' trees.
        for model, other_tree in self._trees.items():
            if model != request.model:
                shared = other_tree.longest(data, n)
                if shared > other:
                    other, other_model = shared, model
        if tree is None:
            tree = self._trees[request.model] = RadixTree()
        access = tree.access(data, n, stamp=self._count, req=self._count)
        prefix = access.matched
        source = access.source
        holder = access.locate(prefix) or tree.root
        marks = holder.marks
        is_prefix = marks is not None and prefix in marks
        if marks is not None and is_prefix:
            ended = marks[prefix]
            assert isinstance(ended, int)
            source = ended
        end_node = access.locate(n) or tree.root
        if end_node.marks is None:
            end_node.marks = {}
        end_node.marks[n] = self._count
        self._count += 1
        return PrefixMatch(prefix, source, is_prefix, seen, other, other_model)

    def feed(self, request: SimRequest) -> SimStep:
        m = self.match(request)
        return SimStep(reusable=m.prefix, prefix=m.prefix, source=m.source, potential=m.prefix)
