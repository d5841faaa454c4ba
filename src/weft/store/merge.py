"""Merging forks: the one merge of weft, and its one conflict rule.

``store.merge(forks)`` folds each fork's own writes (the events it made after it was
forked) into ``store``, fork by fork in the order given, as one commit: one batch for
subscribers, one transaction for a journal, all or nothing. Each write goes through the
field's reducer, so reducer fields combine in the order given, never in the order the
forks finished.

Fast-forward. When ``store`` holds exactly what the fork started from (nothing was written
to it since), the merge adopts the fork's map, index and events as they are: no write is
replayed, so a transaction or a chain of graph nodes costs O(1) per merge.

The conflict rule. A fork's *replacing* write (a write through ``replace``, including
``write(..., replace=True)``, or a delete) is a conflict when the field no longer holds what
the fork saw when it was made: someone else replaced, reduced or deleted it in between
(another fork merged before it, or a write made directly to ``store``). That is a
``MergeConflictError`` naming the field and both writers, and nothing is merged: weft never
picks a winner silently. Writes through other reducers (append, merge, add ...) never
conflict: they combine. Overwriting what the fork itself (or what its own ancestors) wrote
is no conflict.

Which forks. A fork merges once into a store. Usually it is merged into the store it was
forked from; it may also be merged into another store of the same family (forked from the
same root), provided that store already holds what the fork's parent held when the fork
was made
(the WorkGraph engine builds a join's view this way). A fork's changes are its own
writes only: merging a grandchild without its parent leaves the parent's writes out.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Iterable, Sequence
from typing import Any

import immutables

from weft.errors import MergeConflictError, StoreError
from weft.store._index import SortedKeys
from weft.store.events import Entry, Event

_Mark = tuple[immutables.Map[str, Entry], SortedKeys, int, int]
"""What a commit rolls back to: (data, index, seq, length of the own log)."""


class Merging:
    """The merge half of ``weft.store.Store`` (which inherits it): see the module docstring."""

    __slots__ = (
        "_base",
        "_data",
        "_fork_seq",
        "_index",
        "_lock",
        "_merged",
        "_own",
        "_parent",
        "_root",
        "_seq",
        "name",
    )

    name: str | None
    _lock: threading.RLock
    _data: immutables.Map[str, Entry]
    _index: SortedKeys
    _base: immutables.Map[str, Entry]
    _own: list[Event]
    _seq: int
    _fork_seq: int
    _merged: weakref.WeakSet[Merging] | None
    _parent: Any
    _root: Any

    def _mark(self) -> _Mark:
        return (self._data, self._index, self._seq, len(self._own))

    def _rollback(self, mark: _Mark) -> None:
        self._data, self._index, self._seq, length = mark
        del self._own[length:]

    def _publish(self, events: Sequence[Event], mark: _Mark) -> None:
        raise NotImplementedError

    def _replay(self, event: Event, *, keep_seq: bool = True) -> Event:
        raise NotImplementedError

    def merge(self, forks: Iterable[Merging]) -> None:
        """Fold the forks' writes into this store as one commit, fork by fork in the order
        given (never the order they finished); see ``weft.store.merge`` for the rule on
        conflicting writes. Nothing is merged if one of them conflicts."""
        given = list(forks)
        if not given:
            return
        self._check_family(given)
        with self._lock:
            mark = self._mark()
            events: list[Event] = []
            try:
                for position, fork in enumerate(given):
                    with fork._lock:
                        if fork._merged is not None and self in fork._merged:
                            raise StoreError(
                                f"{fork!r} was merged already into {self!r}; a fork merges once "
                                "into a store"
                            )
                        if self._data is fork._base and self._seq == fork._fork_seq:
                            self._data, self._index = fork._data, fork._index
                            self._seq = fork._seq
                            self._own.extend(fork._own)
                            events.extend(fork._own)
                            continue
                        self._check_conflicts(fork, position)
                        for event in fork._own:
                            events.append(self._replay(event, keep_seq=False))
            except BaseException:
                self._rollback(mark)
                raise
            self._publish(events, mark)
            for fork in given:
                if fork._merged is None:
                    fork._merged = weakref.WeakSet()
                fork._merged.add(self)

    def _check_family(self, forks: Sequence[Merging]) -> None:
        seen: set[int] = set()
        for fork in forks:
            if not isinstance(fork, Merging):
                raise StoreError(f"merge takes stores made by fork(), got {fork!r}")
            if id(fork) in seen:
                raise StoreError(f"{fork!r} is given twice; a fork merges once")
            seen.add(id(fork))
            if fork._parent is None or fork._root is not self._root:
                raise StoreError(
                    f"cannot merge {fork!r}: it is not a fork of this store; merge a fork into "
                    "the store it was forked from"
                )
            ancestor: Any = self
            while ancestor is not None:
                if ancestor is fork:
                    raise StoreError(
                        f"cannot merge {fork!r} into {self!r}: this store was forked from it"
                    )
                ancestor = ancestor._parent

    def _check_conflicts(self, fork: Merging, position: int) -> None:
        """Refuse the merge if a field ``fork`` replaces changed since the fork saw it."""
        checked: set[str] = set()
        data, base = self._data, fork._base
        for event in fork._own:
            op = event.op
            if not (op == "delete" or (op == "write" and event.reducer == "replace")):
                continue
            key = f"{event.kind}:{event.path}"
            if key in checked:
                continue
            checked.add(key)
            now, saw = data.get(key), base.get(key)
            if _same(now, saw):
                continue
            writer = event.source or fork.name or f"fork #{position + 1} (unnamed)"
            other = "a delete" if now is None else repr(now.source or "an unnamed writer")
            raise MergeConflictError(
                f"{key} was written by two parallel branches, {other} and {writer!r}, and it "
                f"keeps only the last write; declare a reducer for it (e.g. store.declare("
                f"{event.kind!r}, {event.path!r}, reducers.append)) or let one branch write it"
            )


def _same(now: Entry | None, saw: Entry | None) -> bool:
    """Whether ``now`` is the very write ``saw`` was (a replayed write keeps its value
    object, source and time)."""
    if now is saw:
        return True
    if now is None or saw is None:
        return False
    return (
        now.stored is saw.stored and now.source == saw.source and now.updated_at == saw.updated_at
    )
