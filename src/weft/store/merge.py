"""Merging: the one merge of weft, and its one conflict rule.

``store.merge(changes)`` folds changes made apart from ``store`` into it as one commit (one
batch for subscribers, one transaction for a journal, all or nothing), in the order given,
never the order they were made. A change is either

- a *fork* (``store.fork()``): its own writes, the events it made after it was forked; or
- a *delta* (``view.delta(...)``): writes decided on top of a store of the family (a graph
  node's delta, computed from its view) and not applied anywhere yet.

Each write goes through the field's reducer, so reducer fields combine in the order
given, never in the order the changes finished.

Fast-forward. When ``store`` holds exactly what a fork started from (nothing was written
to it since), the merge adopts the fork's map, index and events as they are: no write is
replayed, so a transaction or a chain of graph nodes costs O(1) per merge.

The conflict rule. A *replacing* write (through ``replace``, including ``write(...,
replace=True)``, or a delete) is a conflict when the field no longer holds what the change
saw when it was made (what the fork's parent held when the fork was made; what the delta's
view held): someone else replaced, reduced or deleted it in between (another change merged
before it, or a write made directly to ``store``). That is a ``MergeConflictError`` naming
the field and both writers, and nothing is merged: weft never picks a winner silently.
Writes through other reducers (append, merge, add ...) never conflict: they combine.
Overwriting what the change's own ancestors wrote is no conflict.

Which changes. A change merges once into a store. Usually a fork is merged into the store it
was forked from; a fork or a delta may also be merged into another store of the same family
(forked from the same root), provided that store already holds what the change's base held
(the WorkGraph engine builds a join's view and commits nodes this way). A fork's changes are
its own writes only: merging a grandchild without its parent leaves the parent's writes out.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from weft.errors import MergeConflictError, ReducerError, StoreError
from weft.store._entries import Recent, Settled, lookup
from weft.store._index import SortedKeys
from weft.store.events import EntryRow, Event, EventRow

_NOTHING: frozenset[str] = frozenset()

_Mark = tuple[Recent, Settled, int, SortedKeys, int, int]
"""What a commit rolls back to: (recent, settled, settle_at, index, seq, length of the own
log)."""


class Delta:
    """Writes decided on top of a store (its *view*) and not applied yet: ``(kind, path,
    value, source, replace)`` each (``replace``: the whole value, past the field's reducer),
    merged into a store of the view's family with ``store.merge([delta])``. Made by
    ``Store.delta``."""

    __slots__ = ("_base", "_base_settled", "_declared", "_merged", "_root", "replaces", "writes")

    def __init__(
        self,
        view: Merging,
        writes: tuple[tuple[str, str, Any, str | None, bool], ...],
        replaces: frozenset[str],
    ) -> None:
        self._base = view._recent
        self._base_settled = view._settled
        root = view._root
        self._root = view if root is None else root
        self._declared = view._declared  # shared by a family: the reducers' names
        self._merged: list[Merging] | None = None
        self.writes = writes
        self.replaces = replaces
        """The fields the delta replaces (the ones the conflict rule looks at)."""

    @classmethod
    def kept(cls, view: Merging, writes: Sequence[tuple[str, str, Any, str | None, bool]]) -> Delta:
        """``view.delta(writes)`` of writes it keeps as they are, which the caller checked
        (kinds, ASCII paths and writers, values ``freeze`` keeps as they are): nothing is
        checked again. The WorkGraph engine gathers its branches' deltas so
        (``weft.graph.stores``): 1,000 one-field deltas, ~100 opcodes a write less."""
        declared = view._declared
        replaces: list[str] = []
        last_kind = last_path = known = None
        key = ""
        for kind, path, _value, _source, whole in writes:
            if path is not last_path or kind is not last_kind:  # a fan-out's: one field
                key = f"{kind}:{path}"
                known = declared.get(key)
                last_kind, last_path = kind, path
            if whole or known is None or known.name == "replace":
                replaces.append(key)
        return cls(view, tuple(writes), frozenset(replaces) if replaces else _NOTHING)

    def events(self) -> tuple[Event, ...]:
        """The writes as events (numbered from 1), e.g. to record them."""
        at = time.time()
        declared = self._declared
        out = []
        for n, (kind, path, value, source, whole) in enumerate(self.writes, start=1):
            known = None if whole else declared.get(f"{kind}:{path}")
            reducer = "replace" if known is None else known.name
            out.append(Event(n, "write", kind, path, value, source, reducer, at))
        return tuple(out)

    def __repr__(self) -> str:
        return f"<Delta writes={len(self.writes)}>"


class Merging:
    """The merge half of ``weft.store.Store`` (which inherits it): see the module docstring."""

    __slots__ = (
        "_base",
        "_base_settled",
        "_fork_seq",
        "_index",
        "_lock",
        "_merged",
        "_own",
        "_parent",
        "_recent",
        "_root",
        "_seq",
        "_settle_at",
        "_settled",
        "name",
    )

    name: str | None
    _lock: threading.RLock
    _recent: Recent
    _settled: Settled
    _settle_at: int
    _index: SortedKeys
    _base: Recent
    _base_settled: Settled
    _own: list[EventRow]
    _seq: int
    _fork_seq: int
    _merged: list[Merging] | None
    _parent: Any
    _root: Any
    _declared: dict[str, Any]
    # Store's own (see there)
    _settle: Callable[[], None]
    _publish: Callable[[Sequence[EventRow], _Mark], None]
    _stage_batch: Callable[
        [Sequence[tuple[str, str, Any, str | None, bool]], float], list[EventRow]
    ]
    _reducer_name: Callable[[str], str]

    def _mark(self) -> _Mark:
        return (
            self._recent,
            self._settled,
            self._settle_at,
            self._index,
            self._seq,
            len(self._own),
        )

    def _rollback(self, mark: _Mark) -> None:
        recent, self._settled, self._settle_at, self._index, self._seq, length = mark
        self._recent = recent  # after settled: see Store._settle
        del self._own[length:]

    def _replay(self, event: Event | EventRow, *, keep_seq: bool = True) -> EventRow:
        raise NotImplementedError

    def _apply_batch(
        self, items: Sequence[tuple[str, str, Any, str | None, bool]]
    ) -> list[EventRow]:
        """Apply the writes of consecutive deltas in one step (``Store._stage_batch``)."""
        try:
            return self._stage_batch(items, time.time())
        except ReducerError as exc:
            raise _refused(exc, None) from exc.__cause__

    def merge(self, forks: Iterable[Merging | Delta], *, check: bool = True) -> None:
        """Fold forks and deltas into this store as one commit, in the order given (never
        the order they finished); see ``weft.store.merge`` for the rule on conflicting
        writes. Nothing is merged if one of them conflicts. ``check=False`` folds them
        without that rule, for a store that is only read (the WorkGraph engine's views,
        whose writes meet the rule when they are committed)."""
        if forks.__class__ is not tuple and (
            isinstance(forks, (Merging, Delta, str)) or not isinstance(forks, Iterable)
        ):
            raise StoreError(
                f"merge takes a list of forks and deltas, got {forks!r:.80}; wrap one: [fork]"
            )
        given = list(forks)
        if not given:
            return
        if len(given) == 1:
            one = given[0]
            if one.__class__ is Delta:  # a node's delta with its record: the common commit
                assert isinstance(one, Delta)
                self._merge_delta(one, check)
                return
            if self._fast_forward(one):
                return
        self._check_family(given)
        with self._lock:
            mark = self._mark()
            events: list[EventRow] = []
            batch: list[tuple[str, str, Any, str | None, bool]] = []  # deltas, applied together
            batched: set[str] = set()  # the keys of ``batch[:seen]``, filled as needed
            seen = 0
            try:
                for position, change in enumerate(given):
                    merged = change._merged
                    if merged is not None and self in merged:  # identity: no __eq__
                        raise StoreError(
                            f"{change!r} was merged already into {self!r}; a change merges "
                            "once into a store"
                        )
                    if type(change) is Delta:
                        if change.replaces:
                            batched.update([f"{w[0]}:{w[1]}" for w in batch[seen:]])
                            seen = len(batch)
                            if not batched.isdisjoint(change.replaces):
                                # its conflict check must see the batch applied
                                events.extend(self._apply_batch(batch))
                                batch, batched, seen = [], set(), 0
                            if check:
                                self._check_conflicts(change, position)
                        batch.extend(change.writes)
                        continue
                    if batch:
                        events.extend(self._apply_batch(batch))
                        batch, batched, seen = [], set(), 0
                    assert isinstance(change, Merging)
                    with change._lock:
                        if self._saw_nothing_since(change):
                            events.extend(self._adopt(change))
                            continue
                        if check:
                            self._check_conflicts(change, position)
                        for row in change._own:
                            try:
                                events.append(self._replay(row, keep_seq=False))
                            except ReducerError as exc:
                                raise _refused(exc, row[5] or change.name) from (  # [5]: source
                                    exc.__cause__
                                )
                if batch:
                    events.extend(self._apply_batch(batch))
            except BaseException:
                self._rollback(mark)
                raise
            self._publish(events, mark)
            if len(self._recent) > self._settle_at:  # grown by fast-forwards
                self._settle()
            if not check:  # a view: kept off the change, which may lead back here
                return
            for change in given:
                if change._merged is None:
                    change._merged = [self]
                else:
                    change._merged.append(self)

    def _merge_delta(self, change: Delta, check: bool) -> None:
        """``merge([change])`` of one delta: the same commit, without the walk over a list."""
        root = self if self._root is None else self._root
        if change._root is not root:
            self._check_family([change])
        merged = change._merged
        if merged is not None and self in merged:  # identity: no __eq__
            raise StoreError(f"{change!r} was merged already into {self!r}; a change merges once")
        with self._lock:
            mark = self._mark()
            try:
                if check and change.replaces:
                    self._check_conflicts(change, 0)
                events = self._apply_batch(change.writes)
            except BaseException:
                self._rollback(mark)
                raise
            self._publish(events, mark)
            if len(self._recent) > self._settle_at:
                self._settle()
        if not check:
            return
        if merged is None:
            change._merged = [self]
        else:
            merged.append(self)

    def _fast_forward(self, change: Merging | Delta) -> bool:
        """The common commit: one fork of this very store, nothing written here since it
        was made, merged once. Then this store takes the fork's content as it is, without
        the family walk or a replay; returns False for anything else."""
        if change.__class__ is not self.__class__:  # a delta, or no change at all
            return False
        assert isinstance(change, Merging)
        if change._parent is not self:
            return False
        with self._lock, change._lock:
            if (
                change._merged is not None
                or self._recent is not change._base
                or self._settled is not change._base_settled
                or self._seq != change._fork_seq
            ):
                return False
            mark = self._mark()
            self._publish(self._adopt(change), mark)  # a journal that refuses it undoes it
            if len(self._recent) > self._settle_at:
                self._settle()
            change._merged = [self]
        return True

    def _saw_nothing_since(self, fork: Merging) -> bool:
        """Whether this store holds exactly what ``fork`` started from."""
        return (
            self._recent is fork._base
            and self._settled is fork._base_settled
            and self._seq == fork._fork_seq
        )

    def _adopt(self, fork: Merging) -> list[EventRow]:
        """Fast-forward: take ``fork``'s content as it is; returns its events."""
        if fork._settled is not self._settled:  # the fork settled first: see Store._settle
            self._settled = fork._settled
            self._settle_at = fork._settle_at
        self._recent, self._index = fork._recent, fork._index
        self._seq = fork._seq
        self._own.extend(fork._own)
        return fork._own

    def _untouched(self, since: Merging, changes: Sequence[Merging | Delta]) -> bool:
        """Whether every field that ``changes`` write holds here the very entry it holds in
        ``since`` (a store this one was built from): then nothing written on the way from
        ``since`` to here meets them, and merging them here comes to the same as merging
        them in any order with what was written on the way. A change that clears is never
        untouched."""
        here = self._recent, self._settled
        there = since._recent, since._settled
        for change in changes:
            if change.__class__ is Delta:
                assert isinstance(change, Delta)
                keys = [f"{w[0]}:{w[1]}" for w in change.writes]
            else:
                assert isinstance(change, Merging)
                rows = change._own  # rows: seq, op, kind, path, ...
                if any(row[1] == "clear" for row in rows):
                    return False
                keys = [f"{row[2]}:{row[3]}" for row in rows if row[1] != "note"]
            for key in keys:
                if not _same(lookup(*here, key), lookup(*there, key)):
                    return False
        return True

    def _check_family(self, changes: Sequence[Merging | Delta]) -> None:
        root = self if self._root is None else self._root
        if len({id(change) for change in changes}) != len(changes):
            twice = next(c for i, c in enumerate(changes) if any(c is d for d in changes[:i]))
            raise StoreError(f"{twice!r} is given twice; a change merges once")
        for change in changes:
            if change.__class__ is Delta or isinstance(change, Delta):
                assert isinstance(change, Delta)
                if change._root is not root:
                    raise StoreError(
                        f"cannot merge {change!r}: it was made on a store of another family; "
                        "merge a delta into the store its view was forked from"
                    )
                continue
            if not isinstance(change, Merging):
                raise StoreError(
                    f"merge takes stores made by fork() and deltas made by delta(), got {change!r}"
                )
            if change._root is not root or change._parent is None:
                raise StoreError(
                    f"cannot merge {change!r}: it is not a fork of this store; merge a fork "
                    "into the store it was forked from"
                )
            ancestor: Any = self
            while ancestor is not None:
                if ancestor is change:
                    raise StoreError(
                        f"cannot merge {change!r} into {self!r}: this store was forked from it"
                    )
                ancestor = ancestor._parent

    def _check_conflicts(self, change: Merging | Delta, position: int) -> None:
        """Refuse the merge if a field ``change`` replaces changed since it saw it."""
        recent, settled = self._recent, self._settled
        base, base_settled = change._base, change._base_settled
        if recent is base and settled is base_settled:
            return  # nothing was written here since the change saw it
        checked: set[str] = set()
        if change.__class__ is Delta:
            assert isinstance(change, Delta)
            replaced = change.replaces
            writes: Iterable[tuple[str, str, Any, str | None, bool]] = (
                w for w in change.writes if f"{w[0]}:{w[1]}" in replaced
            )
            name = None
        else:
            assert isinstance(change, Merging)
            writes = (  # rows: seq, op, kind, path, value, source, reducer, ...
                (row[2], row[3], None, row[5], row[1] == "delete" or row[6] == "replace")
                for row in change._own
                if row[1] == "write" or row[1] == "delete"
            )
            name = change.name
        for kind, path, _value, source, whole in writes:
            key = f"{kind}:{path}"
            if not whole and self._reducer_name(key) != "replace":
                continue  # a reducer write: it combines
            if key in checked:
                continue
            checked.add(key)
            now, saw = lookup(recent, settled, key), lookup(base, base_settled, key)
            if _same(now, saw):
                continue
            writer = source or name or f"change #{position + 1} (unnamed)"
            other = "a delete" if now is None else repr(now[3] or "an unnamed writer")  # source
            raise MergeConflictError(
                f"{key} was written by two parallel branches, {other} and {writer!r}, and it "
                f"keeps only the last write; declare a reducer for it (e.g. store.declare("
                f"{kind!r}, {path!r}, reducers.append)) or let one branch write it"
            )


def _refused(exc: ReducerError, writer: str | None) -> ReducerError:
    """A reducer refused a merged write: the error says so, and names the writer."""
    text = str(exc).removesuffix(". Nothing was written")
    by = f" (on the write of {writer!r})" if writer else ""
    return ReducerError(f"{text}{by}, while merging: nothing of the merge was written")


def _same(now: EntryRow | None, saw: EntryRow | None) -> bool:
    """Whether ``now`` is the very write ``saw`` was (a replayed write keeps its value
    object, source and time: the rows' fields 2, 3 and 5)."""
    if now is saw:
        return True
    if now is None or saw is None:
        return False
    return now[2] is saw[2] and now[3] == saw[3] and now[5] == saw[5]
