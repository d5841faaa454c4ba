"""Writes in batches, the part of ``weft.store.Store`` that inherits ``Staging`` and that
``Store`` inherits: ``write_many`` (with ``_write_one``, the hot case of a graph node's
one-field delta) and ``note_many``. Each batch is one commit, as ``Store.write`` is."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Final

from weft.errors import ReducerError
from weft.store import reducers as _reducers
from weft.store._staging import (
    _KEYS,
    _KIND_SET,
    _REPLACE,
    _SOURCES,
    Staging,
    _batch,
    _check_kind,
    _checked_key,
    _not_a_triple,
    plain_key,
    remembered_key,
)
from weft.store.events import EntryRow, EventRow
from weft.store.values import _AS_IS, _INT_HIGH, _INT_LOW, freeze, kept

_now: Final = time.time


class Batching(Staging):
    """``write_many`` and ``note_many`` for ``Store``."""

    __slots__ = ()

    # Store's own (see there)
    _journal: Any
    _subscribers: list[Any]
    _batch_subscribers: list[Any]
    delta: Callable[..., Any]

    def write_many(
        self,
        kind: str,
        writes: Iterable[tuple[str, Any, str | None]] | Mapping[str, Any],
        *,
        source: str | None = None,
    ) -> int:
        """Write many ``(path, value, source)`` updates of one kind, in order, as one commit.

        ``writes`` may also be a mapping ``{path: value}`` (a graph node's delta, say), all
        written with ``source``.

        Each update goes through its field's reducer and is one event in the log, exactly
        as ``write`` would make it, but the batch takes the lock once, has one timestamp,
        and is all or nothing: if a value cannot be stored or a reducer fails, the error
        names it and nothing of the batch is written. Returns how many updates were
        written.

        >>> from weft.store import Store, reducers
        >>> store = Store(reducers={"state:log": reducers.append})
        >>> store.write_many("state", [("log", "a", "n1"), ("log", "b", "n2"), ("ok", 1, None)])
        3
        >>> store.value("state", "log"), [e.source for e in store.events()]
        (['a', 'b'], ['n1', 'n2', None])
        """
        if kind.__class__ is not str or kind not in _KIND_SET:
            _check_kind(kind)
        if writes.__class__ is dict or isinstance(writes, Mapping):
            if len(writes) == 1:  # a one-field delta: the common case
                for path, value in writes.items():
                    self._write_one(kind, path, value, source)
                    return 1
            writes = [(path, value, source) for path, value in writes.items()]
        elif writes.__class__ is list and len(writes) == 1:
            try:
                path, value, one_source = writes[0]
            except (TypeError, ValueError):
                raise _not_a_triple("write_many", writes[0]) from None
            self._write_one(kind, path, value, one_source)
            return 1
        types, name = self._types, self.name
        declared_of = self._declared.get
        items: list[tuple[str, str, Any, str | None, bool]] = []
        for item in _batch("write_many", writes):
            try:
                path, value, source = item
            except (TypeError, ValueError):
                raise _not_a_triple("write_many", item) from None
            key = _checked_key(kind, path, source)
            if not kept(value):
                merging = declared_of(key, _REPLACE).fn is _reducers.merge
                value = freeze(value, where=key, types=types, allow_delete=merging)
            items.append((kind, path, value, source or name, False))
        if not items:
            return 0
        with self._lock:
            mark = self._mark()
            try:
                events = self._stage_batch(items, time.time())
            except ReducerError as exc:
                raise ReducerError(f"{exc} of the batch. Nothing of the batch was written") from (
                    exc.__cause__
                )
            self._publish(events, mark)
        return len(events)

    def _commit_writes(
        self, writes: Sequence[tuple[str, str, Any, str | None]], *, last_frozen: bool = False
    ) -> None:
        """``merge([delta(writes)])`` of a delta made on this very store and merged at once,
        in one step: nothing can be written between the two, so there is no conflict to
        look for and no ``Delta`` to make. A recorded graph node's delta with its step record
        (the commit of every node of a durable chain) goes this way. ``last_frozen``: the
        last write's value needs no check (a step record of scalars its caller just made,
        whose check is a tenth of the node's commit)."""
        items = self._plain_items(writes, len(writes) - 1 if last_frozen else -1)
        if items is None:  # a write that needs the full checks: ``delta`` says what is wrong
            self.merge([self.delta(writes)])
            return
        self._commit_items(items)

    def _commit_items(self, items: list[tuple[str, str, Any, str | None, bool]]) -> None:
        """``_commit_writes`` of ``(kind, path, value, source, False)`` items its caller
        checked: every name a ``plain_key``, every value one the store keeps as it is."""
        with self._lock:
            mark = self._mark()
            try:
                events = self._apply_batch(items)
            except BaseException:
                self._rollback(mark)
                raise
            self._publish(events, mark)

    def _plain_items(
        self, writes: Sequence[Any], unchecked: int = -1
    ) -> list[tuple[str, str, Any, str | None, bool]] | None:
        """The items of ``(kind, path, value, source)`` writes, their values frozen, or None
        when one of them needs the full checks (not such a tuple, or not a ``plain_key``).
        The value of write number ``unchecked`` is taken as it is (a record its caller just
        made of scalars)."""
        types, declared = self._types, self._declared
        items: list[tuple[str, str, Any, str | None, bool]] = []
        for n, write in enumerate(writes):
            if write.__class__ is not tuple or len(write) != 4:
                return None
            kind, path, value, source = write
            if not plain_key(kind, path, source):
                return None
            if n != unchecked and not kept(value):
                key = f"{kind}:{path}"
                merging = declared.get(key, _REPLACE).fn is _reducers.merge
                value = freeze(value, where=key, types=types, allow_delete=merging)
            items.append((kind, path, value, source, False))
        return items

    def _write_one(self, kind: str, path: Any, value: Any, source: str | None) -> Any:
        """``write_many`` of one update: the same commit, with less bookkeeping (a graph
        node's one-field delta is the common case). Returns the update as it was stored:
        ``value`` itself when the store ``kept`` it, else its frozen copy."""
        try:  # a plain key written so before (``remembered_key``)
            key = _KEYS[kind].get(path) if source in _SOURCES else None
        except (KeyError, TypeError):  # an unknown kind, a name that is no str
            key = None
        if key is None:
            key = remembered_key(kind, path, source) or _checked_key(kind, path, source)
        declared = self._declared.get(key)  # None: undeclared, so it replaces
        cls = value.__class__  # ``kept(value)``, inlined: ~4% of a W1 node
        if not (
            (cls is int and _INT_LOW < value < _INT_HIGH)
            or cls in _AS_IS
            or (cls is str and value.isascii())
        ):
            merging = declared is not None and declared.fn is _reducers.merge
            value = freeze(value, where=key, types=self._types, allow_delete=merging)
        source = source or self.name
        lock = self._lock  # acquire/release: a third of the cost of a with-block
        lock.acquire()
        try:
            if self._journal is not None or (
                declared is not None and declared.fn is not _reducers.replace
            ):
                if declared is None:
                    declared = _REPLACE
                mark = self._mark()
                try:
                    _, event = self._stage_write(
                        key, kind, path, value, source, None, declared, time.time()
                    )
                except ReducerError as exc:
                    raise ReducerError(
                        f"reducer {declared.name!r} of {key} failed on update 1 of the batch "
                        f"(from {source!r}): {exc.__cause__}. Nothing of the batch was written"
                    ) from exc.__cause__
                self._publish((event,), mark)
                return value
            # a replace write with no journal: nothing can fail once it is staged
            recent = self._recent
            found = recent.get(key)  # _entries.lookup, inlined
            old = self._settled.get(key) if found is None else found or None
            seq = self._seq + 1
            at = _now()
            event = (seq, "write", kind, path, value, source, "replace", at, None)
            row: EntryRow
            if old is None:
                index = self._index
                self._index = index.add(key)
                row = (kind, path, value, source, at, at, seq, None)
            else:  # old[4], old[7]: created_at, meta
                row = (kind, path, value, source, old[4], at, seq, old[7])
            self._recent = written = recent.set(key, row)
            self._seq = seq
            self._own.append(event)
            if self._subscribers or self._batch_subscribers:
                if old is not None:  # else the index before the new key's
                    index = self._index
                before = (recent, self._settled, self._settle_at, index, seq - 1)
                self._publish((event,), (*before, len(self._own) - 1))
            if len(written) > self._settle_at:
                self._settle()
        finally:
            lock.release()
        return value

    def note_many(self, kind: str, notes: Iterable[tuple[str, Any, str | None]]) -> int:
        """Log many ``(path, value, source)`` notes of one kind, in order, as one commit, as
        ``note`` would, under one lock and one timestamp; a value that cannot be stored is
        an error naming it, and then none of them is logged. Returns how many were logged."""
        _check_kind(kind)
        types = self._types
        checked: list[tuple[str, Any, str | None]] = []
        for item in _batch("note_many", notes):  # nothing is logged until all are good
            try:
                path, value, source = item
            except (TypeError, ValueError):
                raise _not_a_triple("note_many", item) from None
            key = _checked_key(kind, path, source)
            if not kept(value):
                value = freeze(value, where=f"note {key}", types=types)
            checked.append((path, value, source))
        return self._log_notes(kind, checked)

    def _log_notes(self, kind: str, notes: Sequence[tuple[str, Any, str | None]]) -> int:
        """``note_many`` of notes its caller checked: a known kind, every path and source a
        name ``_checked_key`` takes, every value one the store keeps as it is (a graph's
        started and finished notes, whose fields the engine made; ``Observer``)."""
        name = self.name
        at = time.time()
        with self._lock:
            seq = self._seq
            events: list[EventRow] = []
            for path, value, source in notes:
                seq += 1
                events.append((seq, "note", kind, path, value, source or name, "replace", at, None))
            if not events:
                return 0
            mark = self._mark()
            self._seq = seq
            self._own.extend(events)
            self._publish(events, mark)
        return len(events)
