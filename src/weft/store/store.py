"""The store: entries by kind and path, declared reducers, O(1) forks, transactions and the
event log.

Everything that flows through weft is an entry here. Every change is an ``Event`` in an
append-only log, which is at once the checkpoint (``Store.from_events`` rebuilds a store),
the audit trail (``source``) and the feed that subscribers follow.

Commits. Every change is made by one *commit*: a ``write``, a ``write_many`` batch, a
``delete``, a ``clear``, notes, a ``merge``, or a whole ``transaction()``. A commit is all or
nothing: it is applied under the store's lock, handed to the store's journal (a durable
backend, if one is attached: ``set_journal``), and only then shown to subscribers, each
event in order (``subscribe(fn)``) or the commit as one batch (``subscribe(fn,
batches=True)``). A journal that refuses the commit (it raises) undoes it: the store is left
as it was and the error reaches the code that wrote.

Forks. A fork shares the parent's entries and index, so it costs O(1) however large the
store is; its writes stay its own until it is merged. ``merge`` and its conflict rule are in
``weft.store.merge``. How the entries are kept (rows in two tiers, for forks and for the
garbage collector) is in ``weft.store._entries``.
"""

from __future__ import annotations

import itertools
import operator
import time
from _thread import RLock as _RLock  # threading.RLock is a Python function around it
from bisect import bisect_right
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any, Final, Protocol

import immutables

from weft.errors import MissingEntryError, ReducerError, StoreError
from weft.store import _entries
from weft.store import reducers as _reducers
from weft.store._index import SortedKeys
from weft.store._log import AppendLog, read
from weft.store._staging import (
    _KIND_SET,
    _REPLACE,
    _batch,
    _call,
    _check_kind,
    _checked_key,
    _checked_prefix,
    _checked_source,
    _Declared,
    _kinds,
    plain_key,
)
from weft.store.batches import Batching
from weft.store.events import Entry, Event, EventRow, make_key
from weft.store.merge import Delta, _Mark
from weft.store.values import MISSING, TypeRegistry, freeze, kept, registry

Subscriber = Callable[[Event], object]
BatchSubscriber = Callable[[tuple[Event, ...]], object]


class Journal(Protocol):
    """Where a store's commits go to be kept (a durable backend's run, say).

    ``commit(store, events)`` is called under the store's lock with the events of one commit
    that are to be kept (events of never-persisted fields are left out), after they are
    applied (so ``store`` reads as of the end of the commit) and before any subscriber hears
    of them. Raising refuses the commit: the store undoes it and the error propagates to
    the code that wrote. ``state_at(seq)`` gives the store as it was at ``seq`` (None when
    the journal cannot tell), for ``Store.at`` past the start of the store's own log.
    """

    def commit(self, store: Store, events: Sequence[Event]) -> None: ...

    def state_at(self, seq: int) -> Store | None: ...


_REPLACE_FN: Final = _reducers.replace
_now: Final = time.time
_NOTHING: Final[frozenset[str]] = frozenset()
_seq_of: Final = operator.itemgetter(0)
"""An event row's seq."""
_build: Final = tuple.__new__
"""Builds an ``Entry`` or ``Event`` from its row (``weft.store.events``), skipping the named
tuple's Python-level ``__new__`` (half the cost of the ~0.4 us ``Event(...)``)."""


class Store(Batching):
    """A namespaced store with reducers, cheap forks, transactions and an event log.

    >>> from weft.store import Store, reducers
    >>> store = Store(reducers={"state:messages": reducers.append})
    >>> _ = store.write("state", "messages", "hello", source="user")
    >>> branch = store.fork(name="b1")
    >>> _ = branch.write("state", "messages", "from b1")
    >>> store.value("state", "messages")
    ['hello']
    >>> store.merge([branch])
    >>> store.value("state", "messages")
    ['hello', 'from b1']
    """

    __slots__ = (
        "__weakref__",
        "_batch_subscribers",
        "_declared",
        "_history_from",
        "_journal",
        "_subscribers",
        "_types",
    )

    def __init__(
        self,
        *,
        reducers: Mapping[str, _reducers.Reducer] | None = None,
        types: TypeRegistry = registry,
        name: str | None = None,
    ) -> None:
        _checked_source(name)
        self.name = name
        self._types = types
        self._recent: _entries.Recent = immutables.Map()
        self._settled: _entries.Settled = {}
        self._settle_at = _entries.SETTLE_MIN
        self._index = SortedKeys()
        self._declared: dict[str, _Declared] = {}
        self._lock = _RLock()
        self._subscribers: list[Subscriber] = []
        self._batch_subscribers: list[BatchSubscriber] = []
        self._journal: Journal | None = None
        self._own: list[EventRow] = []
        self._seq = 0
        self._parent: Store | None = None
        self._root: Store | None = None  # None: this store is the root (no self-cycle)
        self._base, self._base_settled = self._recent, self._settled
        self._fork_seq = 0
        self._merged = None
        self._history_from = 0
        if reducers is not None and not isinstance(reducers, Mapping):
            raise StoreError(f"reducers={reducers!r:.60}: expected {{'kind:path': reducer}}")
        for key, fn in (reducers or {}).items():
            kind, _, path = str(key).partition(":")
            self.declare(kind, path, fn)

    # ----------------------------------------------------------------- reducers

    def declare(
        self,
        kind: str,
        path: str,
        reducer: _reducers.Reducer = _reducers.replace,
        *,
        persist: bool = True,
    ) -> None:
        """Say once how a field takes writes, and whether it is kept.

        Declaring a different reducer later is an error. ``persist=False`` marks a field
        that is never persisted (a turn's scratch values, say): its events reach
        subscribers but never the journal, and snapshots leave it out.
        """
        key = _checked_key(kind, path)
        name, fn, frozen_output = _reducers.prepare(reducer)
        with self._lock:
            known = self._declared.get(key)
            if known is not None:
                if known.fn is fn and known.persist == persist:
                    return
                if known.fn is not fn:
                    raise ReducerError(
                        f"{key} already has the reducer {known.name!r}; a field's reducer is "
                        f"declared once, so {name!r} cannot replace it. Use another path for "
                        "differently reduced data"
                    )
                raise ReducerError(
                    f"{key} is already declared with persist={known.persist}; a field is "
                    "persisted or not for good, so use another path"
                )
            self._declared[key] = _Declared(name, fn, frozen_output, persist)

    @property
    def types(self) -> TypeRegistry:
        """The registry of extra value types this store accepts (shared with its forks)."""
        return self._types

    def reducer_of(self, kind: str, path: str) -> str:
        """The name of the reducer a field's writes go through (``replace`` by default)."""
        return self._declared.get(make_key(kind, path), _REPLACE).name

    def reducer(self, kind: str, path: str) -> _reducers.Reducer:
        """The reducer function a field's writes go through (``reducers.replace`` by default)."""
        return self._declared.get(make_key(kind, path), _REPLACE).fn

    def persisted(self, kind: str, path: str) -> bool:
        """Whether the field's writes are kept by a journal (see ``declare``)."""
        return self._declared.get(make_key(kind, path), _REPLACE).persist

    # ------------------------------------------------------------------- writes

    def write(
        self,
        kind: str,
        path: str,
        value: Any,
        *,
        source: str | None = None,
        meta: Mapping[str, Any] | None = None,
        replace: bool = False,
    ) -> Entry:
        """Write ``value`` through the field's reducer (or replace it outright) and log it.

        The value is frozen on the way in, so later changes to the caller's object
        do not reach the store. ``meta`` (a title, say) replaces the entry's metadata
        when given and is kept when omitted.
        """
        key = _checked_key(kind, path, source)
        declared = self._declared.get(key, _REPLACE)
        if replace:
            declared = declared.replacing()
        update = (
            value
            if kept(value)
            else freeze(
                value, where=key, types=self._types, allow_delete=declared.fn is _reducers.merge
            )
        )
        frozen_meta = freeze(meta, where=f"{key} meta", types=self._types) if meta else None
        with self._lock:
            mark = self._mark()
            row, event = self._stage_write(
                key, kind, path, update, source or self.name, frozen_meta, declared, time.time()
            )
            self._publish((event,), mark)
            entry: Entry = _build(Entry, row)
            return entry

    def delete(self, kind: str, path: str, *, source: str | None = None) -> bool:
        """Remove one key; returns whether it held anything. Subscribers hear of it."""
        key = _checked_key(kind, path, source)
        with self._lock:
            if _entries.lookup(self._recent, self._settled, key) is None:
                return False
            mark = self._mark()
            event = self._stage_delete(key, kind, path, source or self.name, time.time())
            self._publish((event,), mark)
            return True

    def clear(
        self, *, kind: str | None = None, key_prefix: str = "", source: str | None = None
    ) -> int:
        """Remove every key of ``kind`` (or of all kinds) under ``key_prefix``; returns how many."""
        if kind is not None:
            _check_kind(kind)
        _checked_prefix(key_prefix)
        _checked_source(source)
        with self._lock:
            mark = self._mark()
            gone, event = self._stage_clear(kind, key_prefix, source or self.name, time.time())
            self._publish((event,), mark)
            return gone

    def note(self, kind: str, path: str, value: Any = None, *, source: str | None = None) -> Event:
        """Log an event that changes no entry, for observers (a node started, say)."""
        key = _checked_key(kind, path, source)
        update = freeze(value, where=f"note {key}", types=self._types)
        with self._lock:
            mark = self._mark()
            row = self._log("note", kind, path, update, source or self.name, "replace", None)
            self._publish((row,), mark)
            event: Event = _build(Event, row)
            return event

    def delta(
        self,
        writes: Iterable[tuple[str, str, Any, str | None] | tuple[str, str, Any, str | None, bool]]
        | Mapping[str, Any],
        *,
        kind: str = "state",
        source: str | None = None,
    ) -> Delta:
        """Writes decided on top of this store, applied nowhere yet: merge them into a store
        of its family with ``merge([delta])`` (``weft.store.merge``). ``writes`` are
        ``(kind, path, value, source)`` tuples (with a fifth item ``True``: the value
        replaces the field, past its reducer, as ``write(..., replace=True)``), or a mapping
        ``{path: value}`` of ``kind`` written by ``source``. Values are frozen now; a bad one
        is refused here."""
        items: list[tuple[str, str, Any, str | None, bool]] = []
        replaces: list[str] = []
        declared, types = self._declared, self._types
        if writes.__class__ is dict and kind.__class__ is str and kind in _KIND_SET:  # a delta
            if source is not None and (source.__class__ is not str or not source.isascii()):
                _checked_source(source)
            if len(writes) == 1:  # one plain field: a fan-out branch's delta
                ((path, value),) = writes.items()
                if plain_key(kind, path, source) and kept(value):
                    key = f"{kind}:{path}"
                    one = ((kind, path, value, source, False),)
                    if declared.get(key, _REPLACE).name == "replace":
                        return Delta(self, one, frozenset((key,)))
                    return Delta(self, one, _NOTHING)
            for path, value in writes.items():
                if not plain_key(kind, path, source):
                    _checked_key(kind, path)
                key = f"{kind}:{path}"
                known = declared.get(key, _REPLACE)
                if known.name == "replace":
                    replaces.append(key)
                if not kept(value):
                    merging = known.fn is _reducers.merge
                    value = freeze(value, where=key, types=types, allow_delete=merging)
                items.append((kind, path, value, source, False))
            return Delta(self, tuple(items), frozenset(replaces) if replaces else _NOTHING)
        if writes.__class__ is list and (plain := self._plain_items(writes)) is not None:
            for k, path, *_ in plain:  # a node's writes with its record
                if declared.get(key := f"{k}:{path}", _REPLACE).name == "replace":
                    replaces.append(key)
            return Delta(self, tuple(plain), frozenset(replaces))
        if isinstance(writes, Mapping):
            _check_kind(kind)
            pairs: Iterable[Any] = ((kind, path, value, source) for path, value in writes.items())
        else:
            pairs = writes
        for item in _batch("delta", pairs):
            try:
                k, path, value, by, *rest = item
                (whole,) = rest or (False,)
            except (TypeError, ValueError):
                raise StoreError(
                    "delta takes (kind, path, value, source) or (kind, path, value, source, "
                    f"replace) tuples or a mapping, got {item!r:.200}"
                ) from None
            key = _checked_key(k, path, by)
            known = declared.get(key, _REPLACE)
            if whole.__class__ is not bool:
                raise StoreError(f"delta: the replace flag of {key} is {whole!r}, not a bool")
            if whole or known.name == "replace":
                replaces.append(key)
            if not kept(value):
                merging = known.fn is _reducers.merge and not whole
                value = freeze(value, where=key, types=types, allow_delete=merging)
            items.append((k, path, value, by, whole))
        return Delta(self, tuple(items), frozenset(replaces))

    def apply(self, events: Iterable[Event]) -> int:
        """Apply events from another log (a fork's, a record's) through this store's
        reducers, in order, as one commit; they get this store's next sequence numbers.
        Returns how many were applied. Nothing is applied if one of them fails."""
        with self._lock:
            mark = self._mark()
            staged: list[EventRow] = []
            try:
                for event in _batch("apply", events):
                    staged.append(self._replay(event, keep_seq=False, check=True))
            except BaseException:
                self._rollback(mark)
                raise
            if staged:
                self._publish(staged, mark)
            return len(staged)

    # -------------------------------------------------------------------- reads

    def get(self, kind: str, path: str) -> Entry | None:
        """The entry at ``kind:path``, or None."""
        key = f"{kind}:{path}"
        row = self._recent.get(key)  # _entries.lookup, inlined as in value()
        if row is None:
            row = self._settled.get(key)
        if not row:  # None, or GONE
            return None
        entry: Entry = _build(Entry, row)
        return entry

    def has(self, kind: str, path: str) -> bool:
        return _entries.lookup(self._recent, self._settled, f"{kind}:{path}") is not None

    def value(self, kind: str, path: str, default: Any = MISSING) -> Any:
        """The value at ``kind:path``; without a default, a missing key is an error."""
        key = f"{kind}:{path}"
        row = self._recent.get(key)  # _entries.lookup, inlined: the hot read
        if row is None:
            row = self._settled.get(key)
        if row:  # not None, nor GONE
            stored = row[2]
            return stored.materialize() if stored.__class__ is AppendLog else stored
        if default is not MISSING:
            return default
        raise MissingEntryError(self._missing_message(kind, path))

    def entries(
        self, *, kind: str | Iterable[str] | None = None, key_prefix: str = ""
    ) -> list[Entry]:
        """Entries in key order, filtered by kind(s) and by a prefix of the ``kind:path`` key."""
        with self._lock:
            recent, settled, index = self._recent, self._settled, self._index
        kinds = None if kind is None else _kinds(kind)
        if key_prefix.__class__ is not str:
            _checked_prefix(key_prefix)
        keys = index.with_prefix(key_prefix) if key_prefix else iter(index)
        # a key the index lists is held: by recent (never GONE then), else by settled
        rows = [recent.get(key) or settled[key] for key in keys]
        if kinds is not None:
            rows = [row for row in rows if row[0] in kinds]  # row[0]: the kind
        return list(map(_build, itertools.repeat(Entry, len(rows)), rows))

    def keys(self) -> Iterator[str]:
        """Every ``kind:path`` key, in order."""
        return iter(self._index)

    def to_dict(self, *, kind: str | None = None) -> dict[str, Any]:
        """``{key: value}`` of every entry (of one kind if given), in key order."""
        with self._lock:
            recent, settled, index = self._recent, self._settled, self._index
        keys = index.with_prefix(f"{kind}:") if kind is not None else iter(index)
        # as in entries; [2]: what the key stores
        return {key: read((recent.get(key) or settled[key])[2]) for key in keys}

    def __len__(self) -> int:
        with self._lock:
            return _entries.count(self._recent, self._settled)

    def __contains__(self, key: object) -> bool:
        return (
            isinstance(key, str) and _entries.lookup(self._recent, self._settled, key) is not None
        )

    # -------------------------------------------------------------- event log

    @property
    def last_seq(self) -> int:
        """The sequence number of the newest event this store can see."""
        return self._seq

    def events(self, since: int = 0) -> list[Event]:
        """Events with ``seq > since``, oldest first, including those inherited from the
        stores this one was forked from (up to the moment of each fork)."""
        rows = self._rows(since)
        return list(map(_build, itertools.repeat(Event, len(rows)), rows))

    def _rows(self, since: int) -> list[EventRow]:
        """``events(since)`` as the store keeps them (rows)."""
        parts: list[list[EventRow]] = []
        store: Store | None = self
        upto: int | None = None
        while store is not None:
            with store._lock:
                own = store._own
                if upto is not None:
                    own = own[: bisect_right(own, upto, key=_seq_of)]
                parts.append(own[bisect_right(own, since, key=_seq_of) :])
            if store._parent is None or since >= store._fork_seq:
                break
            upto = store._fork_seq
            store = store._parent
        if len(parts) == 1:
            return parts[0]
        return [event for part in reversed(parts) for event in part]

    def at(self, seq: int) -> Store:
        """This store as it was at ``seq``: a fork of it taken back then (its writes merge
        into this store like any fork's, checked against what it saw).

        Built from this store's log, or, for a store whose log starts later (loaded from a
        snapshot), from its journal; a ``StoreError`` if neither reaches back that far.
        """
        if not isinstance(seq, int) or isinstance(seq, bool) or not 0 <= seq <= self._seq:
            raise StoreError(f"at({seq!r}): expected a step from 0 to {self._seq}")
        root = self if self._root is None else self._root
        if seq >= root._history_from:
            past = Store(types=self._types, name=self.name)
            past._declared.update(self._declared)
            with past._lock:
                for row in self._rows(0):
                    if row[0] > seq:  # its seq
                        break
                    past._replay(row)
        else:
            journal = root._journal
            found = journal.state_at(seq) if journal is not None else None
            if found is None:
                raise StoreError(
                    f"this store's log starts at step {root._history_from} (it was "
                    f"loaded from a snapshot), so it cannot show step {seq}; load that step "
                    "from its backend (DurableRun.state_at)"
                )
            past = found
        fork = self.fork(name=self.name)
        fork._recent = fork._base = past._recent
        fork._settled = fork._base_settled = past._settled
        fork._settle_at = _entries.settle_at(past._recent, past._settled)
        fork._index = past._index
        fork._seq = fork._fork_seq = seq
        return fork

    @property
    def observed(self) -> bool:
        """Whether anyone subscribes: events meant only for observers can be skipped if not."""
        return bool(self._subscribers or self._batch_subscribers)

    def subscribe(
        self, fn: Subscriber | BatchSubscriber, *, batches: bool = False
    ) -> Callable[[], None]:
        """Call ``fn(event)`` for every later event (``batches=True``: ``fn(events)`` once
        per commit, with the commit's events as a tuple); returns a function that
        unsubscribes.

        Subscribers run in order, inside the commit and after it is applied (so
        ``store.get`` in a subscriber sees the new value), and see events in sequence
        order; keep them quick. One that raises is logged with its name and never breaks
        the commit or the other subscribers.
        """
        with self._lock:
            if batches:
                self._batch_subscribers = [*self._batch_subscribers, fn]  # type: ignore[list-item]
            else:
                self._subscribers = [*self._subscribers, fn]  # type: ignore[list-item]

        def unsubscribe() -> None:
            with self._lock:
                self._subscribers = [s for s in self._subscribers if s is not fn]
                self._batch_subscribers = [s for s in self._batch_subscribers if s is not fn]

        return unsubscribe

    def set_journal(self, journal: Journal | None) -> None:
        """Attach the journal that keeps this store's commits (None detaches it); see
        ``Journal``. Only a store that is no fork can have one: a fork's writes reach the
        journal when they are merged."""
        if journal is not None and self._parent is not None:
            raise StoreError(
                "a fork cannot have a journal: attach it to the store the fork was made from, "
                "which journals the fork's writes when it merges them"
            )
        with self._lock:
            self._journal = journal

    @classmethod
    def from_events(
        cls,
        events: Iterable[Event],
        *,
        reducers: Mapping[str, _reducers.Reducer] | None = None,
        types: TypeRegistry = registry,
        name: str | None = None,
        history_from: int = 0,
    ) -> Store:
        """Rebuild a store by replaying its events; built-in reducers are found by name.

        A write through a user reducer needs that reducer declared in ``reducers``.
        ``history_from`` is where the real history begins when the first events stand for
        a snapshot (``at`` cannot go back past it).
        """
        store = cls(reducers=reducers, types=types, name=name)
        with store._lock:
            for event in events:
                store._replay(event)
        store._history_from = history_from
        return store

    # -------------------------------------------------------------------- forks

    def fork(self, *, name: str | None = None) -> Store:
        """An isolated child in O(1): it sees this store as it is now, and its writes
        stay its own until it is merged. ``name`` is the default ``source`` of its writes."""
        if name is not None:
            _checked_source(name)
        child = Store.__new__(Store)
        with self._lock:
            child.name = name
            child._types = self._types
            child._recent = child._base = self._recent
            child._settled = child._base_settled = self._settled
            # _entries.settle_at, inlined (max() alone is a tenth of a fork): the fork
            # settles only once it wrote its own share
            room, least = len(self._settled) >> 3, _entries.SETTLE_MIN
            child._settle_at = len(self._recent) + (room if room > least else least)
            # both sides then sort the keys written before the fork once, not once each
            child._index = self._index = self._index.fork()
            child._declared = self._declared
            child._lock = _RLock()
            child._subscribers = []
            child._batch_subscribers = []
            child._journal = None
            child._own = []
            child._seq = child._fork_seq = self._seq
            child._parent = self
            child._root = self if self._root is None else self._root
            child._merged = None
            child._history_from = 0
        return child

    @contextmanager
    def transaction(self, *, name: str | None = None) -> Iterator[Store]:
        """Write to the yielded fork; when the block ends, its writes reach this store as
        one commit (one batch for subscribers, one transaction for a journal), or, if the
        block raises, not at all.

        >>> store = Store()
        >>> with store.transaction() as tx:
        ...     _ = tx.write("state", "a", 1)
        ...     _ = tx.write("state", "b", 2)
        >>> store.value("state", "a"), store.last_seq
        (1, 2)
        """
        tx = self.fork(name=name if name is not None else self.name)
        yield tx
        self.merge([tx])

    def __repr__(self) -> str:
        label = f" {self.name!r}" if self.name else ""
        return f"<Store{label} entries={len(self)} seq={self._seq}>"

    # ---------------------------------------------------------------- commits

    def _publish(self, rows: Sequence[EventRow], mark: _Mark) -> None:
        """The end of every commit: the journal keeps it (or refuses it: undone), then the
        subscribers hear of it."""
        journal = self._journal
        if journal is None and not self._subscribers and not self._batch_subscribers:
            return
        events: list[Event] = list(map(_build, itertools.repeat(Event, len(rows)), rows))
        if journal is not None:
            declared = self._declared
            # else no field is declared never persisted
            persisted = _persisted(events, declared) if declared else events
            if persisted:
                try:
                    journal.commit(self, persisted)
                except BaseException:
                    self._rollback(mark)
                    raise
        for fn in self._subscribers:
            for event in events:
                _call(fn, event)
        if self._batch_subscribers:
            batch = tuple(events)
            for batch_fn in self._batch_subscribers:
                _call(batch_fn, batch)

    def _missing_message(self, kind: str, path: str) -> str:
        key = make_key(kind, path)
        near = list(itertools.islice(self._index.with_prefix(f"{kind}:"), 10))
        known = ", ".join(near) if near else f"no {kind} entries at all"
        return (
            f"nothing is stored at {key}; {kind} holds: {known}. Check the path for a typo, "
            "or pass a default to read a key that may be absent"
        )


def _persisted(events: list[Event], declared: dict[str, _Declared]) -> list[Event]:
    """The events of a commit that its journal keeps: all but writes and deletes of the
    fields declared never persisted. (A function apart: as a comprehension inside
    ``_publish`` it made every commit set up a cell for ``declared``.)"""
    return [
        e
        for e in events
        if (e.op != "write" and e.op != "delete")
        or declared.get(f"{e.kind}:{e.path}", _REPLACE).persist
    ]
