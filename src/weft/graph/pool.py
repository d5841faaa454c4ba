"""Threads for sync node values, and the per-run queue that feeds them.

Submitting each ready sync node as its own thread-pool job costs a future, a lock and a
wake-up per node (tens of microseconds). Instead a run puts its ready sync nodes in one
queue, and at most ``width`` workers drain it, each taking the next node as it frees
up; finished nodes are handed back in a batch with one wake-up of the run (its event
loop, or the blocking wait of a run without one). So a thousand quick branches cost a
few microseconds each, and slow ones (a model call) still get ``width`` threads. The
run's own thread may be one of the workers (``SyncQueue.help``) when it would only wait.

Waking a worker costs the run more than the wake-up: the worker takes the GIL from it and
gives it back, two thread switches (~150 us a fan-out on a 2-vCPU VM, 12% of a fan-out of
100 quick branches). So a run's thread helping with a fan-out whose branches were all quick
the last time (each under ``QUICK``) asks for no worker at first: it asks once it has been
at it for ``BUDGET``, and a branch that takes long (a model call, or one waiting for a
sibling) cannot ask, so the ``Standby`` thread, awake every ``TICK`` while such helping
goes on, asks for it: no item waits behind a slow one for much more than ``TICK``.

The threads are shared by every run in the process and grow on demand, so a node that
runs a nested graph never waits for a thread its own parent holds (a fixed-size pool
can deadlock there); a thread idle for ``IDLE_SECONDS`` exits. They are daemon threads:
Python cannot stop a running thread, so a sync node that outlives its run (a timeout, a
cancelled run) keeps running until it returns, and does not hold up interpreter exit.
"""

from __future__ import annotations

import logging
import os
import queue
import threading
import time
from collections import deque
from collections.abc import Callable
from typing import Any, Final

logger: Final = logging.getLogger("weft.graph")

IDLE_SECONDS: Final = 30.0

QUICK: Final = 0.0002
"""An item that takes less (200 us) is quick: a wake-up would cost about as much."""
BUDGET: Final = 0.002
"""How long a helper runs quick items alone before it asks for a worker (2 ms)."""
TICK: Final = 0.02
"""How often the standby looks at helpers running alone, while there are any (20 ms)."""
LINGER: Final = 5
"""Ticks with nobody helping alone after which the standby sleeps until asked again."""


class Threads:
    """A process-wide pool of daemon threads that starts a thread when none is idle."""

    def __init__(self, idle_seconds: float = IDLE_SECONDS) -> None:
        self._idle_seconds = idle_seconds
        self._started = 0
        self._reset()

    def _reset(self) -> None:
        """No threads (also in a forked child: its parent's threads did not come along,
        so a job handed to one it counted as idle would never run)."""
        self._jobs: queue.SimpleQueue[Callable[[], None]] = queue.SimpleQueue()
        self._idle = 0  # idle threads not yet promised a job
        self._lock = threading.Lock()

    def submit(self, job: Callable[[], None]) -> None:
        with self._lock:
            if self._idle:
                self._idle -= 1
                self._jobs.put(job)
                return
            self._started += 1
            name = f"weft-graph-{self._started}"
        threading.Thread(target=self._work, args=(job,), name=name, daemon=True).start()

    def _work(self, job: Callable[[], None] | None) -> None:
        while job is not None:
            try:
                job()
            except BaseException:  # jobs report their own errors; this is a last resort
                logger.exception("a weft.graph thread job raised; the thread goes on")
            job = None
            with self._lock:
                self._idle += 1
            try:
                job = self._jobs.get(timeout=self._idle_seconds)
            except queue.Empty:
                with self._lock:
                    if self._idle:  # nobody promised us a job: leave
                        self._idle -= 1
                        return
                job = self._jobs.get()  # a job was promised just as we timed out


THREADS: Final = Threads()
os.register_at_fork(after_in_child=THREADS._reset)


class SyncQueue:
    """One run's ready sync nodes, drained by at most ``width`` threads.

    Threads join one at a time: a draining thread that sees work still queued asks for
    one more thread, and asks again only once that one has started. Slow nodes (which
    release the GIL) so get ``width`` threads within a few wake-ups, while a burst of
    quick nodes is drained by the one or two threads that are already running, instead
    of waking ``width`` threads to fight over the GIL.

    ``work(item)`` runs one item and reports it; after ``cancel()`` the items still queued
    are handed to ``drop(item)`` instead, so the run can count them as settled.
    """

    __slots__ = (
        "_drop",
        "_items",
        "_lock",
        "_pending",
        "_threads",
        "_width",
        "_work",
        "_workers",
        "cancelled",
        "running_since",
    )

    def __init__(
        self,
        width: int,
        work: Callable[[Any], None],
        drop: Callable[[Any], None],
        threads: Threads = THREADS,
    ) -> None:
        self._items: deque[Any] = deque()
        self._lock = threading.Lock()
        self._width = width
        self._workers = 0
        self._pending = False  # a thread was asked for and has not started yet
        self._work = work
        self._drop = drop
        self._threads = threads
        self.cancelled = False
        self.running_since = 0.0
        """When the item its helper runs alone started (0.0: none): read by the standby."""

    def push(self, items: list[Any], *, helped: bool = False) -> None:
        """Queue ``items``; ``helped``: the caller drains them itself next (``help``), and
        asks for threads from there."""
        with self._lock:
            self._items.extend(items)
            spawn = not helped and self._want_thread()
        if spawn:
            self._threads.submit(self._drain)

    def help(self, *, alone: bool = False) -> bool:
        """Drain the queue on the calling thread, as one of the ``width`` workers, until it
        is empty: the run's thread, when it would only wait for these items (see
        ``weft.graph.dispatch``). It asks for a thread as it takes its first item of
        several, as any worker does, so slow items still get ``width`` threads; ``alone``
        (the items were quick the last time): not before the queue has kept it ``BUDGET``
        long, the standby watching over it meanwhile (it asks should an item block).
        Returns whether it ran at least one item and each took under ``QUICK``."""
        with self._lock:
            if self._workers >= self._width:  # workers still in ``_take``: they see the
                return False  # items (they leave only once the queue is empty, under the lock)
            self._workers += 1
        if alone:
            STANDBY.watch(self)
        try:
            return self._take(helper=True, alone=alone)
        except BaseException:  # Ctrl-C on the helping thread: it leaves the queue
            with self._lock:
                self._workers -= 1
            raise
        finally:
            if alone:
                STANDBY.unwatch(self)

    def ask(self) -> None:
        """From the standby: ask for a worker if items wait while the helper is busy."""
        with self._lock:
            spawn = self._want_thread()
        if spawn:
            self._threads.submit(self._drain)

    def run_alone(self, item: Any) -> None:
        """Run one item on a thread of its own now (a node with a timeout: its clock is running)."""
        self._threads.submit(lambda: self._work(item))

    def cancel(self) -> None:
        self.cancelled = True

    def _want_thread(self) -> bool:
        if self._items and not self._pending and self._workers < self._width:
            self._pending = True
            self._workers += 1
            return True
        return False

    def _drain(self) -> None:
        with self._lock:
            self._pending = False
        self._take()

    def _take(self, *, helper: bool = False, alone: bool = False) -> bool:
        """Run the queued items one after another until none is left (one worker's loop).
        The ``helper`` (``help``) times its items for the standby, and returns whether it
        ran some and each took under ``QUICK``; ``alone``: it asks for no worker before
        ``BUDGET``."""
        items, lock, clock = self._items, self._lock, time.perf_counter
        quick = ran = False
        began = now = clock() if helper else 0.0  # now: as the last item ended
        while True:
            try:
                item = items.popleft()
            except IndexError:
                with lock:
                    if items:
                        continue
                    self._workers -= 1
                    return ran and quick
            if alone and now - began > BUDGET:
                alone = False
            if items and not alone and not self._pending and self._workers < self._width:
                with lock:
                    spawn = self._want_thread()
                if spawn:
                    self._threads.submit(self._drain)
            if self.cancelled:
                self._drop(item)
            elif not helper:
                self._work(item)
            else:
                self.running_since = started = now
                self._work(item)
                self.running_since = 0.0
                now = clock()
                if not ran:
                    ran = quick = True
                if now - started >= QUICK:
                    quick = False


class Standby:
    """A daemon thread that keeps helpers running alone from being stuck (see the module
    docstring): while any helper runs alone it wakes every ``TICK`` and asks for a worker
    for each queue whose helper has been inside one item for longer than ``TICK`` while
    others wait. After ``LINGER`` ticks with nobody watched it sleeps until ``watch`` wakes
    it again, so a process that runs no fan-outs pays nothing, and one that runs them back
    to back pays one wake-up a tick rather than one a fan-out."""

    def __init__(self) -> None:
        self._start()

    def _start(self) -> None:
        """Its state with no thread yet (also in a forked child: the thread did not come
        along, and its lock may have been held as the process forked)."""
        self._lock = threading.Lock()
        self._watched: dict[SyncQueue, None] = {}
        self._seen = False  # a queue was watched since the last tick
        self._awake = False  # ticking (or about to): ``watch`` need not wake it
        self._bell = threading.Event()
        self._thread: threading.Thread | None = None

    def watch(self, queue: SyncQueue) -> None:
        with self._lock:
            self._watched[queue] = None
            self._seen = True
            if self._awake:
                return
            self._awake = True
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._run, name="weft-graph-standby", daemon=True
                )
                self._thread.start()
            else:
                self._bell.set()

    def unwatch(self, queue: SyncQueue) -> None:
        with self._lock:
            self._watched.pop(queue, None)

    def _run(self) -> None:
        while True:
            idle = 0
            while idle < LINGER:
                time.sleep(TICK)
                now = time.perf_counter()
                with self._lock:
                    stuck = [
                        q
                        for q in self._watched
                        if q._items and q.running_since and now - q.running_since > TICK
                    ]
                    idle = 0 if self._watched or self._seen else idle + 1
                    self._seen = False
                    if idle >= LINGER:
                        self._awake = False  # the next ``watch`` rings the bell
                for q in stuck:
                    try:
                        q.ask()
                    except Exception:  # no thread to be had: the next tick asks again
                        logger.exception("the weft.graph standby could not ask for a thread")
            self._bell.wait()
            self._bell.clear()


STANDBY: Final = Standby()
os.register_at_fork(after_in_child=STANDBY._start)
