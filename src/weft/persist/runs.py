"""Durable runs: a store whose commits are appended to a backend as they are made.

``DurableRun.open(backend, thread_id)`` loads the thread (newest snapshot + the events after
it) into a plain ``weft.store.Store`` and is its journal (``weft.store.Journal``): from then
on every commit of the store (a write, a batch, a merge, a ``store.transaction()``, a
WorkGraph node's writes with its step record) is one transaction of the backend, made after
the store applied it and before it is shown to anyone; the run never looks inside a record
to decide what belongs together. A commit the backend refuses (a ``ConflictError`` because
another process appended first, a ``StorageError``) is undone and raised to the code that
wrote: the store never holds what the thread does not. After a conflict, ``reload()`` reads
the thread again and the work is redone there.

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

>>> from weft.persist import DurableRun, InMemoryBackend
>>> backend = InMemoryBackend()
>>> run = DurableRun.open(backend, "chat-1", run_id="r1")
>>> _ = run.store.write("state", "plan", "A")
>>> _ = run.store.write("state", "plan", "B")
>>> run.state_at(1).value("state", "plan")           # time travel
'A'
>>> branch = run.fork(1, values={"state:plan": "C"})  # a new thread from step 1
>>> branch.store.value("state", "plan"), run.store.value("state", "plan")
('C', 'B')

Stores seeded from a snapshot give entries written before it ``created_at ==
updated_at``, and their ``events()`` begin with synthetic writes; ``history()`` is the
real log (see ``weft.persist.snapshot``).
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal, TypeVar

from weft.errors import PersistError
from weft.persist.base import Backend, Closeable, LoggedEvent, check_id
from weft.persist.snapshot import capture
from weft.store import Event, Store
from weft.store import reducers as _reducers
from weft.store.runlog import Reconcile, aonce, call_path, once

if TYPE_CHECKING:
    from weft.graph import WorkGraph

T = TypeVar("T")
Notes = Literal["lazy", "eager", "off"]


class DurableRun(Closeable):
    """One run appending to one thread of a backend (see the module docstring).

    ``run_id`` names this execution (keep it to resume one; a new id by default);
    ``reducers`` gives the fields' own reducer functions (built-ins are found by name);
    ``name`` is the store's default ``source``; ``snapshot_every`` events (0: never) a
    snapshot is stored, and the newest ``keep_snapshots`` are kept; ``notes`` is
    ``"lazy"``, ``"eager"`` or ``"off"`` (see the module docstring).
    """

    _step: int
    _since_snapshot: int  # events appended since the last snapshot
    _snapshot_weight: int  # the state's items at the last snapshot
    _pending: list[Event]  # lazy notes, appended with the next commit

    def __init__(
        self,
        backend: Backend,
        thread_id: str,
        *,
        run_id: str | None = None,
        reducers: Mapping[str, _reducers.Reducer] | None = None,
        name: str | None = None,
        snapshot_every: int = 1000,
        keep_snapshots: int = 1,
        notes: Notes = "off",
    ) -> None:
        if not isinstance(backend, Backend):
            raise PersistError(
                f"backend={backend!r}: expected a weft.persist backend such as "
                "SQLiteBackend('chat.db'), PostgresBackend(dsn) or InMemoryBackend()"
            )
        if notes not in ("lazy", "eager", "off"):
            raise PersistError(f"notes={notes!r}: expected 'lazy', 'eager' or 'off'")
        if (
            isinstance(snapshot_every, bool)
            or not isinstance(snapshot_every, int)
            or snapshot_every < 0
        ):
            raise PersistError(
                f"snapshot_every={snapshot_every!r}: expected an int >= 0 (0: never)"
            )
        self.backend = backend
        self.thread_id = check_id(thread_id, "thread_id")
        self.run_id = check_id(run_id, "run_id") if run_id is not None else new_id("run")
        self.snapshot_every = snapshot_every
        self.keep_snapshots = keep_snapshots
        self.notes: Notes = notes
        self._reducers = dict(reducers or {})
        self._name = name
        self._lock = threading.RLock()
        self._commit_lock = threading.Lock()  # never the run's: the store's lock is held
        self._load()

    @classmethod
    def open(
        cls,
        backend: Backend,
        thread_id: str,
        *,
        run_id: str | None = None,
        reducers: Mapping[str, _reducers.Reducer] | None = None,
        name: str | None = None,
        snapshot_every: int = 1000,
        keep_snapshots: int = 1,
        notes: Notes = "off",
    ) -> DurableRun:
        """Load ``thread_id`` (empty if new) and journal its store: the constructor."""
        return cls(
            backend,
            thread_id,
            run_id=run_id,
            reducers=reducers,
            name=name,
            snapshot_every=snapshot_every,
            keep_snapshots=keep_snapshots,
            notes=notes,
        )

    @property
    def store(self) -> Store:
        """The live store; ``reload()`` replaces it, so read it from here each time."""
        return self._store

    @property
    def step(self) -> int:
        """The thread's last step as this run appended or loaded it."""
        return self._step

    def reload(self) -> None:
        """Read the thread again into a new ``store`` (after a conflict, say)."""
        with self._lock:
            self._store.set_journal(None)
            self._load()

    def flush(self) -> None:
        """Append what is pending (lazy notes) now."""
        with self._commit_lock:
            if not self._pending:
                return
            batch, self._pending = self._pending, []
            self._step = self.backend.append(
                self.thread_id, self.run_id, self._step, batch, keep_snapshots=self.keep_snapshots
            )
            self._since_snapshot += len(batch)

    def commit(self, store: Store, events: Sequence[Event]) -> None:
        """Append one commit of the store (called by the store, as its journal; see the
        module docstring); raises if the backend refuses, and the store undoes it."""
        batch: Sequence[Event]
        with self._commit_lock:
            if self.notes == "off":
                batch = events
                for event in events:  # a node's commit holds none: no list made
                    if event.op == "note":
                        batch = [e for e in events if e.op != "note"]
                        break
            else:
                batch = [*self._pending, *events] if self._pending else events
                if self.notes == "lazy" and all(e.op == "note" for e in events):
                    self._pending = list(batch)
                    return
            if not batch:
                return
            since = self._since_snapshot + len(batch)
            every = self.snapshot_every
            due = every and since >= every and since >= self._snapshot_weight // 2
            snapshot = capture(store, step=batch[-1].seq) if due else None
            self._step = self.backend.append(
                self.thread_id,
                self.run_id,
                self._step,
                batch,
                snapshot=snapshot,
                keep_snapshots=self.keep_snapshots,
            )
            if self._pending:
                self._pending = []
            self._since_snapshot = since if snapshot is None else 0
            if snapshot is not None:
                self._snapshot_weight = snapshot.weight

    def close(self) -> None:
        """Flush and stop journaling the store (the backend stays open)."""
        with self._lock:
            self.flush()
            self._store.set_journal(None)

    def __repr__(self) -> str:
        return f"<DurableRun thread={self.thread_id!r} run={self.run_id!r} step={self.step}>"

    def run_graph(
        self, graph: WorkGraph, *args: Any, run_id: str | None = None, **kwargs: Any
    ) -> Any:
        """Run ``graph`` on this store with a run id (this run's by default): each node's
        writes and step record are one transaction as the node is committed, and running
        it again with the same run id (after a crash, in a new process) skips what
        finished."""
        return graph.run(*args, run_id=run_id or self.run_id, store=self._store, **kwargs)

    async def arun_graph(
        self, graph: WorkGraph, *args: Any, run_id: str | None = None, **kwargs: Any
    ) -> Any:
        """The async form of ``run_graph``."""
        return await graph.arun(*args, run_id=run_id or self.run_id, store=self._store, **kwargs)

    def call_once(
        self,
        key: str,
        fn: Callable[..., T],
        *args: Any,
        reconcile: Reconcile | None = None,
        **kwargs: Any,
    ) -> Any:
        """Call ``fn(*args, **kwargs)`` unless the call with this key was recorded in the
        thread; return the recorded result (frozen JSON form; a tuple comes back a tuple).

        At most once, with reconcile: an intent holding the call's idempotency key is
        committed before ``fn`` is called (one commit more than the result's) and the
        result, committed before this returns, replaces it. ``fn`` gets the key if it has a
        parameter named ``idempotency_key``: the same key on every attempt, across
        processes, so a service that deduplicates by it applies the effect once. An intent
        found without a result (the process died during the call, or the call raised) goes
        to ``reconcile(idempotency_key)``, which returns the call's result or
        ``weft.store.NOT_DONE`` (make the call again, with the same key). Without
        ``reconcile`` the call is made again only if ``fn`` takes the key or the last
        attempt raised (its caller saw the error); otherwise ``UnreconciledCallError``.
        ``reconcile`` is never passed on to ``fn``, and ``idempotency_key`` is weft's to give.

        >>> from weft.persist import InMemoryBackend
        >>> run = DurableRun.open(InMemoryBackend(), "orders")
        >>> def charge(order, idempotency_key):
        ...     return {"charged": order, "key": idempotency_key}
        >>> receipt = run.call_once("charge-17", charge, 17)
        >>> receipt["key"]  # the same on every attempt, in any process  # doctest: +ELLIPSIS
        'calls/charge-17~...'
        >>> run.call_once("charge-17", charge, 17) == receipt  # recorded: not called again
        True
        """
        path = self._call_path(key)
        return once(self._store, path, fn, *args, reconcile=reconcile, **kwargs)

    async def acall_once(
        self,
        key: str,
        fn: Callable[..., Awaitable[T]],
        *args: Any,
        reconcile: Reconcile | None = None,
        **kwargs: Any,
    ) -> Any:
        """The async form of ``call_once`` (``reconcile`` may be async too)."""
        path = self._call_path(key)
        return await aonce(self._store, path, fn, *args, reconcile=reconcile, **kwargs)

    def _call_path(self, key: str) -> str:
        if not isinstance(key, str) or not key:
            raise PersistError(f"idempotency key {key!r}: expected a non-empty string")
        return call_path(key)

    def state_at(self, step: int) -> Store:
        """A new store holding the thread as it was at ``step`` (this run is unchanged)."""
        self.flush()
        return load_store(self.backend, self.thread_id, step=step, reducers=self._reducers)

    def fork(
        self,
        step: int | None = None,
        *,
        values: Mapping[str, Any] | None = None,
        thread_id: str | None = None,
        run_id: str | None = None,
    ) -> DurableRun:
        """A new thread that starts from this one at ``step`` (default: now), with
        ``values`` (``{"state:plan": ...}``) written over it; this thread is unchanged."""
        self.flush()
        return fork_thread(
            self.backend,
            self.thread_id,
            step=self.step if step is None else step,
            values=values,
            thread_id=thread_id,
            run_id=run_id,
            reducers=self._reducers,
        )

    def history(self, *, after: int = 0, upto: int | None = None) -> list[LoggedEvent]:
        """The thread's stored events, with the run that appended each."""
        self.flush()
        return self.backend.history(self.thread_id, after=after, upto=upto)

    def _load(self) -> None:
        checkpoint = self.backend.load(self.thread_id)
        store = checkpoint.to_store(
            reducers=self._reducers, types=self.backend.types, name=self._name
        )
        self._step = checkpoint.step
        self._since_snapshot = checkpoint.step - (
            checkpoint.snapshot.step if checkpoint.snapshot else 0
        )
        self._snapshot_weight = sum(entry.weight for entry in store.entries())
        self._pending = []
        store.set_journal(self)
        self._store = store


def load_store(
    backend: Backend,
    thread_id: str,
    *,
    step: int | None = None,
    reducers: Mapping[str, _reducers.Reducer] | None = None,
    name: str | None = None,
) -> Store:
    """Time travel: a new (not durable) store holding ``thread_id`` as of ``step`` (default:
    its end); history is never rewritten."""
    checkpoint = backend.load(thread_id, step=step)
    return checkpoint.to_store(reducers=reducers, types=backend.types, name=name)


def new_id(prefix: str) -> str:
    """A fresh id: ``prefix-`` and 12 hex digits."""
    return f"{prefix}-{uuid.uuid4().hex[:12]}"


def fork_thread(
    backend: Backend,
    source_thread: str,
    *,
    step: int,
    values: Mapping[str, Any] | None = None,
    thread_id: str | None = None,
    run_id: str | None = None,
    reducers: Mapping[str, _reducers.Reducer] | None = None,
) -> DurableRun:
    """Start a new thread from ``source_thread`` at ``step`` and open a run on it.

    The new thread begins with a snapshot of the source at that step (so it does not
    depend on the source's later pruning or deletion) and records where it came from
    (``ThreadInfo.parent_thread``/``parent_step``); ``values`` (``{"kind:path": value}``)
    are then written over it in one transaction, replacing what was there. The source
    thread's history is never changed."""
    store = load_store(backend, source_thread, step=step, reducers=reducers)
    snapshot = capture(store, step=step)
    fresh = thread_id if thread_id is not None else new_id(f"{source_thread}~fork")
    backend.create_thread(fresh, snapshot, parent=(source_thread, step))
    run = DurableRun(backend, fresh, run_id=run_id, reducers=reducers)
    if values:
        with run.store.transaction() as fork:
            for key, value in values.items():
                kind, _, path = key.partition(":")
                fork.write(kind, path, value, source="weft.fork", replace=True)
    return run
