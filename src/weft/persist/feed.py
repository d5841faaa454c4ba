"""The feed: a store subscriber that appends each event to a thread as it happens.

This is where ``DurableRun`` decides what is appended, and when:

- writes, deletes and clears: at once, one append (one transaction) each;
- notes (a graph node ``started``/``finished``, with its duration; they change no entry):
  never (``"off"``, the default: they are telemetry, not state, and writing them costs
  a third of a node's append), with the next append (``"lazy"``: an audit of timings at
  little cost), or each on its own (``"eager"``: a live feed for another process);
- a WorkGraph's commit of its state deltas at the end of a recorded run: held, then
  appended in one transaction with the run record that marks the run completed, so a
  crash inside the commit never stores half of it (the resumed run commits it once).
  The feed follows the graph's documented records (``weft.graph.resume``): a state
  write whose source is a node key of a run recorded as ``running`` starts the hold;
- a snapshot goes into the same transaction once at least ``snapshot_every`` events
  have passed since the last one *and* at least half as many as the state had items
  then (a list's items count one by one): snapshots grow apart as the state grows, so
  their cost per event stays constant (a 10,000-turn history is not re-encoded every
  few hundred turns), while a load still replays no more than half the state's size.

The first failed append (a ``ConflictError``, a ``StorageError``) is kept in ``error``
and stops the feed: the store swallows a subscriber's exception, so ``DurableStore``
re-raises it from the write, delete, clear, note or merge that failed.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from typing import Any, Final, Literal

from weft.persist.base import Backend
from weft.persist.snapshot import Snapshot, capture
from weft.store import Event, Store

logger: Final = logging.getLogger("weft.persist")
Notes = Literal["lazy", "eager", "off"]


class Feed:
    """Appends one store's events to one thread (``DurableRun`` makes and owns it)."""

    def __init__(
        self,
        backend: Backend,
        thread_id: str,
        run_id: str,
        store: Store,
        *,
        step: int,
        since_snapshot: int,
        snapshot_every: int,
        keep_snapshots: int,
        notes: Notes,
    ) -> None:
        self.backend = backend
        self.thread_id = thread_id
        self.run_id = run_id
        self.store = store
        self.step = step
        self.since_snapshot = since_snapshot
        self.snapshot_every = snapshot_every
        self.snapshot_weight = _weight(store)
        self.keep_snapshots = keep_snapshots
        self.notes = notes
        self.error: BaseException | None = None
        self.lock = threading.RLock()
        self.pending: list[Event] = []
        self.holding = False
        self.merging = 0  # the thread merging a transaction's fork: its events are stored
        self.graphs: dict[str, frozenset[str]] = {}
        for entry in store.entries(kind="step"):
            self.track(entry.path, entry.value)

    def __call__(self, event: Event) -> None:
        with self.lock:
            if self.merging == threading.get_ident():
                if event.op == "write" and event.kind == "step":
                    self.track(event.path, event.value)
                return
            if self.error is not None:
                return
            op = event.op
            if op == "note":
                if self.notes != "off":
                    self.pending.append(event)
                    if self.notes == "eager" and not self.holding:
                        self.flush(snapshot=True)
                return
            self.pending.append(event)
            if op == "write" and event.kind == "step" and self.track(event.path, event.value):
                self.holding = False  # the run record that completes a held commit
            elif self.holding or (
                op == "write"
                and event.kind == "state"
                and any(event.source in keys for keys in self.graphs.values())
            ):
                self.holding = True
                return
            self.flush(snapshot=True)

    def track(self, path: str, value: Any) -> bool:
        """Follow WorkGraph run records; True when ``value`` ends a run followed or held."""
        if "/" in path or not isinstance(value, dict):
            return False
        graph, status = value.get("graph"), value.get("status")
        if not isinstance(graph, list) or not isinstance(status, str):
            return False
        if status == "running":
            self.graphs[path] = frozenset(k for k in graph if isinstance(k, str))
            return False
        return self.graphs.pop(path, None) is not None or self.holding

    def flush(self, *, snapshot: bool) -> None:
        """Append what is pending; ``snapshot`` allows one (only inside the subscriber,
        where the store is as of the last pending event)."""
        batch = self.pending
        if not batch or self.error is not None:
            return
        self.pending = []
        taken = None
        if snapshot and self._due(len(batch)) and batch[-1].seq == self.store.last_seq:
            taken = capture(self.store)  # encoded by append, with the collector paused
            self.snapshot_weight = _weight(self.store)
        try:
            self.append(batch, taken)
        except Exception as exc:
            self.error = exc
            # DurableStore raises it to the code that wrote; the log is for post-mortems
            logger.info(
                "thread %r, run %r: appending steps %d-%d failed, so the run stopped appending: %s",
                self.thread_id,
                self.run_id,
                batch[0].seq,
                batch[-1].seq,
                exc,
            )

    def append(self, batch: Sequence[Event], snapshot: Snapshot | None) -> None:
        """Append a batch after ``step`` (raises on a conflict); moves ``step`` on."""
        self.step = self.backend.append(
            self.thread_id,
            self.run_id,
            self.step,
            batch,
            snapshot=snapshot,
            keep_snapshots=self.keep_snapshots,
        )
        self.since_snapshot = 0 if snapshot is not None else self.since_snapshot + len(batch)

    def snapshot_of(self, store: Store, count: int) -> Snapshot | None:
        """A snapshot of ``store`` if one is due after ``count`` more events."""
        if not self._due(count):
            return None
        self.snapshot_weight = _weight(store)
        return capture(store)

    def drop_held(self) -> int:
        """Forget a held commit that never completed; returns how many events it had."""
        with self.lock:
            if not self.holding:
                return 0
            dropped = len(self.pending)
            self.pending = []
            self.holding = False
            return dropped

    def _due(self, count: int) -> bool:
        if not self.snapshot_every:
            return False
        since = self.since_snapshot + count
        return since >= self.snapshot_every and since >= self.snapshot_weight // 2


def _weight(store: Store) -> int:
    """What a snapshot of ``store`` costs, in items (``Entry.weight`` summed)."""
    return sum(entry.weight for entry in store.entries())
