"""Dispatching: async nodes as tasks, sync nodes to threads, and their completions.

``Dispatching`` is the part of a run that deals with concurrency; ``weft.graph.engine.Run``
(the core loop and the settling of results) inherits it through ``weft.graph.inline``
(the calls a run makes on its own thread). A
completion, from a task or a thread, is appended to ``done`` and wakes the run once per
batch; ``_drain`` settles the batch on the run's thread, so results are only ever
touched by one thread. A run with an event loop is woken through the loop; a driven run
(``run()`` of a graph with no async node and no timeout, which has no loop) blocks on
its ``bell``, a queue the threads ring.

A driven run that records nothing helps instead of blocking when the sync nodes it
queued are all that runs and lead only to nodes that wait for all of them (``_joined``:
a fan-out's branches and their join): nothing can become ready before the last of them
is done, so its thread takes queued nodes too, as one of the queue's ``width`` workers.
Quick branches then cost no thread hand-off (a wake-up each way, ~60 us on a 2-core
VM); slow ones still get threads, asked for as the first is taken. When every branch it
ran was quick the last time the same fan-out ran, it asks for no thread at first (waking
one costs ~150 us a fan-out there); see ``weft.graph.pool`` for when it does, and for the
standby thread that asks for one should a branch block. A branch that fails
drops the queued ones at once (the run's thread may be busy in one), and Ctrl-C on the
run's thread, inside a node it runs, stops the run as it does in a wait.

A sync node with a ``timeout`` runs on a thread of its own with a loop timer: when the
timer fires first the node has failed with a timeout and the run stops waiting (its
thread runs on: Python cannot stop a thread); a result that comes back later is ignored
(each attempt carries a token). Its retries are scheduled by the loop. Other sync nodes
retry on their thread, sleeping their backoff there.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import queue
import threading
import time
import types
from collections import deque
from collections.abc import Callable
from time import perf_counter
from typing import Any, Final

from weft._sync import run_sync
from weft.graph.build import Schedule
from weft.graph.modes import Args
from weft.graph.observe import Observer
from weft.graph.outcome import SKIPPED, TimedOut
from weft.graph.pause import Interrupt
from weft.graph.pool import SyncQueue
from weft.store import RunLog

DEFAULT_THREADS: Final = 32
"""Threads for sync nodes of one run when ``max_concurrency`` is None."""

_CORO: Final = types.CoroutineType

Completion = tuple[int, int, bool | None, Any, float, float, int]
"""``(node, token, ok, value, started, ended, attempts)``; ``ok`` None: it never ran."""


class Dispatching:
    """Tasks, threads and completions of one run (mixed into ``Run``)."""

    # the fields this part sets (Run's own hold the rest): a run's fields are slots, which
    # its hot paths read quicker than a dict of 46 keys (W2's 100 branches: ~4% less time)
    __slots__ = (
        "bell",
        "context",
        "halted",
        "helper",
        "running",
        "signalled",
        "sync",
        "waiter",
    )

    schedule: Schedule
    limit: int | None
    observer: Observer | None
    timed: bool
    inputs: list[Args | None]
    status: list[int]
    ready: deque[int]
    done: deque[Completion]
    running: int
    halted: bool
    tokens: list[int]
    attempts: list[int]
    timers: dict[int, asyncio.TimerHandle]
    tasks: dict[asyncio.Task[tuple[bool, Any, int]], tuple[int, float]]
    sync: SyncQueue | None
    context: contextvars.Context
    """The run's context as its latest batch was dispatched (copied for each sync node)."""
    loop: asyncio.AbstractEventLoop | None
    waiter: asyncio.Future[None] | None
    signalled: bool
    driven: bool
    bell: queue.SimpleQueue[None] | None
    asking: list[Any] | None
    remaining: list[int]
    log: RunLog | None
    views: list[Any]
    """Each node's view while it runs (the run store, a fork or a state view of one)."""
    helper: int
    """The thread that helps drain the sync queue (``SyncQueue.help``): the run's own."""
    branches: tuple[bool, ...]
    """The state branches nobody watches or records (``Run``'s)."""

    # Run's settling: (i, result, started, ended), (i, exc, started, attempts, ended)
    _complete: Callable[[int, Any, float, float], None]
    _fail: Callable[[int, BaseException, float, int, float], None]
    _call_args: Callable[[int], Args]
    _commit_due: Callable[[], None]
    _rewind: Callable[[int], None]

    # -------------------------------------------------------------- waiting

    async def _wait(self) -> None:
        if self.done:
            return
        if self.driven:  # no event loop: block this thread until a worker rings
            assert self.bell is not None, "a run waits only after it dispatched to a thread"
            self.bell.get()
            self.signalled = False
            return
        assert self.loop is not None
        waiter = self.waiter = self.loop.create_future()
        try:
            await waiter
        finally:
            self.waiter = None

    def _wake(self) -> None:
        self.signalled = False
        waiter = self.waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    def _signal(self) -> None:
        """From a worker thread: wake the run once per batch of completions."""
        if not self.signalled:
            self.signalled = True
            if self.bell is not None:
                self.bell.put(None)
                return
            loop = self.loop
            assert loop is not None
            with contextlib.suppress(RuntimeError):  # a closed loop: the run is over
                loop.call_soon_threadsafe(self._wake)

    async def _abandon(self) -> None:
        """Cancelled, or an error escaped the core: stop everything we can stop."""
        self.halted = True
        if self.sync is not None:
            self.sync.cancel()
        for timer in self.timers.values():
            timer.cancel()
        tasks = list(self.tasks)
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.wait(tasks)

    # -------------------------------------------------------------- async nodes

    async def _attempts(
        self, i: int, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> tuple[bool, Any, int]:
        """Await async node ``i`` with its timeout and retries: ``(ok, value, attempts)``."""
        schedule = self.schedule
        fn, retry, timeout = schedule.fns[i], schedule.retries[i], schedule.timeouts[i]
        attempt = 1
        while True:
            try:
                if timeout is None:
                    return True, await fn(*args, **kwargs), attempt
                clock = asyncio.timeout(timeout)
                try:
                    async with clock:
                        return True, await fn(*args, **kwargs), attempt
                except TimeoutError:
                    if clock.expired():
                        raise TimedOut(timeout) from None
                    raise
            except Exception as exc:
                if (
                    retry is None
                    or attempt >= retry.attempts
                    or not isinstance(exc, retry.retry_on)
                ):
                    return False, exc, attempt
                delay = retry.delay(attempt)
                attempt += 1
                self._rewind(i)
                if delay:
                    await asyncio.sleep(delay)

    # -------------------------------------------------------------- dispatching

    def _dispatch(self) -> None:
        """Start the ready nodes there is room for: tasks and timed sync nodes now, the
        other sync nodes as one batch for the threads."""
        ready, schedule, loop, observer = self.ready, self.schedule, self.loop, self.observer
        asyncs, timeouts, call_args = schedule.asyncs, schedule.timeouts, self._call_args
        timed = self.timed
        self.context = contextvars.copy_context()  # each node runs in a copy (``_work``)
        room = len(ready) if self.limit is None else self.limit - self.running
        room = min(room, len(ready))
        self.running += max(room, 0)
        if observer is None and schedule.loopless:
            # every node is sync and untimed and nobody watches: the batch is the ready
            # nodes with their tokens (a fan-out of 1,000 branches: 37 -> 14 opcodes each)
            if room > 0:
                self._dispatch_plain(room)
            return
        batch: list[tuple[Any, ...]] = []
        if observer is not None:
            observer.hold()  # the started notes go in one batch, before any of the nodes runs
        try:
            for _ in range(room):
                i = ready.popleft()
                if observer is not None:
                    observer.started(i)
                started = perf_counter() if timed else 0.0
                if asyncs[i]:
                    assert loop is not None, "a run with async nodes has an event loop"
                    args, kwargs = call_args(i)
                    task = loop.create_task(self._attempts(i, args, kwargs))
                    self.tasks[task] = (i, started)
                    task.add_done_callback(self._task_done)
                    continue
                item = (i, self.tokens[i])
                timeout = timeouts[i]
                if timeout is None:
                    batch.append(item)
                    continue
                if observer is not None:
                    observer.flush()  # its started note before it runs
                self._queue().run_alone(item)
                assert loop is not None, "a run with timeouts has an event loop"
                self.timers[i] = loop.call_later(
                    timeout, self._time_out, i, self.tokens[i], timeout, perf_counter()
                )
        finally:
            if observer is not None:
                observer.release()
        if batch:
            self._push(batch)

    def _dispatch_plain(self, room: int) -> None:
        """Queue ``room`` ready nodes, all sync and untimed, for the threads (``_push``)."""
        ready, tokens = self.ready, self.tokens
        self._push([(i, tokens[i]) for i in [ready.popleft() for _ in range(room)]])

    def _push(self, batch: list[tuple[int, int]]) -> None:
        """Queue ``batch`` (sync nodes) for the threads; when it is all that runs and leads
        only to what waits for all of it (``_joined``), the run's thread drains the queue
        with the threads instead of waiting for them."""
        ready = self.ready
        sync = self._queue()
        if (  # a recorded run commits each branch as it finishes: no help there
            self.driven
            and self.log is None
            and self.running == len(batch)
            and not ready
            and self._joined(batch)
        ):
            sync.push(batch, helped=True)
            self.helper = threading.get_ident()
            # whether this fan-out's branches were all quick the last time it ran (then
            # the run's thread starts on them alone: ``SyncQueue.help``)
            quick = self.schedule.memo.setdefault("quick fan-outs", {})
            first = batch[0][0]
            quick[first] = sync.help(alone=quick.get(first, False))
        else:
            sync.push(batch)

    def _joined(self, batch: list[tuple[int, int]]) -> bool:
        """Whether ``batch``, all that runs, only leads to nodes that wait for the whole of
        it (a fan-out's branches and their join): then nothing can become ready before the
        last of it is done, and the run's thread, which would only wait for it, runs some
        of it too (``SyncQueue.help``) instead of waiting for a thread to start and then
        for its wake-up (W2's 100 branches: 420 -> 280 us)."""
        succs, remaining, n = self.schedule.succs, self.remaining, len(batch)
        after = succs[batch[0][0]]
        if any(remaining[s] != n for s in after):
            return False
        return all(succs[i] == after for i, _token in batch)

    def _queue(self) -> SyncQueue:
        if self.sync is None:
            if self.driven:
                self.bell = queue.SimpleQueue()
            width = DEFAULT_THREADS if self.limit is None else self.limit
            self.sync = SyncQueue(width, self._work, self._drop)
        return self.sync

    def _work(self, item: tuple[Any, ...]) -> None:
        """On a worker thread: run one sync node, with its retries (sleeping their backoff)
        unless it has a timeout (the loop retries those)."""
        i, token = item
        # Its copy of the context and its arguments (made in that copy: they may set its
        # pause point) are made here, not as it is queued: a fan-out over 100,000 nodes
        # would otherwise hold them all until their turn, and the garbage collector would
        # walk them over and over. (The context is the one of the latest dispatch: while
        # sync nodes are queued, the run's thread dispatches nothing and runs no node but
        # theirs.)
        context = self.context.copy()
        if self.branches[i]:
            # a state branch nobody watches or records (``Run.branches``): its first
            # attempt, untimed, called as _call_args would (W2's 100 branches: ~5% less
            # wall time than through the general loop below, side by side)
            args, kwargs = self.inputs[i]
            view = self.views[i]
            try:
                value = context.run(self.schedule.fns[i], view, *args, **kwargs)
                if value.__class__ is _CORO:
                    value = run_sync(value)
            except BaseException as exc:  # a KeyboardInterrupt too: it must reach the run
                if self._work_failed(i, token, exc, 0.0, 1):
                    self._attempts_from(i, token, context, ((view, *args), kwargs), 2)
            else:
                self.done.append((i, token, True, value, 0.0, 0.0, 1))
        else:
            self._attempts_from(i, token, context, None, 1)
        if not self.signalled:
            self._signal()

    def _attempts_from(
        self, i: int, token: int, context: contextvars.Context, call: Args | None, attempt: int
    ) -> None:
        """``_work``'s attempts at node ``i`` from number ``attempt`` on; ``call``: its
        arguments, when made already."""
        schedule, timed = self.schedule, self.timed
        fn = schedule.fns[i]
        started = perf_counter() if timed else 0.0
        while True:
            try:
                if call is None:  # in its context only when watched or recorded: then it
                    # sets context variables (its pause point)
                    if self.observer is not None or self.asking is not None:
                        call = context.run(self._call_args, i)
                    elif schedule.states[i] and not schedule.ctxs[i]:  # a fan-out's branch
                        args, kwargs = self.inputs[i]  # type: ignore[misc]
                        call = ((self.views[i], *args), kwargs)  # _call_args', inlined
                    else:
                        call = self._call_args(i)
                value = context.run(fn, *call[0], **call[1])
                if value.__class__ is _CORO:
                    value = run_sync(value)
            except BaseException as exc:  # a KeyboardInterrupt too: it must reach the run
                if not self._work_failed(i, token, exc, started, attempt):
                    return
                attempt += 1
            else:
                ended = perf_counter() if timed else 0.0
                self.done.append((i, token, True, value, started, ended, attempt))
                return

    def _work_failed(
        self, i: int, token: int, exc: BaseException, started: float, attempt: int
    ) -> bool:
        """Attempt number ``attempt`` at node ``i`` raised ``exc``: True once its retry's
        backoff is slept and its writes undone (try again), else False, the failure
        reported."""
        if exc.__class__ is KeyboardInterrupt and threading.get_ident() == self.helper:
            raise exc  # Ctrl-C, on the run's thread as it helps: it stops the run at once
        # a node with a timeout is retried by the loop (``_drain``), not here
        schedule = self.schedule
        has_timeout = schedule.timeouts[i] is not None
        retry = None if has_timeout else schedule.retries[i]
        if (
            retry is None
            or attempt >= retry.attempts
            or not isinstance(exc, retry.retry_on)
            or not isinstance(exc, Exception)
        ):
            self.done.append((i, token, False, exc, started, perf_counter(), attempt))
            sync = self.sync
            if exc.__class__ is not Interrupt and not has_timeout and sync is not None:
                # the run will stop (``_fail``): drop the queued nodes now, not once the
                # run's thread hears of it (it may be running one itself)
                sync.cancel()
            return False
        time.sleep(retry.delay(attempt))
        self._rewind(i)
        return True

    def _drop(self, item: tuple[Any, ...]) -> None:
        self.done.append((item[0], item[1], None, None, 0.0, 0.0, 0))
        self._signal()

    def _task_done(self, task: asyncio.Task[tuple[bool, Any, int]]) -> None:
        i, started = self.tasks.pop(task)
        token = self.tokens[i]
        ended = perf_counter()
        if task.cancelled():
            self.done.append((i, token, None, None, started, ended, 0))
        elif (exc := task.exception()) is not None:  # a BaseException the node let out
            self.done.append((i, token, False, exc, started, ended, 1))
        else:
            ok, value, attempts = task.result()
            self.done.append((i, token, ok, value, started, ended, attempts))
        self._wake()

    def _time_out(self, i: int, token: int, timeout: float, started: float) -> None:
        self.done.append((i, token, False, TimedOut(timeout), started, perf_counter(), 1))
        self._wake()

    # -------------------------------------------------------------- completions

    def _drain(self) -> None:
        """Settle the completions that came in, then commit what they made due."""
        done, tokens, schedule, observer = self.done, self.tokens, self.schedule, self.observer
        if observer is not None:
            observer.hold()  # the notes of the batch go in one go, after its commit
        try:
            while done:
                i, token, ok, value, started, ended, attempts = done.popleft()
                if token != tokens[i]:
                    continue  # a timed-out attempt that came back late
                tokens[i] = token + 1
                if self.timers:
                    timer = self.timers.pop(i, None)
                    if timer is not None:
                        timer.cancel()
                if ok:
                    self.running -= 1
                    self._complete(i, value, started, ended)
                elif ok is None:
                    self.running -= 1
                    self.status[i] = SKIPPED
                    if observer is not None:
                        observer.skipped(i, "cancelled")
                else:
                    retry = schedule.retries[i]
                    if (
                        schedule.timeouts[i] is not None
                        and not schedule.asyncs[i]
                        and not self.halted
                        and retry is not None
                        and self.attempts[i] < retry.attempts
                        and isinstance(value, retry.retry_on)
                    ):
                        assert self.loop is not None
                        self.attempts[i] += 1
                        self.loop.call_later(retry.delay(self.attempts[i] - 1), self._again, i)
                        continue
                    self.running -= 1
                    self._fail(i, value, started, max(attempts, self.attempts[i]), ended)
            self._commit_due()
        finally:
            if observer is not None:
                observer.release()

    def _again(self, i: int) -> None:
        """Retry a sync node with a timeout (its running count was kept)."""
        self.running -= 1
        if self.halted:
            self.status[i] = SKIPPED
        else:
            self.ready.appendleft(i)
        self._wake()
