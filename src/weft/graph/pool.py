"""Threads for sync node values, and the per-run queue that feeds them.

Submitting each ready sync node as its own thread-pool job costs a future, a lock and a
wake-up per node (tens of microseconds). Instead a run puts its ready sync nodes in one
queue, and at most ``width`` workers drain it, each taking the next node as it frees
up; finished nodes are handed back in a batch with one wake-up of the run (its event
loop, or the blocking wait of a run without one). So a thousand quick branches cost a
few microseconds each, and slow ones (a model call) still get ``width`` threads. The
run's own thread may be one of the workers (``SyncQueue.help``) when it would only wait.

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
from collections import deque
from collections.abc import Callable
from typing import Any, Final

logger: Final = logging.getLogger("weft.graph")

IDLE_SECONDS: Final = 30.0


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

    def push(self, items: list[Any], *, helped: bool = False) -> None:
        """Queue ``items``; ``helped``: the caller drains them itself next (``help``), and
        asks for threads from there."""
        with self._lock:
            self._items.extend(items)
            spawn = not helped and self._want_thread()
        if spawn:
            self._threads.submit(self._drain)

    def help(self) -> None:
        """Drain the queue on the calling thread, as one of the ``width`` workers, until it
        is empty: the run's thread, when it would only wait for these items (see
        ``weft.graph.dispatch``). It asks for a thread as it takes its first item of
        several, as any worker does, so slow items still get ``width`` threads."""
        with self._lock:
            if self._workers >= self._width:  # workers still in ``_take``: they see the
                return  # items (they leave only once the queue is empty, under the lock)
            self._workers += 1
        try:
            self._take()
        except BaseException:  # Ctrl-C on the helping thread: it leaves the queue
            with self._lock:
                self._workers -= 1
            raise

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

    def _take(self) -> None:
        """Run the queued items one after another until none is left (one worker's loop)."""
        items, lock = self._items, self._lock
        while True:
            try:
                item = items.popleft()
            except IndexError:
                with lock:
                    if items:
                        continue
                    self._workers -= 1
                    return
            if items and not self._pending and self._workers < self._width:
                with lock:
                    spawn = self._want_thread()
                if spawn:
                    self._threads.submit(self._drain)
            if self.cancelled:
                self._drop(item)
            else:
                self._work(item)
