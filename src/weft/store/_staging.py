"""The staging half of ``weft.store.Store`` (which inherits it): how a write, a delete, a
clear or a replayed event changes the entries, the key index and the store's own log, under
the lock and before the commit is published (``Store._publish``). Also the declarations
of reducers as the store keeps them, and the checks of kinds and keys."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

import immutables

from weft.errors import InvalidKeyError, ReducerError, StoreError, ValueTypeError
from weft.store import _entries
from weft.store import reducers as _reducers
from weft.store._entries import GONE
from weft.store._log import AppendLog, read
from weft.store.events import KINDS, EntryRow, Event, EventRow, Op, make_key
from weft.store.merge import Merging
from weft.store.values import MISSING, TypeRegistry, check_text, freeze

_KIND_SET: Final = frozenset(KINDS)
_logger: Final = logging.getLogger("weft.store")
_GROWS: Final = frozenset({"append", "extend", "operator.add"})
"""Reducers whose list results are kept as an ``AppendLog`` (O(1) per write)."""


@dataclass(frozen=True, slots=True)
class _Declared:
    name: str
    fn: _reducers.Reducer
    frozen_output: bool
    persist: bool = True

    def replacing(self) -> _Declared:
        """This field's declaration for a write of the whole value, past its reducer."""
        if self.name == "replace":
            return self
        return _Declared("replace", _reducers.replace, True, self.persist)


_REPLACE: Final = _Declared("replace", _reducers.replace, True)
_REPLACE_FN: Final = _reducers.replace


class Staging(Merging):
    """Staging for ``Store``: call these under the store's lock."""

    __slots__ = ()

    # Store's own (see there)
    _declared: dict[str, _Declared]
    _types: TypeRegistry
    declare: Callable[..., None]

    def _stage_batch(
        self, items: Sequence[tuple[str, str, Any, str | None, bool]], at: float
    ) -> list[EventRow]:
        """Apply ``(kind, path, value, source, whole)`` updates (values frozen, keys checked)
        in order, as ``write`` would one by one, but with one map change: appends to one
        field are gathered into one ``AppendLog`` step. Raises before changing anything
        if a reducer refuses an update. Call under the lock; returns the events' rows."""
        if not self._declared:
            return self._stage_replaces(items, at)
        declared_of = self._declared.get
        recent, settled = self._recent, self._settled
        seq = first = self._seq
        # key -> [entry before, value so far, kind, path, last source, last seq, appends]
        staged: dict[str, list[Any]] = {}
        events: list[EventRow] = []
        # the appends of the last item's field while the items append to it one after
        # another (a fan-out's branches, gathered: ~55 opcodes an item less)
        gathering: list[Any] | None = None
        last_kind = last_path = None
        slot: list[Any] = []
        for kind, path, value, source, whole in items:
            if gathering is not None and path is last_path and kind is last_kind and not whole:
                gathering.append(value)
                seq += 1
                events.append((seq, "write", kind, path, value, source, "append", at, None))
                continue
            if gathering is not None:  # the field's last writer and seq, as the run ends
                last = events[-1]
                slot[4], slot[5] = last[5], last[0]
                gathering = None
            key = _KEYS[kind].get(path) or f"{kind}:{path}"  # the memo's: its hash is known
            declared = declared_of(key, _REPLACE)
            if whole:
                declared = declared.replacing()
            reducer = declared.name
            found = staged.get(key)
            if found is None:
                old = _entries.lookup(recent, settled, key)
                slot = [old, MISSING if old is None else old[2], kind, path, None, 0, None]
                staged[key] = slot
            else:
                slot = found
            pending = slot[6]
            if pending is None and declared.fn is _REPLACE_FN:  # _reduce's first case
                slot[1] = value
            elif (
                reducer in _GROWS
                and (reducer == "append" or isinstance(value, list))
                and (pending is not None or _can_grow(slot[1], reducer, value))
            ):  # gathered, and added to the AppendLog in one step below
                if pending is None:
                    pending = slot[6] = []
                if reducer == "append":
                    pending.append(value)
                    gathering, last_kind, last_path = pending, kind, path
                else:
                    pending.extend(value)
            else:
                if pending is not None:
                    slot[1], slot[6] = _grown(slot[1], pending), None
                try:
                    slot[1] = self._reduce(key, slot[1], value, declared)
                except ReducerError as exc:
                    raise ReducerError(
                        f"reducer {reducer!r} of {key} failed on update {seq - first + 1} "
                        f"(from {source!r}): {exc.__cause__}"
                    ) from exc.__cause__
            seq += 1
            slot[4] = source
            slot[5] = seq
            events.append((seq, "write", kind, path, value, source, reducer, at, None))
        if gathering is not None:
            last = events[-1]
            slot[4], slot[5] = last[5], last[0]
        index = self._index
        with recent.mutate() as changed:
            for key, (old, stored, kind, path, source, last, pending) in staged.items():
                if pending is not None:
                    stored = _grown(stored, pending)
                if old is None:
                    index = index.add(key)
                    changed[key] = (kind, path, stored, source, at, at, last, None)
                else:  # old[4], old[7]: created_at, meta
                    changed[key] = (kind, path, stored, source, old[4], at, last, old[7])
            self._recent = changed.finish()
        self._index, self._seq = index, seq
        self._own.extend(events)
        if len(self._recent) > self._settle_at:
            self._settle()
        return events

    def _stage_replaces(
        self, items: Sequence[tuple[str, str, Any, str | None, bool]], at: float
    ) -> list[EventRow]:
        """``_stage_batch`` in a store family that declares no reducer: every write
        replaces, so each key holds its last write and nothing can fail (a durable chain's
        commit of a delta and its record: 126.0k -> 122.7k instructions per node, callgrind)."""
        recent, settled, index = self._recent, self._settled, self._index
        seq = self._seq
        events: list[EventRow] = []
        for kind, path, value, source, _whole in items:
            seq += 1
            key = f"{kind}:{path}"
            found = recent.get(key)  # _entries.lookup, inlined; a key written twice in the
            old = settled.get(key) if found is None else found or None  # batch finds its first
            if old is None:
                index = index.add(key)
                recent = recent.set(key, (kind, path, value, source, at, at, seq, None))
            else:  # old[4], old[7]: created_at, meta
                recent = recent.set(key, (kind, path, value, source, old[4], at, seq, old[7]))
            events.append((seq, "write", kind, path, value, source, "replace", at, None))
        self._recent, self._index, self._seq = recent, index, seq
        self._own.extend(events)
        if len(recent) > self._settle_at:
            self._settle()
        return events

    def _stage_write(
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
    ) -> tuple[EntryRow, EventRow]:
        """Write ``update`` through ``declared``; returns the new entry's and event's rows."""
        recent = self._recent
        old = _entries.lookup(recent, self._settled, key)
        new = self._reduce(key, MISSING if old is None else old[2], update, declared)  # [2]: stored
        event = self._log("write", kind, path, update, source, declared.name, meta, at, seq)
        if old is None:
            row = (kind, path, new, source, at, at, self._seq, meta)
            self._index = self._index.add(key)
        else:  # old[4], old[7]: created_at, meta
            row = (kind, path, new, source, old[4], at, self._seq, old[7] if meta is None else meta)
        self._recent = recent.set(key, row)
        if len(self._recent) > self._settle_at:
            self._settle()
        return row, event

    def _settle(self) -> None:
        """Fold the recent entries into a new settled dict (see ``weft.store._entries``).
        Settled first: a reader without the lock reads recent, then settled, so it sees
        every entry in one or the other."""
        self._settled = _entries.settle(self._recent, self._settled)
        self._recent = immutables.Map()
        self._settle_at = _entries.settle_at(self._recent, self._settled)

    def _reducer_name(self, key: str) -> str:
        return self._declared.get(key, _REPLACE).name

    def _reduce(self, key: str, stored: Any, update: Any, declared: _Declared) -> Any:
        """What ``key`` holds after ``update`` went through its reducer (``stored``: what it
        held before, as ``Entry.stored``; ``MISSING`` when absent)."""
        if declared.fn is _reducers.replace or (stored is MISSING and not declared.frozen_output):
            return update  # user reducers are first called once there is a current value
        if declared.name in _GROWS and _can_grow(stored, declared.name, update):
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

    def _stage_delete(
        self, key: str, kind: str, path: str, source: str | None, at: float, seq: int | None = None
    ) -> EventRow:
        if key in self._settled:
            self._recent = self._recent.set(key, GONE)
            if len(self._recent) > self._settle_at:
                self._settle()
        else:
            self._recent = self._recent.delete(key)
        self._index = self._index.remove(key)
        return self._log("delete", kind, path, None, source, "replace", None, at, seq)

    def _stage_clear(
        self,
        kind: str | None,
        key_prefix: str,
        source: str | None,
        at: float,
        seq: int | None = None,
    ) -> tuple[int, EventRow]:
        prefix = key_prefix or (f"{kind}:" if kind is not None else "")
        keys = self._index.with_prefix(prefix) if prefix else iter(self._index)
        doomed = [key for key in keys if kind is None or key.startswith(f"{kind}:")]
        if doomed:
            settled = self._settled
            with self._recent.mutate() as recent:
                for key in doomed:
                    if key in settled:
                        recent[key] = GONE
                    else:
                        del recent[key]
                self._recent = recent.finish()
            if len(self._recent) > self._settle_at:
                self._settle()
            index = self._index
            for key in doomed:
                index = index.remove(key)
            self._index = index
        event = self._log("clear", kind or "", key_prefix, None, source, "replace", None, at, seq)
        return len(doomed), event

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
    ) -> EventRow:
        """Log an event of this store's own; returns its row."""
        self._seq = self._seq + 1 if seq is None else seq
        row = (
            self._seq,
            op,
            kind,
            path,
            value,
            source,
            reducer,
            time.time() if at is None else at,
            meta,
        )
        self._own.append(row)
        return row

    def _replay(
        self, event: Event | EventRow, *, keep_seq: bool = True, check: bool = False
    ) -> EventRow:
        """Stage ``event`` (from a log: an ``Event`` or a row) as this store's own; returns
        the row logged. ``check``: the event comes from outside (``apply``), so its key,
        source and values are checked as a write's are (a fork's own rows were already)."""
        try:
            number, op, kind, path, value, source, reducer, at, meta = event
        except (TypeError, ValueError):
            raise StoreError(
                f"expected an event (weft.store.Event, as events() returns them), got {event!r}"
            ) from None
        if check:
            _checked_source(source)
            if op == "clear":
                _checked_prefix(path)
            else:
                where = _checked_key(kind, path)
                merging = reducer == "merge"
                value = freeze(value, where=where, types=self._types, allow_delete=merging)
                meta = freeze(meta, where=f"{where} meta", types=self._types) if meta else None
        seq = number if keep_seq else None
        if seq is not None and seq <= self._seq:
            raise StoreError(
                f"event {seq} comes after event {self._seq}; replay events oldest first, "
                "as events() returns them"
            )
        if op == "write":
            key = _checked_key(kind, path)
            declared = self._declared_for_replay(key, reducer)
            return self._stage_write(key, kind, path, value, source, meta, declared, at, seq)[1]
        if op == "delete":
            key = make_key(kind, path)
            if _entries.lookup(self._recent, self._settled, key) is not None:
                return self._stage_delete(key, kind, path, source, at, seq)
            return self._log("delete", kind, path, None, source, "replace", None, at, seq)
        if op == "clear":
            return self._stage_clear(kind or None, path, source, at, seq)[1]
        if op == "note":
            return self._log("note", kind, path, value, source, reducer, meta, at, seq)
        raise StoreError(f"event {number} has an unknown op {op!r}")

    def _declared_for_replay(self, key: str, reducer: str) -> _Declared:
        if reducer == "replace":
            return self._declared.get(key, _REPLACE).replacing()
        declared = self._declared.get(key)
        if declared is None:
            builtin = _reducers.by_name(reducer)
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


def _can_grow(stored: Any, reducer: str, update: Any) -> bool:
    """Whether a write can be an O(1) append to an ``AppendLog`` (else the reducer runs)."""
    if stored is not MISSING and not isinstance(stored, (list, AppendLog)):
        return False
    return reducer == "append" or isinstance(update, list)


def _grown(stored: Any, items: list[Any]) -> AppendLog:
    """``stored`` (an ``Entry.stored`` or ``MISSING``) with ``items`` appended."""
    return AppendLog.grow(None if stored is MISSING else stored, tuple(items))


def _check_kind(kind: str) -> None:
    if kind.__class__ is not str or kind not in KINDS:
        raise InvalidKeyError(f"unknown kind {kind!r}; the kinds are {', '.join(KINDS)}")


def plain_key(kind: Any, path: Any, source: Any = None) -> bool:
    """Whether ``_checked_key`` takes ``kind:path`` written by ``source`` with no more
    look: an ASCII path, one of the kinds, an ASCII source or None. Every write path asks
    this first; anything else goes through ``_checked_key``, which says what is wrong."""
    if path.__class__ is not str or not path or not path.isascii():
        return False
    return (
        kind.__class__ is str
        and kind in _KIND_SET
        and (source is None or (source.__class__ is str and source.isascii()))
    )


# The plain keys of one-field writes, by kind and path, and their sources: such a write
# (``Batching._write_one``, every state node of a chain) and a state view's read look a
# name up here instead of calling ``plain_key`` and building the key string, which were
# an eighth of a graph node's instructions (callgrind, bench W1). A full memo starts over.
_KEYS: Final[dict[str, dict[str, str]]] = {kind: {} for kind in KINDS}
_SOURCES: Final[set[str | None]] = {None}
_REMEMBERED: Final = 4096


def remembered_key(kind: Any, path: Any, source: Any) -> str | None:
    """``kind:path`` of a ``plain_key``, now in the memo (``_KEYS``, ``_SOURCES``), or
    None for a name ``_checked_key`` must look at."""
    if not plain_key(kind, path, source):
        return None
    keys = _KEYS[kind]
    if len(keys) >= _REMEMBERED:
        keys.clear()
    key = keys[path] = f"{kind}:{path}"
    if source not in _SOURCES:
        if len(_SOURCES) >= _REMEMBERED:
            _SOURCES.clear()
            _SOURCES.add(None)
        _SOURCES.add(source)
    return key


def _checked_key(kind: str, path: str, source: str | None = None) -> str:
    """``kind:path``, or ``InvalidKeyError``: a path is a non-empty string that UTF-8 can
    hold (every backend saves it), of one of the kinds; and ``source``, who writes, is
    checked too (``_checked_source``), so that one call checks every name a write logs."""
    if plain_key(kind, path, source):
        return f"{kind}:{path}"
    _checked_source(source)
    _check_kind(kind)
    if not isinstance(path, str) or not path:
        raise InvalidKeyError(f"{kind}: the path must be a non-empty string, got {path!r}")
    try:
        check_text(path, f"the path {path!r}")
    except ValueTypeError as exc:
        raise InvalidKeyError(f"{kind}: {exc}") from None
    return make_key(kind, path)


def _batch(method: str, given: Any) -> Iterable[Any]:
    """``given``, a batch of items for ``method`` to iterate, or a ``StoreError``."""
    if isinstance(given, Iterable) and not isinstance(given, (str, bytes)):
        return given
    raise StoreError(
        f"{method} takes a list of items (or a mapping {{path: value}}), got {given!r:.80}"
    )


def _kinds(kind: Any) -> set[str]:
    """``kind`` (a kind, or several) as a set of kinds, or ``InvalidKeyError``."""
    if kind.__class__ is str:
        return {kind}
    if isinstance(kind, str | bytes) or not isinstance(kind, Iterable):
        raise InvalidKeyError(f"kind={kind!r}: expected a kind ({', '.join(KINDS)}) or a list")
    kinds = list(kind)
    for one in kinds:
        _check_kind(one)
    return set(kinds)


def _checked_prefix(prefix: Any) -> None:
    """Refuse a ``key_prefix`` that is not a string UTF-8 can hold (it is logged)."""
    if prefix.__class__ is str and prefix.isascii():
        return
    if not isinstance(prefix, str):
        raise InvalidKeyError(f"key_prefix={prefix!r}: expected a string such as 'state:'")
    try:
        check_text(prefix, f"key_prefix={prefix!r}")
    except ValueTypeError as exc:
        raise InvalidKeyError(str(exc)) from None


def _checked_source(source: Any) -> None:
    """Refuse a ``source`` that is not None or a string UTF-8 can hold (``StoreError``)."""
    if source is None or (source.__class__ is str and source.isascii()):
        return
    if not isinstance(source, str):
        raise StoreError(
            f"source={source!r}: a source names who wrote (a node, a tool, a user) and is a "
            f"string or None, not a {type(source).__name__}"
        )
    try:
        check_text(source, f"source={source!r}")
    except ValueTypeError as exc:
        raise StoreError(str(exc)) from None


def _call(fn: Callable[[Any], object], what: Any) -> None:
    try:
        fn(what)
    except Exception:
        first = what[0] if isinstance(what, tuple) and what else what
        _logger.exception(
            "store subscriber %s raised on event %s %s; the commit stands and other "
            "subscribers still run",
            getattr(fn, "__qualname__", repr(fn)),
            getattr(first, "op", "?"),
            getattr(first, "key", "?"),
        )


def _not_a_triple(method: str, item: Any) -> StoreError:
    return StoreError(
        f"{method} takes (path, value, source) tuples, got {item!r}; pass source=None for "
        "the store's name. Nothing of the batch was written"
    )
