"""A persistent sorted set of string keys, for prefix listing in O(log n + k).

Two layers. ``_Tree`` is a persistent B-tree of tuples: a leaf is a sorted tuple
of keys; an inner node is a pair ``(maxes, children)`` where ``maxes[i]`` is the
largest key under ``children[i]``; every leaf is at the same depth. A change
copies one leaf and the inner nodes above it and shares every other node, so it
costs ``O(leaf_size + fanout * log n)`` pointer copies however large the tree.

``SortedKeys`` in front of it makes a change O(1): ``add`` and ``remove`` only
record the key, and the next read (a listing, a membership test) sorts every
recorded change into the tree at once, and keeps the result. A store that takes
a million new keys and then lists them pays one sort, not a million inserts into
a tree that no longer fits in the CPU's cache; one that lists after each write
pays one insert per write, as an eager index would.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterable, Iterator
from itertools import islice
from typing import Any, Final

from weft.errors import StoreError

LEAF_SIZE: Final = 128
"""Most keys in a leaf: an insert copies one leaf, so smaller is cheaper to change."""
FANOUT: Final = 64
"""Most children of an inner node: a million keys are three or four levels deep."""
SHARED_LOG: Final = 32
"""A fork shares a version that recorded at most this many changes (whichever owner
changes it second copies them) rather than starting a version of its own: a store forked
for every write (a transaction, a plan call) then keeps one version per 32 writes, not one
per write, until its keys are read."""
REBUILD_SHARE: Final = 8
"""Recorded changes are inserted one by one while fewer than 1/8 of the keys, and
merged into a rebuilt tree from there (a sorted merge beats that many path copies)."""

# A node is a leaf ``tuple[str, ...]`` or an inner ``(maxes, children)``; typed as
# ``Any`` because which one it is follows from its depth, not from a check.
_Node = Any
_Shape = tuple[int, int, int, int]
"""Largest and smallest leaf, largest and smallest inner node (but the root)."""
_Change = str | tuple[str]
"""A recorded change: a key added, or a 1-tuple of a key removed."""
_Log = list[_Change]


class SortedKeys:
    """Immutable: ``add`` and ``remove`` return a new set sharing structure with this one.

    ``leaf_size`` and ``fanout`` set the largest leaf and inner node of the tree;
    the defaults suit every size, small values exist to exercise splits and joins.
    """

    __slots__ = ("_pending", "_shape", "_sorted")

    def __init__(self, *, leaf_size: int = LEAF_SIZE, fanout: int = FANOUT) -> None:
        if leaf_size < 4 or fanout < 8:
            raise StoreError(
                f"a key index needs leaf_size >= 4 and fanout >= 8, got {leaf_size} and "
                f"{fanout}; leave them out for the defaults ({LEAF_SIZE}, {FANOUT})"
            )
        self._shape: _Shape = (leaf_size, leaf_size // 4, fanout, fanout // 4)
        self._sorted: _Tree | None = _Tree((), 0, 0, self._shape)
        # When not sorted yet: the version the changes apply to, a log of changes (oldest
        # first, shared with later versions while they append to it) and how many of
        # them are this version's. One list, not a chain of small tuples: CPython's cyclic
        # collector leaves such a chain tracked and would walk a million of them.
        self._pending: tuple[SortedKeys, _Log | None, int] | None = None

    def _changed(self, change: _Change) -> SortedKeys:
        new = SortedKeys.__new__(SortedKeys)
        new._shape, new._sorted = self._shape, None
        pending = self._pending
        if pending is None:  # sorted (or just sorted by another thread): build on it
            new._pending = (self, [change], 1)
            return new
        base, log, count = pending
        if log is None:  # the first change after a fork
            log = [change]
        else:
            log.append(change)
            if log[count] is not change:  # a later version (or thread) took the place first
                log = log[:count]
                log.append(change)
        new._pending = (base, log, count + 1)
        return new

    def add(self, key: str) -> SortedKeys:
        """This set with ``key``."""
        return self._changed(key)

    def remove(self, key: str) -> SortedKeys:
        """This set without ``key``."""
        return self._changed((key,))

    def fork(self) -> SortedKeys:
        """This set, for two owners that change it apart (a store and its fork): the changes
        recorded so far are then sorted in once for both, not once by each of them."""
        pending = self._pending
        # sorted, a fork's start already, or few enough changes to share
        if pending is None or pending[1] is None or pending[2] <= SHARED_LOG:
            return self
        new = SortedKeys.__new__(SortedKeys)
        new._shape, new._sorted, new._pending = self._shape, None, (self, None, 0)
        return new

    def _tree(self) -> _Tree:
        """The sorted tree of this version, sorting in what was recorded (once: it is kept).

        Versions shared by forks are sorted on the way, oldest first, so every fork
        finds them done. Safe under threads: a version is marked sorted before its
        record is dropped, and sorting twice gives the same tree.
        """
        tree = self._sorted
        if tree is not None:
            return tree
        unsorted: list[tuple[SortedKeys, _Log | None, int]] = []
        version = self
        while True:
            tree = version._sorted
            pending = version._pending
            if tree is not None:
                break
            if pending is None:  # sorted by another thread in between
                tree = version._sorted
                assert tree is not None
                break
            unsorted.append((version, pending[1], pending[2]))
            version = pending[0]
        for version, log, count in reversed(unsorted):
            if log is not None:
                tree = tree.changed(islice(log, count))
            version._sorted = tree
            version._pending = None
        return tree

    def __len__(self) -> int:
        return self._tree().length

    def __contains__(self, key: str) -> bool:
        return self._tree().contains(key)

    def with_prefix(self, prefix: str) -> Iterator[str]:
        """Keys starting with ``prefix``, in sorted order."""
        return self._tree().with_prefix(prefix)

    def __iter__(self) -> Iterator[str]:
        for leaf in self._tree().leaves():
            yield from leaf


class _Tree:
    """A persistent B-tree of keys: ``add`` and ``remove`` return a new tree sharing the rest.

    A node that grows past its largest size splits in two; one that shrinks below a
    quarter of it joins its left (or right) neighbour, and the pair splits again if
    it is too large, so every node but the root stays at least a quarter full.
    """

    __slots__ = ("height", "length", "root", "shape")

    def __init__(self, root: _Node, height: int, length: int, shape: _Shape) -> None:
        self.root = root
        self.height = height  # inner levels above the leaves
        self.length = length
        self.shape = shape

    @classmethod
    def from_sorted(cls, keys: list[str], shape: _Shape) -> _Tree:
        """A tree of ``keys`` (sorted, distinct), its nodes three quarters full."""
        if not keys:
            return cls((), 0, 0, shape)
        bounds = _even_bounds(len(keys), shape[0] * 3 // 4)
        nodes: list[_Node] = [tuple(keys[start:end]) for start, end in bounds]
        maxes = [leaf[-1] for leaf in nodes]
        height, fill = 0, shape[2] * 3 // 4
        while len(nodes) > 1:
            nodes = [
                (tuple(maxes[start:end]), tuple(nodes[start:end]))
                for start, end in _even_bounds(len(nodes), fill)
            ]
            maxes = [node[0][-1] for node in nodes]
            height += 1
        return cls(nodes[0], height, len(keys), shape)

    def changed(self, changes: Iterable[_Change]) -> _Tree:
        """This tree with recorded ``changes`` (oldest first) applied; the newest change of
        a key is the one that counts."""
        latest: dict[str, bool] = {}
        for change in changes:
            if change.__class__ is str:
                latest[change] = True
            else:
                latest[change[0]] = False
        if len(latest) * REBUILD_SHARE < self.length:
            tree = self
            for key in sorted(latest):
                tree = tree.add(key) if latest[key] else tree.remove(key)
            return tree
        added = sorted(key for key, add in latest.items() if add)
        if not self.length:
            return _Tree.from_sorted(added, self.shape)
        merged = [key for leaf in self.leaves() for key in leaf]
        merged += added
        merged.sort()  # two sorted runs: merged in one pass
        kept = dict.fromkeys(merged)  # drops keys added that were there already
        for key, add in latest.items():
            if not add:
                kept.pop(key, None)
        return _Tree.from_sorted(list(kept), self.shape)

    def contains(self, key: str) -> bool:
        node = self.root
        for _ in range(self.height):
            maxes, children = node
            at = bisect_left(maxes, key)
            if at == len(maxes):
                return False
            node = children[at]
        pos = bisect_left(node, key)
        return pos < len(node) and node[pos] == key

    def add(self, key: str) -> _Tree:
        """This tree with ``key``; ``self`` if it was there already."""
        node, height = self.root, self.height
        path: list[tuple[_Node, int]] = []
        for _ in range(height):
            maxes = node[0]
            at = bisect_left(maxes, key)
            if at == len(maxes):
                at -= 1  # beyond every key: goes at the end of the last child
            path.append((node, at))
            node = node[1][at]
        pos = bisect_left(node, key)
        if pos < len(node) and node[pos] == key:
            return self
        leaf_max, _, fan_max, _ = self.shape
        leaf = node[:pos] + (key,) + node[pos:]
        # What replaces the child on the path in its parent: one node or two halves, and
        # their maxes, or None when the child's max is unchanged (most inserts).
        part: tuple[_Node, ...]
        part_maxes: tuple[str, ...] | None
        if len(leaf) > leaf_max:
            half = len(leaf) // 2
            part = (leaf[:half], leaf[half:])
            part_maxes = (leaf[half - 1], leaf[-1])
        else:
            part = (leaf,)
            part_maxes = (key,) if pos == len(node) else None
        for parent, at in reversed(path):
            maxes, children = parent
            children = children[:at] + part + children[at + 1 :]
            if part_maxes is not None:
                last = maxes[-1]
                maxes = maxes[:at] + part_maxes + maxes[at + 1 :]
            if len(children) > fan_max:
                half = len(children) // 2
                part = ((maxes[:half], children[:half]), (maxes[half:], children[half:]))
                part_maxes = (maxes[half - 1], maxes[-1])
            else:
                part = ((maxes, children),)
                if part_maxes is not None:
                    part_maxes = None if maxes[-1] is last else (maxes[-1],)
        if len(part) == 1:
            return _Tree(part[0], height, self.length + 1, self.shape)
        assert part_maxes is not None
        return _Tree((part_maxes, part), height + 1, self.length + 1, self.shape)

    def remove(self, key: str) -> _Tree:
        """This tree without ``key``; ``self`` if it was not there."""
        node, height = self.root, self.height
        path: list[tuple[_Node, int]] = []
        for _ in range(height):
            maxes = node[0]
            at = bisect_left(maxes, key)
            if at == len(maxes):
                return self
            path.append((node, at))
            node = node[1][at]
        pos = bisect_left(node, key)
        if pos == len(node) or node[pos] != key:
            return self
        leaf_max, leaf_min, fan_max, fan_min = self.shape
        child: _Node = node[:pos] + node[pos + 1 :]
        is_leaf = True
        for parent, at in reversed(path):
            maxes, children = parent
            if (len(child) if is_leaf else len(child[0])) >= (leaf_min if is_leaf else fan_min):
                children = children[:at] + (child,) + children[at + 1 :]
                top = child[-1] if is_leaf else child[0][-1]
                if top is not maxes[at]:
                    maxes = maxes[:at] + (top,) + maxes[at + 1 :]
            else:  # too small: join a neighbour (every node but the root has one)
                start = at - 1 if at else at
                left, right = (children[start], child) if at else (child, children[at + 1])
                part, part_maxes = _joined(left, right, is_leaf, leaf_max if is_leaf else fan_max)
                children = children[:start] + part + children[start + 2 :]
                maxes = maxes[:start] + part_maxes + maxes[start + 2 :]
            child, is_leaf = (maxes, children), False
        while height and len(child[0]) == 1:  # a root with one child gives way to it
            child, height = child[1][0], height - 1
        return _Tree(child, height, self.length - 1, self.shape)

    def with_prefix(self, prefix: str) -> Iterator[str]:
        node = self.root
        # the children after the path at each level (deepest last), and their height
        after: list[tuple[tuple[_Node, ...], int, int]] = []
        for level in range(self.height - 1, -1, -1):
            maxes, children = node
            at = bisect_left(maxes, prefix)
            if at == len(maxes):
                return
            after.append((children, at + 1, level))
            node = children[at]
        for i in range(bisect_left(node, prefix), len(node)):
            key = node[i]
            if not key.startswith(prefix):
                return
            yield key
        for children, start, level in reversed(after):
            for j in range(start, len(children)):
                for leaf in _leaves(children[j], level):
                    for key in leaf:
                        if not key.startswith(prefix):
                            return
                        yield key

    def leaves(self) -> Iterator[tuple[str, ...]]:
        return _leaves(self.root, self.height)


def _leaves(node: _Node, height: int) -> Iterator[tuple[str, ...]]:
    """The leaves under ``node`` (``height`` inner levels above them), in key order."""
    if height == 0:
        yield node
    elif height == 1:
        yield from node[1]
    else:
        for child in node[1]:
            yield from _leaves(child, height - 1)


def _joined(
    left: _Node, right: _Node, is_leaf: bool, most: int
) -> tuple[tuple[_Node, ...], tuple[str, ...]]:
    """Two neighbouring nodes as one, or as two even halves if one would hold more than
    ``most``; with their maxes."""
    if is_leaf:
        keys = left + right
        if len(keys) <= most:
            return (keys,), (keys[-1],)
        half = len(keys) // 2
        return (keys[:half], keys[half:]), (keys[half - 1], keys[-1])
    maxes, children = left[0] + right[0], left[1] + right[1]
    if len(children) <= most:
        return ((maxes, children),), (maxes[-1],)
    half = len(children) // 2
    return (
        ((maxes[:half], children[:half]), (maxes[half:], children[half:])),
        (maxes[half - 1], maxes[-1]),
    )


def _even_bounds(count: int, fill: int) -> Iterator[tuple[int, int]]:
    """``(start, end)`` of the fewest runs of at most ``fill`` items covering ``count``
    items, their sizes differing by one at most (so each holds more than ``fill / 2``)."""
    runs = -(-count // fill)
    size, extra = divmod(count, runs)
    start = 0
    for run in range(runs):
        end = start + size + (run < extra)
        yield start, end
        start = end
