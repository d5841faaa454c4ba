"""Threads: one lock per thread id, and the threads a runtime keeps open between turns.

Locks. Two turns of one thread never interleave; turns of different threads run
concurrently. Each thread id gets an ``asyncio.Lock`` per event loop (coroutines of one
loop queue on it without blocking the loop) and one ``threading.Lock`` (so ``run_turn``
called from several OS threads, each with its own loop, still takes turns). Entries are
made on demand and removed when nobody holds or waits for them, so a runtime serving
millions of threads keeps locks only for the turns in flight.

Open threads. A thread's store stays in memory between its turns (a ``DurableRun`` on the
checkpointer backend), so a turn costs O(its writes), not a reload of the thread. The
newest ``capacity`` threads stay open; older ones are closed (never one in a turn) and
reloaded from the backend on their next turn.
"""

from __future__ import annotations

import asyncio
import threading
from collections import OrderedDict
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from weft.persist import DurableRun

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
        """Hold ``thread_id``'s lock for the block."""
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
    """Take a lock held on another loop without blocking this one (cancellable: a waiter
    that is cancelled never holds it)."""
    delay = 0.0005
    while not mutex.acquire(blocking=False):
        await asyncio.sleep(delay)
        delay = min(delay * 2, _POLL_MAX)


class OpenThreads:
    """The threads a runtime keeps open, newest last (see the module docstring)."""

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self._runs: OrderedDict[str, DurableRun] = OrderedDict()
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._runs)

    def get(self, thread_id: str) -> DurableRun | None:
        with self._lock:
            run = self._runs.get(thread_id)
            if run is not None:
                self._runs.move_to_end(thread_id)
            return run

    def put(self, thread_id: str, run: DurableRun, locks: ThreadLocks) -> None:
        """Keep ``run`` open; close the oldest threads past capacity that are not busy."""
        closing: list[DurableRun] = []
        with self._lock:
            self._runs[thread_id] = run
            self._runs.move_to_end(thread_id)
            excess = len(self._runs) - self.capacity
            for key in list(self._runs):
                if excess <= 0:
                    break
                if key != thread_id and not locks.busy(key):
                    closing.append(self._runs.pop(key))
                    excess -= 1
        for old in closing:
            old.close()

    def drop(self, thread_id: str) -> None:
        with self._lock:
            run = self._runs.pop(thread_id, None)
        if run is not None:
            run.close()

    def close(self) -> None:
        with self._lock:
            runs = list(self._runs.values())
            self._runs.clear()
        for run in runs:
            run.close()
