"""Threads: one lock per thread id, and the threads a runtime keeps open between turns.

A lock lives only while a turn of its thread runs or waits, on one event loop or several
OS threads. The newest ``capacity`` threads stay open (a ``DurableRun`` each), so a turn
costs O(its writes); one whose last step in the backend moved on (another process) is read
again, so several runtimes may share a database.
"""

from __future__ import annotations

import asyncio
import threading
from collections import OrderedDict
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from weft.errors import MalformedStateError, ReducerError, SchemaError
from weft.persist import Backend, DurableRun, load_store
from weft.runtime.codec import (
    UNREADABLE,
    StateCodec,
    ThreadRecord,
    locate_bad_record,
    migrate_store,
    turn_step,
)
from weft.runtime.schema import StateSchema
from weft.store import Store

_POLL_MAX: float = 0.02


class _Slot:
    __slots__ = ("loops", "mutex", "users")

    def __init__(self) -> None:
        self.mutex = threading.Lock()
        self.loops: dict[asyncio.AbstractEventLoop, tuple[asyncio.Lock, list[int]]] = {}
        self.users = 0


class ThreadLocks:
    """The per-thread locks of one runtime (see the module docstring)."""

    def __init__(self) -> None:
        self._guard = threading.Lock()
        self._slots: dict[str, _Slot] = {}

    def __len__(self) -> int:
        """Thread ids with a turn running or waiting."""
        return len(self._slots)

    def busy(self, thread_id: str) -> bool:
        return thread_id in self._slots

    @asynccontextmanager
    async def hold(self, thread_id: str) -> AsyncIterator[None]:
        loop = asyncio.get_running_loop()
        with self._guard:
            slot = self._slots.get(thread_id)
            if slot is None:
                slot = self._slots[thread_id] = _Slot()
            slot.users += 1
            local = slot.loops.get(loop)
            if local is None:
                local = slot.loops[loop] = (asyncio.Lock(), [0])
            local[1][0] += 1
        try:
            async with local[0]:
                if not slot.mutex.acquire(blocking=False):
                    await _wait_for(slot.mutex)  # a turn of this thread on another loop
                try:
                    yield
                finally:
                    slot.mutex.release()
        finally:
            with self._guard:
                local[1][0] -= 1
                if not local[1][0]:
                    del slot.loops[loop]
                slot.users -= 1
                if not slot.users:
                    del self._slots[thread_id]


async def _wait_for(mutex: threading.Lock) -> None:
    """Take a lock held on another loop without blocking this one."""
    delay = 0.0005
    while not mutex.acquire(blocking=False):
        await asyncio.sleep(delay)
        delay = min(delay * 2, _POLL_MAX)


class Threads:
    """A runtime's threads on its checkpointer: locked, kept open, fresh and versioned."""

    def __init__(
        self,
        backend: Backend,
        *,
        schema: StateSchema,
        codec: StateCodec,
        capacity: int,
        snapshot_every: int,
        run_id: str,
        name: str,
    ) -> None:
        self.backend = backend
        self.schema = schema
        self.codec = codec
        self.reducers = {**codec.legacy_reducers, **schema.store_reducers()}
        self.snapshot_every = snapshot_every
        self.run_id = run_id
        self.name = name
        self.locks = ThreadLocks()
        self.capacity = capacity
        self._open: OrderedDict[str, DurableRun] = OrderedDict()
        self._guard = threading.Lock()

    def __len__(self) -> int:
        return len(self._open)

    def open(self, thread_id: str) -> tuple[DurableRun, ThreadRecord | None]:
        """The thread's run, up to date with the backend, and its record (hold its lock)."""
        run = self._get(thread_id)
        if run is not None and self.backend.last_step(thread_id) != run.step:
            self.drop(thread_id)  # another process appended: read the thread again
            run = None
        if run is None:
            run = self._load(thread_id)
            closing: list[DurableRun] = []
            with self._guard:  # keep it; close the oldest past capacity that are not busy
                self._open[thread_id] = run
                excess = len(self._open) - self.capacity
                for key in list(self._open):
                    if excess <= 0:
                        break
                    if key != thread_id and not self.locks.busy(key):
                        closing.append(self._open.pop(key))
                        excess -= 1
            for old in closing:
                old.close()
        return run, self.codec.read(run.store, thread_id)

    def _get(self, thread_id: str) -> DurableRun | None:
        with self._guard:
            run = self._open.get(thread_id)
            if run is not None:
                self._open.move_to_end(thread_id)
            return run

    def drop(self, thread_id: str) -> None:
        """Close the open run (its next turn reads the thread again)."""
        with self._guard:
            run = self._open.pop(thread_id, None)
        if run is not None:
            run.close()

    def store(self, thread_id: str, *, turn: int | None = None) -> Store:
        """The thread's store now, or as it was when turn ``turn`` ended."""
        if turn is None:
            run = self._get(thread_id)
            return run.store if run is not None else self._read(thread_id, None)
        step = turn_step(self.backend, thread_id, turn)
        if step is None:
            raise LookupError(f"thread {thread_id!r} has no stored turn {turn}")
        return self._read(thread_id, step)

    def close(self) -> None:
        with self._guard:
            runs = list(self._open.values())
            self._open.clear()
        for run in runs:
            run.close()

    def _read(self, thread_id: str, step: int | None) -> Store:
        try:
            return load_store(self.backend, thread_id, step=step, reducers=self.reducers)
        except UNREADABLE as exc:
            raise self._malformed(thread_id, str(exc)) from exc

    def _load(self, thread_id: str) -> DurableRun:
        try:
            run = DurableRun.open(
                self.backend,
                thread_id,
                run_id=self.run_id,
                reducers=self.reducers,
                name=self.name,
                snapshot_every=self.snapshot_every,
            )
        except UNREADABLE as exc:
            raise self._malformed(thread_id, str(exc)) from exc
        try:
            try:
                self.schema.declare_turn_fields(run.store)
            except ReducerError as exc:
                raise SchemaError(
                    f"thread {thread_id!r} stores a field that {self.schema.name} makes "
                    f"turn-scoped or loaded ({exc}); a field that stops being stored needs a "
                    "new name"
                ) from exc
            record = self.codec.read(run.store, thread_id)
            if record is not None and record.version < self.codec.version:
                with run.store.transaction() as tx:
                    migrate_store(tx, self.schema, self.codec, record.version, thread_id)
        except MalformedStateError as exc:
            run.close()
            raise self._malformed(thread_id, str(exc)) from exc
        except BaseException:
            run.close()
            raise
        return run

    def _malformed(self, thread_id: str, why: str) -> MalformedStateError:
        step, turn = locate_bad_record(self.backend, thread_id)
        earlier = (
            f"turns 1 to {turn - 1} stay loadable (thread_state({thread_id!r}, turn={turn - 1}))"
            if turn > 1
            else "no turn before it was stored"
        )
        return MalformedStateError(
            f"thread {thread_id!r} cannot be loaded: the record of turn {turn} (step {step}) "
            f"cannot be read ({why}). Nothing was changed and {earlier}; restore the thread "
            "from a backup, or fork it from an earlier turn",
            thread_id=thread_id,
            turn=turn,
            step=step,
        )
