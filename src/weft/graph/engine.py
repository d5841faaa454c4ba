"""The engine: one async core that runs a compiled schedule.

Scheduling. A node becomes ready when every predecessor has settled (finished, aborted
or been skipped). Then:

- the only ready node, nothing running, sync value: called inline, no task, no thread; a
  chain runs as a plain loop of calls;
- the only ready node, nothing running, async value: awaited directly (both:
  ``weft.graph.inline``);
- otherwise async values start as asyncio tasks and sync values go to the run's queue of
  sync work, drained by threads (``weft.graph.pool``); ``max_concurrency`` bounds the
  nodes in flight, tasks and threads together. ``run()`` of a graph with no async node
  and no timeout has no event loop: it waits for its threads in a blocking wait, or,
  when the queued nodes are all that runs and lead only to what waits for all of them
  (a fan-out and its join), drains the queue with them first
  (``weft.graph.dispatch``).

Failures. A node that raises (after its retries) stops the run: nothing new starts,
running async nodes are cancelled, sync nodes queued for a thread are dropped, sync
nodes already running on threads finish (their results are recorded), then a
``NodeError`` is raised (``weft.graph.outcome``). A per-node ``timeout`` cancels an
async node; a sync node runs on a thread of its own and the run stops waiting for it,
but Python cannot stop a thread, so that call runs on until it returns and its late
result is ignored. ``Terminate`` starts nothing new and lets every node already
dispatched finish. Cancelling the task that awaits ``arun()`` cancels the running
async nodes and raises ``CancelledError``.

Settling. A node's result (or its step record, on resume) is checked (stop flag, state
delta), recorded, and its successors' counts go down; a successor whose predecessors
have all settled gets its arguments (``weft.graph.modes``) and its view
(``weft.graph.state``) and becomes ready, or is skipped when none of its predecessors
contributed. What the run returns, and its errors: ``weft.graph.outcome``.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import queue
import types
import uuid
from collections import deque
from time import perf_counter, time
from typing import Any, Final

from weft.errors import GraphError, NodeError, PauseError, ValueTypeError, WeftError
from weft.graph.build import Schedule
from weft.graph.context import RunContext
from weft.graph.dispatch import Completion
from weft.graph.inline import Inline
from weft.graph.modes import (
    CALL,
    FIRST,
    NO,
    Args,
    WorkGraphStopFlags,
    hand_down,
    pass_many,
    pass_one,
)
from weft.graph.observe import Observer
from weft.graph.offload import NodeExecutor, offloaded
from weft.graph.outcome import (
    ABORTED,
    DONE,
    FAILED,
    PAUSED,
    PENDING,
    SKIPPED,
    node_error,
    output_of,
    path_to,
)
from weft.graph.pause import _ASKING, Asking, Interrupt, Paused, paused
from weft.graph.pool import SyncQueue
from weft.graph.state import StateView, Writes, checked_delta, kept_delta
from weft.graph.stores import RunStores
from weft.store import Pause, RunLog, StepRecord, Store
from weft.store.notes import watched
from weft.store.runlog import check_run_id

_CONTINUE: Final = WorkGraphStopFlags.Continue
_ABORT: Final = WorkGraphStopFlags.AbortBranch
_FLAGS: Final = WorkGraphStopFlags
_CORO: Final = types.CoroutineType


class Run(Inline):
    """One run of a schedule: its bookkeeping, the async core, and the settling of results."""

    __slots__ = (
        "_quiet_joins",
        "_single",
        "_state_view",
        "answers",
        "asking",
        "attempts",
        "base",
        "branches",
        "completed",
        "deps",
        "direct",
        "done",
        "driven",
        "enclosing",
        "failure",
        "handed",
        "inputs",
        "limit",
        "log",
        "loop",
        "observer",
        "pauses",
        "plain",
        "ready",
        "remaining",
        "replay",
        "restored",
        "results",
        "schedule",
        "status",
        "store",
        "stores",
        "tasks",
        "terminators",
        "timed",
        "timers",
        "tokens",
        "views",
    )

    def __init__(
        self,
        schedule: Schedule,
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
        store: Store | None,
        run_id: str | None,
        events: bool,
        context: Any,
        limit: int | None,
        answers: Any = None,
        executor: NodeExecutor | None = None,
        isolated: bool = True,
    ) -> None:
        if executor is not None:  # its nodes' calls go there (``weft.graph.offload``)
            schedule = offloaded(schedule, executor)
        n = schedule.size
        self.schedule = schedule
        self.base: Args = (args, kwargs)
        self.limit = limit
        self.driven = schedule.loopless  # run by drive(): no event loop; waits block on the bell
        self.status = [PENDING] * n
        self.results: list[Any] = [None] * n
        self.inputs: list[Args | None] = [None] * n
        self.handed: dict[int, Args | None] = {}  # what a callable pass-down mode handed down
        self.remaining = list(schedule.indegree)
        self.ready: deque[int] = deque()
        self.replay: deque[int] = deque()
        self.done: deque[Completion] = deque()
        self.restored: dict[int, StepRecord] = {}
        self.completed = False  # a recorded run that had completed: nothing runs again
        self.running = 0
        self.halted = False
        self.failure: BaseException | None = None
        self.terminators: list[int] = []
        self.tokens = [0] * n
        self.attempts = [1] * n
        self.timers: dict[int, asyncio.TimerHandle] = {}
        self.tasks: dict[asyncio.Task[tuple[bool, Any, int]], tuple[int, float]] = {}
        self.sync: SyncQueue | None = None
        self.helper = 0
        self.context = contextvars.copy_context()
        self.loop: asyncio.AbstractEventLoop | None = None
        self.waiter: asyncio.Future[None] | None = None
        self.bell: queue.SimpleQueue[None] | None = None  # a driven run's wake-up call
        self.signalled = False
        if run_id is not None and store is None:
            raise GraphError(
                f"run_id={run_id!r} needs a store to record into; pass store=Store() (or your "
                "store) with it"
            )
        if store is not None and not isinstance(store, Store):
            raise GraphError(
                f"store={store!r}: expected a weft.store.Store (or a DurableRun's store), "
                f"not a {type(store).__name__}"
            )
        if not isinstance(events, bool):
            raise GraphError(f"events={events!r}: expected True or False")
        self.deps = context
        self.log = (
            RunLog(store, check_run_id(run_id, GraphError))
            if run_id is not None and store is not None
            else None
        )
        if answers is not None and self.log is None:
            raise PauseError(
                "answers= are for resuming a paused run: pass them with its run_id and store"
            )
        self.answers = answers
        self.asking: list[Asking | None] | None = [None] * n if self.log is not None else None
        self.pauses: list[Pause] = []
        self.enclosing: Asking | None = None
        writes = schedule.memo.get("writes")
        if writes is None:
            writes = schedule.memo["writes"] = any(schedule.states) or any(schedule.ctxs)
        if store is None and writes:
            store = Store()
        quiet = schedule.memo.get("quiet joins")
        if quiet is None:  # joins whose predecessors all pass nothing down (``_release``)
            codes = schedule.codes
            quiet = schedule.memo["quiet joins"] = tuple(
                [len(ps) > 1 and all(codes[p] == NO for p in ps) for ps in schedule.preds]
            )
        self._quiet_joins: tuple[bool, ...] = quiet
        single = schedule.memo.get("single")
        if single is None:  # the nodes with one predecessor
            single = schedule.memo["single"] = tuple([len(ps) == 1 for ps in schedule.preds])
        self._single: tuple[bool, ...] = single
        self.store = store
        # the forks and commits of a run whose nodes touch the store, or that is recorded
        self.stores = (
            RunStores(schedule, store, log=self.log, isolated=isolated)
            if store is not None and (writes or run_id is not None)
            else None
        )
        # each node's view while it runs (dropped as it settles: a run over 100,000 nodes
        # does not keep 100,000 forks), and the last state view made, which the siblings
        # of a fan-out, admitted one after another, share
        self.views: list[StateView | Store | None] = [None] * n if self.stores is not None else []
        self._state_view: StateView | None = None
        # Lifecycle notes go to the observers of the store as the run starts; a run nobody
        # watches has no observer at all, and its nodes are not timed unless recorded.
        self.observer = (
            Observer(
                store if store is not None else Store(),
                run_id or f"run-{uuid.uuid4().hex[:12]}",
                schedule.keys,
                schedule.labels,
            )
            if events and watched(store)
            else None
        )
        if self.stores is not None and self.observer is None:
            self.stores.eager = True
        self.timed = self.observer is not None or self.log is not None
        self.plain = self.stores is None and self.observer is None  # no events, records, state
        # a run whose state nodes write straight into its store (watched or not)
        self.direct = self.stores is not None and self.log is None
        # the nodes whose plain deltas _complete settles in one step
        self.branches = (
            self.stores.branches
            if self.stores is not None and self.observer is None
            else (False,) * n
        )

    # ------------------------------------------------------------------ the core

    async def execute(self, *, driven: bool = True) -> Any:
        """Run to the end; ``driven=False``: on the running event loop even when the
        schedule could run without one."""
        if not driven:
            self.driven = False
        log = self.log
        started_at = time()
        token = None
        if log is not None:
            run = log.check("graph", self.schedule.keys, error=GraphError)
            if self.answers is not None:
                log.answer(self.answers, error=PauseError)
            self._load()
            if run is not None and run.status == "completed":
                self.completed = True  # every node is restored; the output is rebuilt
            self.enclosing = _ASKING.get()
            token = _ASKING.set(None)
        if not self.driven:
            self.loop = asyncio.get_running_loop()
        try:
            for i in self.schedule.starts:
                self.inputs[i] = self.base
                self._admit(i)
            await self._main()
        except BaseException:
            await self._abandon()
            raise
        finally:
            if token is not None:
                _ASKING.reset(token)
            # the queue holds this run's bound methods: dropping it leaves no cycle, so
            # the run is freed as it ends, not by the cyclic garbage collector
            self.sync = None
        if self.failure is not None:
            if self.stores is not None:  # what finished before the failure is kept
                with contextlib.suppress(WeftError):
                    self.stores.commit_due()
            raise self.failure
        if self.pauses:
            return self._paused()
        output = output_of(self.schedule, self.status, self.results, self.terminators)
        if self.stores is not None:
            self.stores.complete(None if self.completed else started_at)
        return output

    def _load(self) -> None:
        """Resume: take the step records of the nodes that finished in an earlier run."""
        assert self.log is not None and self.stores is not None
        by_key = {key: i for i, key in enumerate(self.schedule.keys)}
        for unit, record in self.log.recorded().items():
            i = by_key.get(unit)
            if i is not None:
                self.restored[i] = record
            elif "/" not in unit:  # a node of another graph (a keyed call has a longer path)
                raise GraphError(
                    f"run {self.log.run_id!r} was recorded for a different graph (it has a "
                    f"record of the node {unit!r}, which this graph does not have); resume a "
                    "run with the graph that started it, or use a new run_id"
                )
        if self.restored:
            self.stores.resume(self.restored)

    async def _main(self) -> None:
        ready, replay = self.ready, self.replay
        inline, asyncs = self.schedule.inline, self.schedule.asyncs
        while True:
            if self.done:
                self._drain()
            if self.halted:
                if not self.running:
                    return
            elif replay:
                self._replay()
                continue
            elif ready:
                if not self.running and len(ready) == 1:
                    i = ready[0]
                    if inline[i]:
                        ready.popleft()
                        pending = self._run_inline(i)
                        if pending is not None:
                            await self._settle_awaitable(*pending)
                        continue
                    if asyncs[i]:
                        ready.popleft()
                        await self._run_direct(i)
                        continue
                self._dispatch()
            elif not self.running:
                return
            await self._wait()

    # -------------------------------------------------------------- settling

    def _complete(self, i: int, result: Any, started: float, ended: float = 0.0) -> None:
        """Node ``i`` returned ``result``: record it and release its successors."""
        if (  # a fan-out branch's delta kept as it is (``RunStores.take``): what the general
            # path below, finish and _settle do for it, in one step (W2's 1,000 branches:
            # 4 calls and ~200 opcodes a branch less)
            self.branches[i]
            and result.__class__ is dict
            and result
            and kept_delta(result)
            and self.stores.take(i, result)  # type: ignore[union-attr]
        ):
            self.results[i] = result
            self.views[i] = None
            self.status[i] = DONE
            if not self.halted:  # _release_all's loop: a branch passes nothing down
                remaining = self.remaining
                for s in self.schedule.succs[i]:
                    left = remaining[s] = remaining[s] - 1
                    if not left:
                        self._release(s)
            return
        flag = _CONTINUE
        if result.__class__ is tuple and len(result) == 2 and result[0].__class__ is _FLAGS:
            flag, result = result
        stores = self.stores
        if stores is not None:
            delta: dict[str, Any] | Writes | None = None
            if self.schedule.states[i]:
                if result.__class__ is dict and result and kept_delta(result):
                    delta = result  # kept as the node returned it
                elif result.__class__ is Writes:
                    delta, result = result, result.result
                else:
                    view = self.views[i]
                    store = view._store if isinstance(view, StateView) else stores.store
                    try:
                        delta = result = checked_delta(result, self.schedule.keys[i], store)
                    except (TypeError, ValueTypeError) as exc:
                        self._fail(i, exc, started)
                        return
            try:
                wall = time() - (perf_counter() - started) if started else 0.0  # when it began
                stores.finish(i, flag, result, delta, wall)
            except WeftError as exc:
                self._fail_commit(i, exc)
                return
        if self.observer is not None:
            self.observer.finished(i, flag, (ended or perf_counter()) - started)
        self._settle(i, flag, result)

    def _replay(self) -> None:
        """Settle the ready nodes that a step record restores, without calling them."""
        while self.replay and not self.halted:
            i = self.replay.popleft()
            record = self.restored[i]
            flag = WorkGraphStopFlags[record.flag] if record.flag else _CONTINUE
            if self.observer is not None:
                self.observer.skipped(i, "recorded")
            assert self.stores is not None
            try:
                self.stores.restore(i, record)
            except WeftError as exc:
                self._fail_commit(i, exc)
                return
            self._settle(i, flag, record.value)

    def _settle(self, i: int, flag: WorkGraphStopFlags, result: Any) -> None:
        self.results[i] = result
        if self.views:
            self.views[i] = None
        if flag is _CONTINUE:
            self.status[i] = DONE
        elif flag is _ABORT:
            self.status[i] = ABORTED
        else:
            self.status[i] = DONE
            self.terminators.append(i)
            self._halt(cancel=False)
        if not self.halted:
            self._release_all(i)

    def _release_all(self, i: int) -> None:
        schedule = self.schedule
        code = schedule.codes[i]
        done = self.status[i] == DONE
        if code == CALL and done and not self._hand_down(i):
            return
        remaining, inputs = self.remaining, self.inputs
        same = code == NO and done  # what a successor of only this node is called with
        stores = self.stores
        # the branches of a fan-out that ``RunStores.take`` serves read the same view: the
        # first is admitted, the others take its view (W2's 100 branches: 785 -> 705
        # opcodes a branch, 3.68M -> 3.44M instructions a run)
        shared = stores.branches if same and stores is not None and not self.restored else None
        viewing = stores.viewing if shared is not None else None  # type: ignore[union-attr]
        views, ready, single, given = self.views, self.ready, self._single, inputs[i]
        first = -1
        first_store = first_view = None
        for s in schedule.succs[i]:
            left = remaining[s] = remaining[s] - 1
            if not left:
                if same and single[s]:  # a branch of a fan-out: _release's first case
                    inputs[s] = given
                    if first >= 0 and shared[s]:  # type: ignore[index]
                        # _admit's and enter's work, as they did it for the first
                        viewing[s] = first_store  # type: ignore[index]
                        views[s] = first_view
                        ready.append(s)
                        continue
                    self._admit(s)
                    if shared is not None and shared[s] and ready and ready[-1] == s:
                        first = s
                        first_store, first_view = viewing[s], views[s]  # type: ignore[index]
                else:
                    self._release(s)

    def _release(self, s: int) -> None:
        """Every predecessor of ``s`` settled: build its arguments, or skip it."""
        schedule, status, results, inputs = self.schedule, self.status, self.results, self.inputs
        preds = schedule.preds[s]
        if len(preds) == 1:
            p = preds[0]
            if status[p] == DONE:
                code = schedule.codes[p]
                if code == NO:
                    inputs[s] = inputs[p]
                elif code == FIRST:
                    args, kwargs = inputs[p]  # type: ignore[misc]
                    inputs[s] = ((results[p], *args[1:]), kwargs)
                elif code == CALL:
                    handed = self.handed[p]
                    inputs[s] = inputs[p] if handed is None else handed
                else:
                    try:
                        inputs[s] = pass_one(code, schedule.mode_args[p], results[p], inputs[p])  # type: ignore[arg-type]
                    except Exception as exc:
                        self._fail_pass_down(p, s, exc)
                        return
                self._admit(s)
                return
        elif self._quiet_joins[s]:
            # a join none of whose predecessors passes anything down (a fan-out's join) is
            # called as its first contributing one was, which is what pass_many gives it;
            # this skips building 1,000 contributions for a join after 1,000 branches
            for p in preds:
                if status[p] == DONE:
                    inputs[s] = inputs[p]
                    self._admit(s)
                    return
        else:
            contributing = [p for p in preds if status[p] == DONE]
            if contributing:
                try:
                    inputs[s] = pass_many(
                        [
                            (CALL, schedule.keys[p], self.handed[p])
                            if schedule.codes[p] == CALL
                            else (schedule.codes[p], schedule.mode_args[p], results[p])
                            for p in contributing
                        ],
                        inputs[contributing[0]],  # type: ignore[arg-type]
                        schedule.multi_keywords[s],
                    )
                except Exception as exc:
                    self._fail_pass_down(contributing[0], s, exc)
                    return
                self._admit(s)
                return
        self._skip(s)

    def _admit(self, s: int) -> None:
        if self.restored and s in self.restored:
            self.replay.append(s)
            return
        stores = self.stores
        if stores is not None:
            try:
                store = stores.enter(s)
            except WeftError as exc:  # the forks of a join's parallel branches conflict
                self._fail_commit(s, exc)
                return
            if self.schedule.states[s]:
                view = self._state_view
                if view is None or view._store is not store:
                    view = self._state_view = StateView(store)
                self.views[s] = view
            else:
                self.views[s] = store
        self.ready.append(s)

    def _skip(self, first: int) -> None:
        """Skip ``first`` (its predecessors were all aborted or skipped) and what that strands."""
        schedule, status, remaining = self.schedule, self.status, self.remaining
        work = [first]
        while work:
            s = work.pop()
            status[s] = SKIPPED
            if self.stores is not None:
                self.stores.skip(s)
            if self.observer is not None:
                self.observer.skipped(s, "aborted")
            for c in schedule.succs[s]:
                remaining[c] -= 1
                if not remaining[c]:
                    if any(status[p] == DONE for p in schedule.preds[c]):
                        self._release(c)
                    else:
                        work.append(c)

    # -------------------------------------------------------------- failing

    def _fail(
        self,
        i: int,
        exc: BaseException,
        started: float,
        attempts: int = 1,
        ended: float = 0.0,
    ) -> None:
        if exc.__class__ is Interrupt:
            self._pause(i, exc)
            return
        self.status[i] = FAILED
        if self.observer is not None:
            self.observer.failed(i, exc, (ended or perf_counter()) - started)
        if self.failure is None:
            if not isinstance(exc, Exception):  # KeyboardInterrupt, SystemExit: raised as they are
                self._halt_with(exc)
            else:
                run_id = self.log.run_id if self.log is not None else None
                self._halt_with(node_error(self.schedule, self.status, run_id, i, exc, attempts))

    def _pause(self, i: int, interrupt: Interrupt) -> None:
        """Node ``i`` asked a person (its question is recorded): the rest of the run goes
        on without it and what depends on it (see ``weft.graph.pause``)."""
        self.status[i] = PAUSED
        self.pauses.extend(interrupt.pauses)
        if self.observer is not None:
            self.observer.paused(i)

    def _paused(self) -> Paused:
        """End a run that some node paused: commit what the frontier passed (later nodes
        that finished are recorded already), store the run as paused, and return its
        ``Paused``, or raise the pause to the unit that runs this graph (``paused``)."""
        if self.stores is not None:
            with contextlib.suppress(WeftError):
                self.stores.commit_due()
        if self.log is not None:
            self.log.paused("graph", self.schedule.keys)
        return paused(self.log, Interrupt(tuple(self.pauses)), self.enclosing)

    def _rewind(self, i: int) -> None:
        """Node ``i`` is called again (a retry): its pause points count from the first."""
        if self.asking is not None and (point := self.asking[i]) is not None:
            point.index = 0

    def _commit_due(self) -> None:
        """Commit what the frontier passed during a batch of completions (its notes are
        logged after it, in the order things happened)."""
        stores = self.stores
        if stores is not None and stores.due:
            try:
                stores.commit_due()
            except WeftError as exc:
                self._halt_with(exc)

    def _fail_commit(self, i: int, exc: WeftError) -> None:
        """Node ``i``'s writes or record could not be committed (a conflict with a parallel
        branch, a reducer that refused them, a journal that refused them): the run stops
        with that error as it is."""
        self.status[i] = FAILED
        if self.failure is None:
            self._halt_with(exc)

    def _hand_down(self, i: int) -> bool:
        """Run node ``i``'s callable pass-down mode, once for all its successors (and also
        when it has none); False when it raised and the run stops."""
        args, kwargs = self.inputs[i]  # type: ignore[misc]
        try:
            self.handed[i] = hand_down(self.schedule.mode_args[i], self.results[i], args, kwargs)
        except Exception as exc:
            succs = self.schedule.succs[i]
            self._fail_pass_down(i, succs[0] if len(succs) == 1 else -1, exc)
            return False
        return True

    def _fail_pass_down(self, p: int, s: int, exc: Exception) -> None:
        keys, succs = self.schedule.keys, self.schedule.succs[p]
        into = (
            f"into {keys[s]}"
            if s >= 0
            else f"into {', '.join(keys[c] for c in succs)}"
            if succs
            else "(a node with no successor)"
        )
        error = NodeError(
            f"the pass-down of {keys[p]} {into} raised {type(exc).__name__}: {exc} "
            f"(path: {path_to(self.schedule, self.status, p)}); fix the result_pass_down_mode "
            f"of {keys[p]}"
        )
        error.__cause__ = exc
        if self.failure is None:
            self._halt_with(error)

    def _halt_with(self, error: BaseException) -> None:
        if self.failure is None:
            self.failure = error
        self._halt(cancel=True)

    def _halt(self, *, cancel: bool) -> None:
        """Start nothing new. With ``cancel`` (a failure), also cancel the running async
        nodes and drop the sync nodes still queued for a thread; without it (Terminate),
        every node already dispatched finishes, queued sync nodes as much as tasks."""
        self.halted = True
        if cancel:
            if self.sync is not None:
                self.sync.cancel()
            for task in self.tasks:
                task.cancel()

    # -------------------------------------------------------------- helpers

    def _call_args(self, i: int) -> Args:
        args, kwargs = self.inputs[i]  # type: ignore[misc]
        schedule = self.schedule
        if schedule.states[i]:
            args = (self.views[i], *args)
        if schedule.ctxs[i]:
            kwargs = {**kwargs, "ctx": self._context(i)}
        if self.observer is not None:
            self.observer.enter(i)
        if self.asking is not None:  # a recorded run: the node may pause
            point = self.asking[i] = Asking(self.log, schedule.keys[i], schedule.labels[i])  # type: ignore[arg-type]
            _ASKING.set(point)
        return args, kwargs

    def _context(self, i: int) -> RunContext[Any]:
        view = self.views[i] if self.views else None
        store = view._store if isinstance(view, StateView) else view
        assert isinstance(store, Store), "a node taking ctx works on a fork"
        log = self.log
        return RunContext(
            self.deps,
            store,
            self.schedule.keys[i],
            self.schedule.labels[i],
            None if log is None else log.run_id,
            log,
        )

    def _started(self, i: int) -> float:
        if self.observer is not None:
            self.observer.started(i)
        return perf_counter() if self.timed else 0.0
