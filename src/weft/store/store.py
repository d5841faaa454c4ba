"""The store: entries by kind and path, declared reducers, O(1) forks, and the event log.

Everything that flows through weft is an entry here. Every change is an
``Event`` in an append-only log, which is at once the checkpoint
(``Store.from_events`` rebuilds a store), the audit trail (``source``) and
the feed that subscribers follow.

A fork shares the parent's persistent map and index, so it costs O(1)
however large the store is; its writes stay its own until the parent
merges it, and the merge replays them through each field's reducer in the
order the forks are given, never in the order they finished.
"""

from __future__ import annotations

import itertools
import logging
import operator
import threading
import time
from bisect import bisect_right
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Final

import immutables

from weft.errors import (
    InvalidKeyError,
    MergeConflictError,
    MissingEntryError,
    ReducerError,
    StoreError,
)
from weft.store import reducers as _reducers
from weft.store._index import SortedKeys
from weft.store._log import AppendLog, read
from weft.store.events import KINDS, Entry, Event, Op, make_key
from weft.store.values import _AS_IS, MISSING, TypeRegistry, freeze, registry

logger: Final = logging.getLogger("weft.store")

Subscriber = Callable[[Event], object]
_KIND_SET: Final = frozenset(KINDS)
_GROWS: Final = frozenset({"append", "extend", "operator.add"})
"""Reducers whose list results are kept as an ``AppendLog`` (O(1) per write)."""


@dataclass(frozen=True, slots=True)
class _Declared:
    name: str
    fn: _reducers.Reducer
    frozen_output: bool


_REPLACE: Final = _Declared("replace", _reducers.replace, True)
_build: Final = tuple.__new__
"""Builds an ``Entry`` or ``Event`` from a full tuple of its fields, skipping the named
tuple's Python-level ``__new__`` (half the cost of the ~0.4 us ``Event(...)``; one of
each is made per write)."""


class Store:
    """A namespaced store with reducers, cheap forks and an event log.

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

    def __init__(
        self,
        *,
        reducers: Mapping[str, _reducers.Reducer] | None = None,
        types: TypeRegistry = registry,
        name: str | None = None,
    ) -> None:
        self.name = name
        self._types = types
        self._data: immutables.Map[str, Entry] = immutables.Map()
        self._index = SortedKeys()
        self._declared: dict[str, _Declared] = {}
        self._lock = threading.RLock()
        self._subscribers: list[Subscriber] = []
        self._own: list[Event] = []
        self._seq = 0
        self._parent: Store | None = None
        self._fork_seq = 0
        self._merged = False
        for key, fn in (reducers or {}).items():
            kind, _, path = key.partition(":")
            self.declare(kind, path, fn)

    # ----------------------------------------------------------------- reducers

    def declare(self, kind: str, path: str, reducer: _reducers.Reducer) -> None:
        """Say once how a field takes writes; declaring a different reducer later is an error."""
        key = _checked_key(kind, path)
        name, fn, frozen_output = _reducers.prepare(reducer)
        with self._lock:
            known = self._declared.get(key)
            if known is not None:
                if known.fn is fn:
                    return
                raise ReducerError(
                    f"{key} already has the reducer {known.name!r}; a field's reducer is "
                    f"declared once, so {name!r} cannot replace it. Use another path for "
                    "differently reduced data"
                )
            self._declared[key] = _Declared(name, fn, frozen_output)

    @property
    def types(self) -> TypeRegistry:
        """The registry of extra value types this store accepts (shared with its forks)."""
        return self._types

    def reducer_of(self, kind: str, path: str) -> str:
        """The name of the reducer a field's writes go through (``replace`` by default)."""
        return self._declared.get(make_key(kind, path), _REPLACE).name

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
        key = _checked_key(kind, path)
        declared = _REPLACE if replace else self._declared.get(key, _REPLACE)
        update = (
            value
            if type(value) in _AS_IS
            else freeze(
                value, where=key, types=self._types, allow_delete=declared.fn is _reducers.merge
            )
        )
        frozen_meta = freeze(meta, where=f"{key} meta", types=self._types) if meta else None
        with self._lock:
            return self._apply_write(
                key, kind, path, update, source or self.name, frozen_meta, declared, time.time()
            )

    def write_many(self, kind: str, writes: Iterable[tuple[str, Any, str | None]]) -> int:
        """Write many ``(path, value, source)`` updates of one kind, in order, all or none.

        Each update goes through its field's reducer and is one event in the log, exactly
        as ``write`` would make it, but the batch takes the lock once, has one timestamp,
        and publishes every entry at once: if a value cannot be stored or a reducer
        fails, the error names it and nothing of the batch is written. Subscribers hear
        the events after the batch is in. Returns how many updates were written.

        >>> from weft.store import reducers
        >>> store = Store(reducers={"state:log": reducers.append})
        >>> store.write_many("state", [("log", "a", "n1"), ("log", "b", "n2"), ("ok", 1, None)])
        3
        >>> store.value("state", "log"), [e.source for e in store.events()]
        (['a', 'b'], ['n1', 'n2', None])
        """
        _check_kind(kind)
        declared_of, types, name = self._declared.get, self._types, self.name
        at = time.time()
        with self._lock:
            data, seq = self._data, self._seq
            # key -> [entry before, value so far, path, last source, last seq, appends to add]
            staged: dict[str, list[Any]] = {}
            events: list[Event] = []
            for item in writes:
                try:
                    path, value, source = item
                except (TypeError, ValueError):
                    raise _not_a_triple("write_many", item) from None
                key = (
                    f"{kind}:{path}" if path.__class__ is str and path else _checked_key(kind, path)
                )
                declared = declared_of(key, _REPLACE)
                reducer = declared.name
                if value.__class__ not in _AS_IS:
                    value = freeze(
                        value, where=key, types=types, allow_delete=declared.fn is _reducers.merge
                    )
                slot = staged.get(key)
                if slot is None:
                    old = data.get(key)
                    slot = [old, MISSING if old is None else old.stored, path, None, 0, None]
                    staged[key] = slot
                pending = slot[5]
                if (
                    reducer in _GROWS
                    and (reducer == "append" or isinstance(value, list))
                    and (pending is not None or self._can_grow(slot[1], reducer, value))
                ):  # gathered, and added to the AppendLog in one step below
                    if pending is None:
                        pending = slot[5] = []
                    if reducer == "append":
                        pending.append(value)
                    else:
                        pending.extend(value)
                else:
                    if pending is not None:
                        slot[1], slot[5] = _grown(slot[1], pending), None
                    try:
                        slot[1] = self._reduce(key, slot[1], value, declared)
                    except ReducerError as exc:
                        raise ReducerError(
                            f"reducer {reducer!r} of {key} failed on update {seq - self._seq + 1} "
                            f"of the batch (from {source or name!r}): {exc.__cause__}. Nothing of "
                            "the batch was written"
                        ) from exc.__cause__
                seq += 1
                slot[3] = source = source or name
                slot[4] = seq
                events.append(
                    _build(Event, (seq, "write", kind, path, value, source, reducer, at, None))
                )
            if not events:
                return 0
            index = self._index
            with data.mutate() as changed:
                for key, (old, stored, path, source, last, pending) in staged.items():
                    if pending is not None:
                        stored = _grown(stored, pending)
                    if old is None:
                        index = index.add(key)
                        changed[key] = Entry(kind, path, stored, source, at, at, last, None)
                    else:
                        changed[key] = Entry(
                            kind, path, stored, source, old.created_at, at, last, old.meta
                        )
                self._data = changed.finish()
            self._index, self._seq = index, seq
            self._own.extend(events)
            if self._subscribers:
                for event in events:
                    self._notify(event)
        return len(events)

    def delete(self, kind: str, path: str, *, source: str | None = None) -> bool:
        """Remove one key; returns whether it held anything. Subscribers hear of it."""
        key = _checked_key(kind, path)
        with self._lock:
            if key not in self._data:
                return False
            self._apply_delete(key, kind, path, source or self.name, time.time())
            return True

    def clear(
        self, *, kind: str | None = None, key_prefix: str = "", source: str | None = None
    ) -> int:
        """Remove every key of ``kind`` (or of all kinds) under ``key_prefix``; returns how many."""
        if kind is not None:
            _check_kind(kind)
        with self._lock:
            return self._apply_clear(kind, key_prefix, source or self.name, time.time())

    def note(self, kind: str, path: str, value: Any = None, *, source: str | None = None) -> Event:
        """Log an event that changes no entry, for observers (a node started, say)."""
        key = _checked_key(kind, path)
        update = freeze(value, where=f"note {key}", types=self._types)
        with self._lock:
            event = self._log("note", kind, path, update, source or self.name, "replace", None)
            self._notify(event)
            return event

    def note_many(self, kind: str, notes: Iterable[tuple[str, Any, str | None]]) -> int:
        """Log many ``(path, value, source)`` notes of one kind, in order, as ``note`` would,
        under one lock and one timestamp; a value that cannot be stored is an error naming
        it, and then none of them is logged. Returns how many were logged."""
        _check_kind(kind)
        types, name = self._types, self.name
        at = time.time()
        with self._lock:
            seq = self._seq
            events: list[Event] = []
            for item in notes:  # nothing is kept until every note is good
                try:
                    path, value, source = item
                except (TypeError, ValueError):
                    raise _not_a_triple("note_many", item) from None
                key = (
                    f"{kind}:{path}" if path.__class__ is str and path else _checked_key(kind, path)
                )
                if value.__class__ not in _AS_IS:
                    value = freeze(value, where=f"note {key}", types=types)
                seq += 1
                events.append(
                    _build(
                        Event, (seq, "note", kind, path, value, source or name, "replace", at, None)
                    )
                )
            self._seq = seq
            self._own.extend(events)
            if self._subscribers:
                for event in events:
                    self._notify(event)
        return len(events)

    # -------------------------------------------------------------------- reads

    def get(self, kind: str, path: str) -> Entry | None:
        """The entry at ``kind:path``, or None."""
        return self._data.get(make_key(kind, path))

    def has(self, kind: str, path: str) -> bool:
        return make_key(kind, path) in self._data

    def value(self, kind: str, path: str, default: Any = MISSING) -> Any:
        """The value at ``kind:path``; without a default, a missing key is an error."""
        entry = self._data.get(make_key(kind, path))
        if entry is not None:
            return entry.value
        if default is not MISSING:
            return default
        raise MissingEntryError(self._missing_message(kind, path))

    def entries(
        self, *, kind: str | Iterable[str] | None = None, key_prefix: str = ""
    ) -> list[Entry]:
        """Entries in key order, filtered by kind(s) and by a prefix of the ``kind:path`` key."""
        with self._lock:
            data, index = self._data, self._index
        kinds = {kind} if isinstance(kind, str) else set(kind) if kind is not None else None
        keys = index.with_prefix(key_prefix) if key_prefix else iter(index)
        out = [data[key] for key in keys]
        return out if kinds is None else [e for e in out if e.kind in kinds]

    def keys(self) -> Iterator[str]:
        """Every ``kind:path`` key, in order."""
        return iter(self._index)

    def to_dict(self, *, kind: str | None = None) -> dict[str, Any]:
        """``{key: value}`` of every entry (of one kind if given), in key order."""
        prefix = f"{kind}:" if kind is not None else ""
        return {e.key: e.value for e in self.entries(key_prefix=prefix)}

    def __len__(self) -> int:
        return len(self._data)

    def __contains__(self, key: object) -> bool:
        return key in self._data

    # -------------------------------------------------------------- event log

    @property
    def last_seq(self) -> int:
        """The sequence number of the newest event this store can see."""
        return self._seq

    def events(self, since: int = 0) -> list[Event]:
        """Events with ``seq > since``, oldest first, including those inherited from a parent."""
        with self._lock:
            own = self._own[bisect_right(self._own, since, key=_seq_of) :]
            if self._parent is None or since >= self._fork_seq:
                return own
            inherited = [e for e in self._parent.events(since) if e.seq <= self._fork_seq]
            return inherited + own

    @property
    def observed(self) -> bool:
        """Whether anyone subscribes: events meant only for observers can be skipped if not."""
        return bool(self._subscribers)

    def subscribe(self, fn: Subscriber) -> Callable[[], None]:
        """Call ``fn(event)`` for every later event; returns a function that unsubscribes.

        Subscribers run in order, inside the write and after the entry is set (so
        ``store.get`` in a subscriber sees the new value), and see events in
        sequence order; keep them quick. One that raises is logged with its name and never
        breaks the write or the other subscribers.
        """
        with self._lock:
            self._subscribers = [*self._subscribers, fn]

        def unsubscribe() -> None:
            with self._lock:
                self._subscribers = [s for s in self._subscribers if s is not fn]

        return unsubscribe

    @classmethod
    def from_events(
        cls,
        events: Iterable[Event],
        *,
        reducers: Mapping[str, _reducers.Reducer] | None = None,
        types: TypeRegistry = registry,
        name: str | None = None,
    ) -> Store:
        """Rebuild a store by replaying its events; built-in reducers are found by name.

        A write through a user reducer needs that reducer declared in ``reducers``.
        """
        store = cls(reducers=reducers, types=types, name=name)
        with store._lock:
            for event in events:
                store._replay(event)
        return store

    # -------------------------------------------------------------------- forks

    def fork(self, *, name: str | None = None) -> Store:
        """An isolated child in O(1): it sees this store as it is now, and its writes
        stay its own until ``merge``. ``name`` is the default ``source`` of its writes."""
        child = Store.__new__(Store)
        with self._lock:
            child.name = name
            child._types = self._types
            child._data = self._data
            # both sides then sort the keys written before the fork once, not once each
            child._index = self._index = self._index.fork()
            child._declared = self._declared
            child._lock = threading.RLock()
            child._subscribers = []
            child._own = []
            child._seq = self._seq
            child._parent = self
            child._fork_seq = self._seq
            child._merged = False
        return child

    def merge(self, children: Iterable[Store]) -> None:
        """Fold the children's writes into this store, child by child in the order given.

        Each write goes through the field's reducer, so reducer fields combine in
        child order. Two children that both replaced (or deleted) one field is a
        ``MergeConflictError`` naming the field and both writers, and nothing is
        merged.
        """
        forks = list(children)
        with self._lock:
            for child in forks:
                if child._parent is not self:
                    raise StoreError(
                        f"cannot merge {child!r}: it is not a fork of this store; "
                        "merge a fork into the store it was forked from"
                    )
                if child._merged:
                    raise StoreError(f"{child!r} was merged already; a fork merges once")
            self._check_conflicts(forks)
            for child in forks:
                with child._lock:
                    for event in child._own:
                        self._replay(event, keep_seq=False)
                    child._merged = True

    def _check_conflicts(self, forks: list[Store]) -> None:
        first_writer: dict[str, tuple[int, str]] = {}
        for position, child in enumerate(forks):
            for event in child._own:
                if event.op == "delete" or (event.op == "write" and event.reducer == "replace"):
                    who = event.source or child.name or f"fork #{position + 1} (unnamed)"
                    seen = first_writer.get(event.key)
                    if seen is None:
                        first_writer[event.key] = (position, who)
                    elif seen[0] != position:
                        raise MergeConflictError(
                            f"{event.key} was written by two parallel branches, {seen[1]!r} "
                            f"and {who!r}, and it keeps only the last write; declare a reducer "
                            f"for it (e.g. store.declare({event.kind!r}, {event.path!r}, "
                            "reducers.append)) or let one branch write it"
                        )

    def __repr__(self) -> str:
        label = f" {self.name!r}" if self.name else ""
        return f"<Store{label} entries={len(self._data)} seq={self._seq}>"

    # ---------------------------------------------------------------- internals

    def _apply_write(
        self,
        key: str,
        kind: str,
        path: str,
        update: Any,
        source: str | None,
        meta: Mapping[str, Any] | None,
        declared: _Declared,
        at: float,
        seq: int | None = None,
    ) -> Entry:
        old = self._data.get(key)
        new = self._reduce(key, MISSING if old is None else old.stored, update, declared)
        event = self._log("write", kind, path, update, source, declared.name, meta, at, seq)
        entry: Entry = _build(  # Entry(...) without the named tuple's Python-level __new__
            Entry,
            (
                kind,
                path,
                new,
                source,
                at if old is None else old.created_at,
                at,
                event.seq,
                meta if meta is not None or old is None else old.meta,
            ),
        )
        if old is None:
            self._index = self._index.add(key)
        self._data = self._data.set(key, entry)
        self._notify(event)
        return entry

    def _reduce(self, key: str, stored: Any, update: Any, declared: _Declared) -> Any:
        """What ``key`` holds after ``update`` went through its reducer (``stored``: what it
        held before, as ``Entry.stored``; ``MISSING`` when absent)."""
        if declared.fn is _reducers.replace or (stored is MISSING and not declared.frozen_output):
            return update  # user reducers are first called once there is a current value
        if declared.name in _GROWS and self._can_grow(stored, declared.name, update):
            items = (update,) if declared.name == "append" else tuple(update)
            return AppendLog.grow(None if stored is MISSING else stored, items)
        try:
            new = declared.fn(read(stored), update)
        except Exception as exc:
            raise ReducerError(
                f"reducer {declared.name!r} of {key} failed: {exc}. Nothing was written"
            ) from exc
        if not declared.frozen_output:
            new = freeze(new, where=f"{key} (result of {declared.name})", types=self._types)
        return new

    @staticmethod
    def _can_grow(stored: Any, reducer: str, update: Any) -> bool:
        """Whether a write can be an O(1) append to an ``AppendLog`` (else the reducer runs)."""
        if stored is not MISSING and not isinstance(stored, (list, AppendLog)):
            return False
        return reducer == "append" or isinstance(update, list)

    def _apply_delete(
        self, key: str, kind: str, path: str, source: str | None, at: float, seq: int | None = None
    ) -> None:
        self._data = self._data.delete(key)
        self._index = self._index.remove(key)
        self._notify(self._log("delete", kind, path, None, source, "replace", None, at, seq))

    def _apply_clear(
        self,
        kind: str | None,
        key_prefix: str,
        source: str | None,
        at: float,
        seq: int | None = None,
    ) -> int:
        prefix = key_prefix or (f"{kind}:" if kind is not None else "")
        keys = self._index.with_prefix(prefix) if prefix else iter(self._index)
        doomed = [key for key in keys if kind is None or key.startswith(f"{kind}:")]
        if doomed:
            with self._data.mutate() as data:
                for key in doomed:
                    del data[key]
                self._data = data.finish()
            index = self._index
            for key in doomed:
                index = index.remove(key)
            self._index = index
        event = self._log("clear", kind or "", key_prefix, None, source, "replace", None, at, seq)
        self._notify(event)
        return len(doomed)

    def _log(
        self,
        op: Op,
        kind: str,
        path: str,
        value: Any,
        source: str | None,
        reducer: str,
        meta: Mapping[str, Any] | None,
        at: float | None = None,
        seq: int | None = None,
    ) -> Event:
        self._seq = self._seq + 1 if seq is None else seq
        event: Event = _build(  # as Entry in _apply_write
            Event,
            (
                self._seq,
                op,
                kind,
                path,
                value,
                source,
                reducer,
                time.time() if at is None else at,
                meta,
            ),
        )
        self._own.append(event)
        return event

    def _notify(self, event: Event) -> None:
        for fn in self._subscribers:
            try:
                fn(event)
            except Exception:
                logger.exception(
                    "store subscriber %s raised on event %s %s; the write stands and other "
                    "subscribers still run",
                    getattr(fn, "__qualname__", repr(fn)),
                    event.op,
                    event.key,
                )

    def _replay(self, event: Event, *, keep_seq: bool = True) -> None:
        seq = event.seq if keep_seq else None
        if seq is not None and seq <= self._seq:
            raise StoreError(
                f"event {seq} comes after event {self._seq}; replay events oldest first, "
                "as events() returns them"
            )
        if event.op == "write":
            key = _checked_key(event.kind, event.path)
            declared = self._declared_for_replay(key, event.reducer)
            self._apply_write(
                key,
                event.kind,
                event.path,
                event.value,
                event.source,
                event.meta,
                declared,
                event.time,
                seq,
            )
        elif event.op == "delete":
            key = make_key(event.kind, event.path)
            if key in self._data:
                self._apply_delete(key, event.kind, event.path, event.source, event.time, seq)
            else:
                self._notify(
                    self._log(
                        "delete",
                        event.kind,
                        event.path,
                        None,
                        event.source,
                        "replace",
                        None,
                        event.time,
                        seq,
                    )
                )
        elif event.op == "clear":
            self._apply_clear(event.kind or None, event.path, event.source, event.time, seq)
        elif event.op == "note":
            self._notify(
                self._log(
                    "note",
                    event.kind,
                    event.path,
                    event.value,
                    event.source,
                    event.reducer,
                    event.meta,
                    event.time,
                    seq,
                )
            )
        else:
            raise StoreError(f"event {event.seq} has an unknown op {event.op!r}")

    def _declared_for_replay(self, key: str, reducer: str) -> _Declared:
        if reducer == "replace":
            return _REPLACE
        declared = self._declared.get(key)
        if declared is None:
            builtin = _reducers.by_name(reducer)
            if builtin is None and reducer == "operator.add":
                builtin = operator.add
            if builtin is None:
                raise ReducerError(
                    f"the log writes {key} through the reducer {reducer!r}, which is not a "
                    f"built-in; pass reducers={{{key!r}: {reducer.rsplit('.', 1)[-1]}}} to "
                    "rebuild it"
                )
            kind, _, path = key.partition(":")
            self.declare(kind, path, builtin)
            declared = self._declared[key]
        if declared.name != reducer:
            raise ReducerError(
                f"the log writes {key} through {reducer!r} but this store declares "
                f"{declared.name!r} for it; declare the reducer the log was written with"
            )
        return declared

    def _missing_message(self, kind: str, path: str) -> str:
        key = make_key(kind, path)
        near = list(itertools.islice(self._index.with_prefix(f"{kind}:"), 10))
        known = ", ".join(near) if near else f"no {kind} entries at all"
        return (
            f"nothing is stored at {key}; {kind} holds: {known}. Check the path for a typo, "
            "or pass a default to read a key that may be absent"
        )


def _not_a_triple(method: str, item: Any) -> StoreError:
    return StoreError(
        f"{method} takes (path, value, source) tuples, got {item!r}; pass source=None for "
        "the store's name. Nothing of the batch was written"
    )


def _grown(stored: Any, items: list[Any]) -> AppendLog:
    """``stored`` (an ``Entry.stored`` or ``MISSING``) with ``items`` appended."""
    return AppendLog.grow(None if stored is MISSING else stored, tuple(items))


def _check_kind(kind: str) -> None:
    if kind not in KINDS:
        raise InvalidKeyError(f"unknown kind {kind!r}; the kinds are {', '.join(KINDS)}")


def _seq_of(event: Event) -> int:
    return event.seq


def _checked_key(kind: str, path: str) -> str:
    if kind in _KIND_SET and type(path) is str and path:
        return f"{kind}:{path}"
    _check_kind(kind)
    if not isinstance(path, str) or not path:
        raise InvalidKeyError(f"{kind}: the path must be a non-empty string, got {path!r}")
    return make_key(kind, path)
