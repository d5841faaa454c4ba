"""Durable runs: a store whose event log is appended to a backend as it is written.

``DurableRun.open(backend, thread_id)`` loads the thread (newest snapshot + the events
after it) into a store and subscribes to it: from then on every event is appended as
it happens, each append its own transaction, so whatever finished is on disk and a
crash loses at most the write in flight. A WorkGraph node's step record is one store
write, so a node's work is stored when the node finishes, whole or not at all.

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

What is appended, and when (writes at once; notes of graph nodes not at all unless asked;
a WorkGraph's final state commit whole with its completion record; a snapshot every
``snapshot_every`` events): ``weft.persist.feed``.

A failed append (a ``ConflictError`` because another process appended first, a
``StorageError``) stops the run from appending: the write that failed, and every later
write through ``run.store``, raises it. ``reload()`` reads the thread again into a new
``run.store``; redo the work from there. For a batch that is applied all or nothing,
use ``transaction()``.

Stores seeded from a snapshot give entries written before it ``created_at ==
updated_at``, and their ``events()`` begin with synthetic writes; ``history()`` is the
real log (see ``weft.persist.snapshot``).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Awaitable, Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from types import TracebackType
from typing import TYPE_CHECKING, Any, Final, TypeVar

from weft.errors import ConflictError, PersistError
from weft.persist._gc import paused
from weft.persist.base import Backend, LoggedEvent, check_id
from weft.persist.feed import Feed, Notes
from weft.persist.snapshot import build_store
from weft.persist.travel import fork_thread, load_store, new_id
from weft.store import Entry, Event, Store
from weft.store import reducers as _reducers

if TYPE_CHECKING:
    from weft.graph import WorkGraph

logger: Final = logging.getLogger("weft.persist")
T = TypeVar("T")
CALLS: Final = "calls/"
"""Path prefix (kind ``step``) of the results of ``call_once``."""


class DurableStore(Store):
    """The store of a ``DurableRun``: a ``Store`` whose changes raise once the run has
    failed to append (the store itself swallows a subscriber's error), so the code that
    wrote learns that its write is not durable."""

    _run: DurableRun | None = None

    @property
    def run(self) -> DurableRun | None:
        """The durable run this store belongs to (None once the run is closed)."""
        return self._run

    def write(self, *args: Any, **kwargs: Any) -> Entry:
        entry = super().write(*args, **kwargs)
        self._check()
        return entry

    def delete(self, *args: Any, **kwargs: Any) -> bool:
        done = super().delete(*args, **kwargs)
        self._check()
        return done

    def clear(self, *args: Any, **kwargs: Any) -> int:
        gone = super().clear(*args, **kwargs)
        self._check()
        return gone

    def note(self, *args: Any, **kwargs: Any) -> Event:
        event = super().note(*args, **kwargs)
        self._check()
        return event

    def merge(self, children: Iterable[Store]) -> None:
        super().merge(children)
        self._check()

    def _check(self) -> None:
        run = self._run
        if run is not None and run.error is not None:
            run.check()


class DurableRun:
    """One run appending to one thread of a backend (see the module docstring).

    ``run_id`` names this execution (keep it to resume one; a new id by default);
    ``reducers`` gives the fields' own reducer functions (built-ins are found by name);
    ``name`` is the store's default ``source``; ``snapshot_every`` events (0: never) a
    snapshot is stored, and the newest ``keep_snapshots`` are kept; ``notes`` is
    ``"lazy"``, ``"eager"`` or ``"off"`` (see ``weft.persist.feed``).
    """

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
        if notes not in ("lazy", "eager", "off"):
            raise PersistError(f"notes={notes!r}: expected 'lazy', 'eager' or 'off'")
        if not isinstance(snapshot_every, int) or snapshot_every < 0:
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
        self._unsubscribe: Callable[[], None] | None = None
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
        """Load ``thread_id`` (empty if new) and follow its store: the constructor."""
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

    # ---------------------------------------------------------------- state

    @property
    def store(self) -> DurableStore:
        """The live store; ``reload()`` replaces it, so read it from here each time."""
        return self._store

    @property
    def step(self) -> int:
        """The thread's last step as this run appended or loaded it."""
        return self._feed.step

    @property
    def error(self) -> BaseException | None:
        """The failure that stopped this run from appending, or None."""
        return self._feed.error

    def check(self) -> None:
        """Raise the error that stopped this run from appending, if one did."""
        error = self._feed.error
        if error is None:
            return
        if isinstance(error, ConflictError):
            raise ConflictError(
                str(error), thread_id=error.thread_id, expected=error.expected, actual=error.actual
            ) from error
        message = (
            f"thread {self.thread_id!r} stopped being durable after step {self.step}: "
            f"{error}. Call reload() to read the thread again and redo the work"
        )
        cls = type(error) if isinstance(error, PersistError) else PersistError
        raise cls(message) from error

    def reload(self) -> None:
        """Read the thread again into a new ``store`` (after a conflict, say); pending and
        failed writes of the old store are dropped."""
        with self._lock:
            self._detach()
            self._load()

    def flush(self) -> None:
        """Append what is pending (lazy notes) now."""
        with self._feed.lock:
            if not self._feed.holding:
                self._feed.flush(snapshot=False)

    def close(self) -> None:
        """Flush and stop following the store (the backend stays open)."""
        with self._lock:
            dropped = self._feed.drop_held()
            if dropped:
                logger.warning(
                    "thread %r: a graph's state commit never completed; its %d held events "
                    "are not stored (a resumed run commits them once)",
                    self.thread_id,
                    dropped,
                )
            self.flush()
            self._detach()

    def __enter__(self) -> DurableRun:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<DurableRun thread={self.thread_id!r} run={self.run_id!r} step={self.step}>"

    # ------------------------------------------------------------- running

    def run_graph(
        self, graph: WorkGraph, *args: Any, run_id: str | None = None, **kwargs: Any
    ) -> Any:
        """Run ``graph`` on this store, recording each node as it finishes; running it
        again with the same run id (after a crash, in a new process) skips recorded
        nodes. ``run_id`` defaults to this run's id. If the graph fails inside its final
        state commit, ``store`` is reloaded (the half commit was never stored)."""
        self.check()
        try:
            return graph.run(*args, run_id=run_id or self.run_id, store=self._store, **kwargs)
        except BaseException:
            self._abandon_commit()
            raise

    async def arun_graph(
        self, graph: WorkGraph, *args: Any, run_id: str | None = None, **kwargs: Any
    ) -> Any:
        """The async form of ``run_graph``."""
        self.check()
        try:
            return await graph.arun(
                *args, run_id=run_id or self.run_id, store=self._store, **kwargs
            )
        except BaseException:
            self._abandon_commit()
            raise

    def call_once(self, key: str, fn: Callable[..., T], *args: Any, **kwargs: Any) -> Any:
        """Call ``fn`` unless a call with this idempotency key was recorded in the thread;
        return the recorded result (frozen JSON form: tuples come back as lists).

        The result is durable before this returns. A crash after ``fn`` took effect but
        before its record was stored runs it again: pass the key to the service as well
        when it accepts one, for exactly-once effects end to end."""
        recorded = self._recorded(key)
        if recorded is not None:
            return recorded.value["result"]
        return self._record(key, fn(*args, **kwargs))

    async def acall_once(
        self, key: str, fn: Callable[..., Awaitable[T]], *args: Any, **kwargs: Any
    ) -> Any:
        """The async form of ``call_once``."""
        recorded = self._recorded(key)
        if recorded is not None:
            return recorded.value["result"]
        return self._record(key, await fn(*args, **kwargs))

    @contextmanager
    def transaction(self) -> Iterator[Store]:
        """Write to a fork; on exit its events are appended in one transaction and only
        then merged into ``store``. On a ``ConflictError`` nothing is written anywhere:
        ``reload()`` and do it again. Do not write to ``store`` from another thread
        meanwhile."""
        self.check()
        self.flush()
        feed = self._feed
        base = self._store.last_seq
        fork = self._store.fork(name=self._store.name)
        yield fork
        events = fork.events(since=base)
        if not events:
            return
        with feed.lock:
            feed.append(events, feed.snapshot_of(fork, len(events)))
        feed.merging = threading.get_ident()
        try:  # outside the lock: the merge takes the store's lock, then the feed's
            self._store.merge([fork])
        finally:
            feed.merging = 0

    # --------------------------------------------------------- time travel

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

    # ------------------------------------------------------------ internals

    def _load(self) -> None:
        checkpoint = self.backend.load(self.thread_id)
        with paused():
            store = build_store(
                checkpoint.snapshot,
                checkpoint.events,
                reducers=self._reducers,
                types=self.backend.types,
                name=self._name,
                store_class=DurableStore,
            )
        assert isinstance(store, DurableStore)
        since = checkpoint.step - (checkpoint.snapshot.step if checkpoint.snapshot else 0)
        self._feed = Feed(
            self.backend,
            self.thread_id,
            self.run_id,
            store,
            step=checkpoint.step,
            since_snapshot=since,
            snapshot_every=self.snapshot_every,
            keep_snapshots=self.keep_snapshots,
            notes=self.notes,
        )
        store._run = self
        self._store = store
        self._unsubscribe = store.subscribe(self._feed)

    def _detach(self) -> None:
        if self._unsubscribe is not None:
            self._unsubscribe()
            self._unsubscribe = None
        self._store._run = None

    def _abandon_commit(self) -> None:
        if self._feed.drop_held():
            # the graph failed inside its commit: the store holds half a commit that was
            # never stored; read the thread again so that the two agree
            self.reload()

    def _recorded(self, key: str) -> Entry | None:
        self.check()
        if not isinstance(key, str) or not key:
            raise PersistError(f"idempotency key {key!r}: expected a non-empty string")
        return self._store.get("step", CALLS + key)

    def _record(self, key: str, result: Any) -> Any:
        entry = self._store.write(
            "step", CALLS + key, {"result": result, "run_id": self.run_id}, source=f"call:{key}"
        )
        self.check()
        return entry.value["result"]
