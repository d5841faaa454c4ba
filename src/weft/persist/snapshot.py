"""Snapshots: a store's entries at one step, so loading need not replay all of history.

A thread's event log is its checkpoint; a snapshot is only a cache over it. Loading a
thread at step ``s`` takes the newest snapshot at or before ``s`` and replays the events
after it, so it costs O(events since that snapshot), not O(history).

Seeding a store from a snapshot goes through the public ``Store.from_events``: each
entry becomes one synthetic ``write`` event (reducer ``replace``, the entry's own seq,
source, meta and ``updated_at`` as the time), in seq order, and a ``note`` at the
snapshot's step when the newest entry is older than it (so new writes continue the
thread's step numbers). Two consequences, both documented on ``DurableRun``: a store
seeded this way has ``created_at == updated_at`` for entries written before the snapshot
(the store has no public way to set ``created_at``), and its ``events()`` start with the
synthetic writes (the real history is ``Backend.history``).
"""

from __future__ import annotations

import itertools
import operator
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Final

from weft.errors import ReducerError
from weft.store import Entry, Event, Store, TypeRegistry, registry
from weft.store import reducers as _reducers

SNAPSHOT_NOTE_PATH: Final = "weft.persist/snapshot"
"""The path (kind ``step``) of the synthetic note that carries a snapshot's step."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Snapshot:
    """Every entry of a store at ``step``, and the reducer names of their fields."""

    step: int
    entries: tuple[Entry, ...]
    reducers: Mapping[str, str] = field(default_factory=dict)

    @property
    def weight(self) -> int:
        """What the snapshot costs, in items (``Entry.weight`` summed)."""
        return sum(entry.weight for entry in self.entries)


def capture(store: Store, *, step: int | None = None) -> Snapshot:
    """A snapshot of ``store`` as it is now, at ``step`` (default: its last step); fields
    declared never persisted are left out. Call it where no other thread writes (a journal
    runs under the store's lock)."""
    entries = tuple(e for e in store.entries() if store.persisted(e.kind, e.path))
    named = {
        e.key: name for e in entries if (name := store.reducer_of(e.kind, e.path)) != "replace"
    }
    return Snapshot(step=store.last_seq if step is None else step, entries=entries, reducers=named)


def build_store(
    snapshot: Snapshot | None,
    events: Iterable[Event],
    *,
    reducers: Mapping[str, _reducers.Reducer] | None = None,
    types: TypeRegistry = registry,
    name: str | None = None,
) -> Store:
    """A store rebuilt from an optional snapshot and the events after it.

    Built-in reducers are found by name; a field reduced by your own function needs it in
    ``reducers`` (``{"state:notes": my_reducer}``), as ``Store.from_events`` does.
    """
    declared = dict(reducers or {})
    if snapshot is not None:
        for key, reducer in snapshot.reducers.items():
            known = declared.get(key)
            if known is None:
                declared[key] = _builtin(key, reducer, snapshot.step)
            elif (given := _reducers.reducer_name(known)) != reducer:
                raise ReducerError(
                    f"the snapshot at step {snapshot.step} reduces {key} with {reducer!r}, but "
                    f"reducers= gives {given!r}; pass the reducer the thread was written with"
                )
    seeded = _seed(snapshot) if snapshot is not None else iter(())
    return Store.from_events(
        itertools.chain(seeded, events),
        reducers=declared,
        types=types,
        name=name,
        history_from=snapshot.step if snapshot is not None else 0,
    )


def _seed(snapshot: Snapshot) -> Iterator[Event]:
    last, at = 0, 0.0
    for e in sorted(snapshot.entries, key=lambda e: e.seq):
        yield Event(
            e.seq, "write", e.kind, e.path, e.value, e.source, "replace", e.updated_at, e.meta
        )
        last, at = e.seq, e.updated_at
    if last < snapshot.step:
        yield Event(
            snapshot.step, "note", "step", SNAPSHOT_NOTE_PATH, None, "weft.persist", "replace", at
        )


def _builtin(key: str, name: str, step: int) -> _reducers.Reducer:
    if name == "operator.add":
        return operator.add
    fn = _reducers.by_name(name)
    if fn is None:
        raise ReducerError(
            f"the snapshot at step {step} reduces {key} with {name!r}, which is not a built-in; "
            f"pass reducers={{{key!r}: {name.rsplit('.', 1)[-1]}}} to load the thread"
        )
    return fn
