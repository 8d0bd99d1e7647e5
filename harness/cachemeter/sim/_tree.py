"""A radix tree over packed token sequences: the shared structure of the prefix simulators.

Each node is an edge of tokens `[start, end)` (absolute positions from the root) plus:
`stamp` (last access, by request counter: the LRU order), `time` (last access in trace
seconds: the idle timeouts), `req` (the latest
request whose prompt covers the whole edge: any prefix along the edge is a prefix of that
request), and `marks` (values attached to exact prefix lengths inside the edge: where an
earlier request ended, where an Anthropic breakpoint was written). A mark at depth `p`
lives on the node with `start < p <= end`.

Why it is O(total tokens): a request walks one node per branch point and compares each edge
with one C-level slice comparison; a request that extends a leaf (a conversation that grew
by appending) extends that leaf in place instead of adding a node, so appending sessions
stay one edge deep. Edge labels reference the request's own packed bytes (no copy) except
when a split makes an inner edge, which gets its own small copy.
"""

from __future__ import annotations

import heapq
from bisect import bisect_left
from dataclasses import dataclass, field

from harness.cachemeter._seq import ITEM, common_prefix
from harness.cachemeter.sim._types import Clock, SimRequest

__all__ = ["Access", "ModelTrees", "Node", "RadixTree"]


@dataclass(slots=True, eq=False, repr=False)
class Node:
    """One edge of the tree. `src` holds the edge's tokens from absolute position `off` on.

    Compared and hashed by identity; no repr (it would walk the whole tree)."""

    parent: Node | None
    src: bytes
    off: int
    start: int
    end: int
    key: bytes
    stamp: float
    req: int
    time: float = 0.0
    children: dict[bytes, Node] = field(default_factory=dict, init=False)
    marks: dict[int, object] | None = field(default=None, init=False)
    dead: bool = field(default=False, init=False)


@dataclass(slots=True)
class Access:
    """What one request found in the tree, and the path it now occupies.

    `path` covers the whole request after the access: node `i` holds positions
    `(path[i].start, path[i].end]`, in order, so marks for any prefix length up to the
    request's length can be found with `locate`.
    """

    matched: int
    """Longest prefix shared with any earlier request in this tree (expired or not)."""
    source: int | None
    """An earlier request holding that whole prefix (the latest through the deepest edge)."""
    alive: int
    """Longest shared prefix whose nodes were all used at or after `expire_before`."""
    alive_source: int | None
    path: list[Node]
    used: float | None = None
    """When the whole matched prefix was last used (trace time), before this access."""

    def locate(self, depth: int) -> Node | None:
        """The path node whose edge holds prefix length `depth` (None for depth 0)."""
        if depth <= 0:
            return None
        ends = [node.end for node in self.path]
        i = bisect_left(ends, depth)
        return self.path[i] if i < len(self.path) else None


def _matched(child: Node, data: bytes, depth: int, n: int) -> int:
    """How far `data` (n tokens, matched up to `depth`) follows `child`'s edge: the depth reached."""
    lim = min(child.end, n)
    o = ITEM * (depth - child.off)
    if data[ITEM * depth : ITEM * lim] == child.src[o : o + ITEM * (lim - depth)]:
        return lim
    return depth + min(common_prefix(data, child.src, depth, 0, child.off), lim - depth)


class RadixTree:
    """Token radix tree with optional LRU leaf eviction (see the module docstring)."""

    def __init__(self, *, lru: bool = False) -> None:
        self.root = Node(None, b"", 0, 0, 0, b"", float("inf"), -1)
        self.size = 0
        """Tokens currently held."""
        self._heap: list[tuple[float, int, Node]] | None = [] if lru else None
        self._tick = 0

    def _push(self, node: Node) -> None:
        if self._heap is not None:
            self._tick += 1
            heapq.heappush(self._heap, (node.stamp, self._tick, node))

    def _split(self, child: Node, at: int) -> Node:
        """Cut `child` at absolute depth `at`; return the new upper node."""
        parent = child.parent
        assert parent is not None
        lo = ITEM * (child.start - child.off)
        hi = ITEM * (at - child.off)
        upper = Node(
            parent,
            child.src[lo:hi],
            child.start,
            child.start,
            at,
            child.key,
            child.stamp,
            child.req,
            child.time,
        )
        parent.children[child.key] = upper
        child.parent = upper
        child.start = at
        child.key = child.src[hi : hi + ITEM]
        upper.children[child.key] = child
        if child.marks:
            upper.marks = {d: v for d, v in child.marks.items() if d <= at}
            child.marks = {d: v for d, v in child.marks.items() if d > at}
        return upper

    def longest(self, data: bytes, n: int) -> int:
        """Longest prefix of `data` (n tokens) held in the tree; changes nothing."""
        node = self.root
        depth = 0
        while depth < n:
            child = node.children.get(data[ITEM * depth : ITEM * depth + ITEM])
            if child is None:
                break
            depth = _matched(child, data, depth, n)
            if depth < child.end:
                break
            node = child
        return depth

    def access(
        self,
        data: bytes,
        n: int,
        *,
        stamp: float,
        req: int,
        now: float = 0.0,
        expire_before: float | None = None,
    ) -> Access:
        """Match `data` (n tokens), then insert it, stamping every node on its path.

        Args:
            data: the packed request.
            n: its length in tokens.
            stamp: the LRU order written on the path (a request counter).
            req: the request's index, written as the path's `req` tag.
            now: the trace time written on the path.
            expire_before: nodes last used (`time`) before this count as expired for `alive`.
        """
        node = self.root
        depth = 0
        source: int | None = None
        alive = 0
        alive_source: int | None = None
        fresh = True
        used: float | None = None
        path: list[Node] = []
        while depth < n:
            child = node.children.get(data[ITEM * depth : ITEM * depth + ITEM])
            if child is None:
                break
            m = _matched(child, data, depth, n)
            if fresh and expire_before is not None and child.time < expire_before:
                fresh = False
            if fresh:
                alive = m
                alive_source = child.req
            source = child.req
            used = child.time
            if m < child.end:
                upper = self._split(child, m)
                path.append(upper)
                node = upper
                depth = m
                break
            path.append(child)
            node = child
            depth = m
        matched = depth
        if depth < n:
            if node is not self.root and not node.children:
                # The request extends a leaf (an appended conversation): grow the edge in place.
                self.size += n - node.end
                node.src = data
                node.off = 0
                node.end = n
            else:
                b = ITEM * depth
                leaf = Node(node, data, 0, depth, n, data[b : b + ITEM], stamp, req, now)
                node.children[leaf.key] = leaf
                path.append(leaf)
                self.size += n - depth
        for p in path:
            p.stamp = stamp
            p.req = req
            p.time = now
        if path and not path[-1].children:
            self._push(path[-1])
        return Access(matched, source, alive, alive_source, path, used if matched else None)

    def evict(self, budget: int) -> int:
        """Drop least-recently-stamped leaf tokens until at most `budget` remain.

        Eviction is token-granular: the oldest leaf loses tokens from its tail; when it is
        empty its parent may become the next leaf. Returns the number of tokens dropped.
        """
        heap = self._heap
        if heap is None:
            raise ValueError("this tree was built without lru=True; it cannot evict")
        dropped = 0
        while self.size > budget and heap:
            stamp, _, node = heapq.heappop(heap)
            if node.dead or node.children or node.stamp != stamp:
                continue  # a stale entry: the node was touched, grew children, or is gone
            excess = self.size - budget
            length = node.end - node.start
            parent = node.parent
            assert parent is not None
            if length <= excess:
                del parent.children[node.key]
                node.dead = True
                self.size -= length
                dropped += length
                if parent is not self.root and not parent.children:
                    self._push(parent)
            else:
                node.end -= excess
                self.size -= excess
                dropped += excess
                self._push(node)
        return dropped


class ModelTrees:
    """What a tree simulator keeps across a trace: a radix tree per model, the count of
    requests fed and the trace clock."""

    def __init__(self, *, lru: bool = False) -> None:
        self.trees: dict[str, RadixTree] = {}
        self.count = 0
        self.clock = Clock()
        self._lru = lru

    def next(self, request: SimRequest) -> tuple[int, float]:
        """Count `request` in: its index in the trace and its time on the clock."""
        idx = self.count
        self.count += 1
        return idx, self.clock.tick(request)

    def tree(self, model: str) -> RadixTree:
        """The tree of `model`'s requests (made on its first request)."""
        tree = self.trees.get(model)
        if tree is None:
            tree = self.trees[model] = RadixTree(lru=self._lru)
        return tree
