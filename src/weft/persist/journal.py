"""The journal of a durable run: where its store's commits are appended to a backend.

The store hands every commit to its journal (``weft.store.Journal``) after applying it and
before any subscriber hears of it; the journal appends the commit's events to the thread as
one transaction of the backend, or raises, and then the store undoes the commit: a write
that is not durable does not happen. The journal never looks inside a record to decide what
belongs together: a commit is the unit (a write, a batch, a merge, a whole
``store.transaction()``, a WorkGraph node's writes with its step record).

What is appended:

- the commit's events, except writes to fields declared never persisted (the store leaves
  those out) and notes (events that change no entry: a node started, say), which are
  appended never (``notes="off"``, the default: they are for live observers), with the next
  commit (``"lazy"``: an audit of timings at little cost), or at once (``"eager"``: a live
  feed for another process);
- a snapshot in the same transaction once at least ``snapshot_every`` events have passed
  since the last one *and* at least half as many as the state had items then (a list's
  items count one by one): snapshots grow apart as the state grows, so their cost per event
  stays constant, while a load still replays no more than half the state's size.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from typing import Literal

from weft.persist.base import Backend
from weft.persist.snapshot import capture
from weft.persist.travel import load_store
from weft.store import Event, Store
from weft.store import reducers as _reducers

Notes = Literal["lazy", "eager", "off"]


class RunJournal:
    """Appends one store's commits to one thread (``DurableRun`` makes and owns it)."""

    def __init__(
        self,
        backend: Backend,
        thread_id: str,
        run_id: str,
        *,
        step: int,
        since_snapshot: int,
        snapshot_every: int,
        keep_snapshots: int,
        notes: Notes,
        weight: int,
        reducers: Mapping[str, _reducers.Reducer],
    ) -> None:
        self.backend = backend
        self.thread_id = thread_id
        self.run_id = run_id
        self.step = step
        self.since_snapshot = since_snapshot
        self.snapshot_every = snapshot_every
        self.snapshot_weight = weight
        self.keep_snapshots = keep_snapshots
        self.notes = notes
        self.reducers = reducers
        self.lock = threading.Lock()
        self.pending: list[Event] = []  # lazy notes, appended with the next commit

    def commit(self, store: Store, events: Sequence[Event]) -> None:
        """Append one commit (see the module docstring); raises if the backend refuses."""
        with self.lock:
            notes = self.notes
            if notes == "off":
                batch = [e for e in events if e.op != "note"]
            else:
                batch = [*self.pending, *events]
                if notes == "lazy" and all(e.op == "note" for e in events):
                    self.pending = batch
                    return
            if not batch:
                return
            snapshot = None
            if self._due(len(batch)):
                snapshot = capture(store, step=batch[-1].seq)
            self.step = self.backend.append(
                self.thread_id,
                self.run_id,
                self.step,
                batch,
                snapshot=snapshot,
                keep_snapshots=self.keep_snapshots,
            )
            self.pending = []
            if snapshot is None:
                self.since_snapshot += len(batch)
            else:
                self.since_snapshot = 0
                self.snapshot_weight = snapshot.weight

    def flush(self) -> None:
        """Append the lazy notes kept so far, if any."""
        with self.lock:
            if not self.pending:
                return
            batch, self.pending = self.pending, []
            self.step = self.backend.append(
                self.thread_id, self.run_id, self.step, batch, keep_snapshots=self.keep_snapshots
            )
            self.since_snapshot += len(batch)

    def state_at(self, seq: int) -> Store | None:
        """The thread as it was at step ``seq``, read from the backend."""
        self.flush()
        return load_store(self.backend, self.thread_id, step=seq, reducers=self.reducers)

    def _due(self, count: int) -> bool:
        if not self.snapshot_every:
            return False
        since = self.since_snapshot + count
        return since >= self.snapshot_every and since >= self.snapshot_weight // 2
