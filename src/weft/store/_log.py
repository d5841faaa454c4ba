"""Lists that grow by appends in O(1), built as a frozen list only when someone reads them.

A field reduced by ``append`` or ``extend`` (a conversation's messages, say) would
otherwise cost a copy of the whole list at every write, so a thread of 10,000 turns
would spend most of its time copying. Instead the store keeps an ``AppendLog``: the
items appended since the list was last read, in small tuples chained to what came
before. Appends share everything before them, so old versions stay valid (forks and
readers keep theirs). Reading (``Entry.value``) builds the ``FrozenList`` once and
caches it; the next append starts from that. The cost of an append is constant; the
cost of a read is the length of the list, paid only by whoever reads.
"""

from __future__ import annotations

from typing import Any, Final

from weft.store.values import FrozenList

TAIL: Final = 32
"""Items kept in one tuple before a new link is chained on."""


class AppendLog:
    """An immutable list value under construction; ``materialize()`` gives the FrozenList."""

    __slots__ = ("_base", "_len", "_list", "_tail")

    def __init__(self, base: AppendLog | FrozenList, tail: tuple[Any, ...], length: int) -> None:
        self._base = base
        self._tail = tail
        self._len = length
        self._list: FrozenList | None = None

    @staticmethod
    def grow(current: AppendLog | FrozenList | None, items: tuple[Any, ...]) -> AppendLog:
        """``current`` (a log, a stored list, or nothing yet) with ``items`` added at the end."""
        if current is None:
            return AppendLog(FrozenList(), items, len(items))
        if type(current) is AppendLog:
            if current._list is None and len(current._tail) < TAIL:
                return AppendLog(current._base, current._tail + items, current._len + len(items))
            return AppendLog(current, items, current._len + len(items))
        return AppendLog(current, items, len(current) + len(items))

    def materialize(self) -> FrozenList:
        """The whole list, built on the first call and cached."""
        built = self._list
        if built is not None:
            return built
        tails: list[tuple[Any, ...]] = []
        node: AppendLog | FrozenList = self
        while type(node) is AppendLog and node._list is None:
            tails.append(node._tail)
            node = node._base
        base = node._list if isinstance(node, AppendLog) else node
        built = FrozenList()
        if base is not None:
            list.extend(built, base[:])  # a slice is an exact list: copied in C
        for tail in reversed(tails):
            list.extend(built, tail)
        self._list = built
        return built

    def __len__(self) -> int:
        return self._len

    def __eq__(self, other: object) -> bool:
        mine = self.materialize()
        return mine == (other.materialize() if type(other) is AppendLog else other)

    def __hash__(self) -> int:
        return hash(self.materialize())

    def __repr__(self) -> str:
        return repr(self.materialize())


def read(stored: Any) -> Any:
    """The value a reader sees for what the store holds."""
    return stored.materialize() if type(stored) is AppendLog else stored
