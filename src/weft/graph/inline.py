"""Inline and direct calls: the nodes a run calls on its own thread.

``Inline`` is the part of a run (``weft.graph.engine.Run`` inherits it) that calls a ready
node where the run is, with no task and no thread, when it is the only work: a sync node
is called inline, then its successor while it is the only one ready, so a chain runs as a
plain loop of calls; an async node is awaited directly. Two loops are specialised: a run
with no store, no state and no records keeps a chain's arguments in locals
(``_run_chain``), and a chain of state nodes that work in place writes each delta (or
``Writes``) straight into the run's store (``_run_state_chain``).
"""

from __future__ import annotations

import types
from collections import deque
from collections.abc import Callable, Coroutine
from time import perf_counter
from typing import Any, Final

from weft._sync import run_sync
from weft.errors import InvalidKeyError, ValueTypeError, WeftError
from weft.graph.dispatch import Dispatching
from weft.graph.modes import FIRST, NO, WorkGraphStopFlags, pass_one
from weft.graph.outcome import DONE
from weft.graph.pause import _ASKING, Asking, Interrupt
from weft.graph.state import StateView, Writes, checked_delta, kept_delta
from weft.graph.stores import RunStores

_CORO: Final = types.CoroutineType
_FLAGS: Final = WorkGraphStopFlags
_CONTINUE: Final = WorkGraphStopFlags.Continue
_FAILED_CALL: Final = object()


class Inline(Dispatching):
    """The inline calls of one run (mixed into ``Run``)."""

    __slots__ = ()

    plain: bool
    direct: bool
    stores: RunStores | None
    asking: list[Asking | None] | None
    restored: dict[int, Any]
    replay: deque[int]
    results: list[Any]
    views: list[StateView | Any]

    # Run's own (see there)
    _started: Callable[[int], float]
    _release_all: Callable[[int], None]
    _admit: Callable[[int], None]
    _fail_pass_down: Callable[[int, int, Exception], None]
    _fail_commit: Callable[[int, WeftError], None]

    def _run_inline(self, i: int) -> tuple[int, Coroutine[Any, Any, Any], float] | None:
        """Call ready sync node ``i`` here, then its successor while it is the only work."""
        if self.plain:
            return self._run_chain(i)
        if self.direct and self.stores is not None and self.stores.inplace[i]:
            i = self._run_state_chain(i)
            if i < 0:
                return None
            self.ready.popleft()
        schedule = self.schedule
        fns, inline, ready = schedule.fns, schedule.inline, self.ready
        stores, log = self.stores, self.log
        chained = stores.chained if stores is not None and stores.eager and log else None
        while True:
            if chained is not None and chained[i] and stores.can_chain(i):  # type: ignore[union-attr]
                # A recorded chain's state nodes: what _call_args, _complete and finish do,
                # for a delta of plain values, in one step (RunStores.finish_chained), each
                # node committed as it finishes, and its successor, the same kind of node
                # with the same arguments, called next in this loop while it is the only
                # work. 154.7k -> 140.7k instructions per node of a durable chain
                # (callgrind, bench W3 with a no-op append); ~90 opcodes a node less since.
                args, kwargs = self.inputs[i]  # type: ignore[misc]
                view = self.views[i]
                keys, labels, codes = schedule.keys, schedule.labels, schedule.codes
                results, views, status = self.results, self.views, self.status
                asking, viewing, store = self.asking, stores.viewing, stores.store  # type: ignore[union-attr]
                while True:
                    asking[i] = point = Asking(log, keys[i], labels[i])  # type: ignore[arg-type,index]
                    _ASKING.set(point)
                    started = perf_counter()
                    try:
                        result = fns[i](view, *args, **kwargs)
                    except Exception as exc:
                        result = self._retry_inline(i, (view, *args), kwargs, exc, started)
                        return self._after_inline(i, result, started)
                    except Interrupt as pause:
                        self._fail(i, pause, started, 1, 0.0)
                        return None
                    if result.__class__ is not dict or not result or not kept_delta(result):
                        if result.__class__ is _CORO:
                            return self._after_inline(i, result, started)
                        self._complete(i, result, started, 0.0)  # a flag, Writes, values to check
                        break
                    try:
                        stores.finish_chained(i, result, perf_counter() - started)  # type: ignore[union-attr]
                    except WeftError as exc:
                        self._fail_commit(i, exc)
                        return None
                    results[i] = result  # _settle, for a node that went on
                    views[i] = None
                    status[i] = DONE
                    s = schedule.chain[i]
                    if not chained[s] or codes[i] != NO or self.restored:
                        self._release_all(i)
                        break
                    # its successor, admitted as _release_all, _admit and enter would, to
                    # read the run store with the same args
                    self.remaining[s] = 0
                    self.inputs[s] = self.inputs[i]
                    viewing[s] = store
                    views[s] = view
                    if ready or self.running or self.halted or self.replay or not inline[s]:
                        ready.append(s)
                        break
                    i = s
            else:
                args, kwargs = self._call_args(i)
                started = self._started(i)
                try:
                    result = fns[i](*args, **kwargs)
                except Exception as exc:  # after its retries, the main loop takes the next node
                    result = self._retry_inline(i, args, kwargs, exc, started)
                    return self._after_inline(i, result, started)
                except Interrupt as pause:
                    self._fail(i, pause, started, 1, 0.0)
                    return None
                if result.__class__ is _CORO:
                    return self._after_inline(i, result, started)
                self._complete(i, result, started, 0.0)
            if len(ready) != 1 or self.running or self.halted or self.replay:
                return None
            i = ready[0]
            if not inline[i]:
                return None
            ready.popleft()

    def _run_chain(self, i: int) -> tuple[int, Coroutine[Any, Any, Any], float] | None:
        """``_run_inline`` for a run with no store, no state and no records: along a chain
        (one successor that has one predecessor) the arguments stay in locals and each
        step is a call and a few list stores."""
        schedule = self.schedule
        fns, chain, inline, codes = schedule.fns, schedule.chain, schedule.inline, schedule.codes
        results, status, remaining, inputs = self.results, self.status, self.remaining, self.inputs
        args, kwargs = inputs[i]  # type: ignore[misc]
        while True:
            try:
                result = fns[i](*args, **kwargs)
            except Exception as exc:
                inputs[i] = (args, kwargs)
                return self._after_inline(i, self._retry_inline(i, args, kwargs, exc, 0.0))
            cls = result.__class__
            if cls is _CORO or (
                cls is tuple and len(result) == 2 and result[0].__class__ is _FLAGS
            ):
                inputs[i] = (args, kwargs)
                return self._after_inline(i, result)
            results[i] = result
            status[i] = DONE
            s = chain[i]
            if s < 0 or self.ready:
                inputs[i] = (args, kwargs)
                self._release_all(i)
                return None
            code = codes[i]
            if code == FIRST:
                args = (result, *args[1:]) if len(args) > 1 else (result,)
            elif code != NO:
                try:
                    args, kwargs = pass_one(code, schedule.mode_args[i], result, (args, kwargs))
                except Exception as exc:
                    self._fail_pass_down(i, s, exc)
                    return None
            remaining[s] = 0
            if not inline[s]:
                inputs[s] = (args, kwargs)
                self._admit(s)
                return None
            i = s

    def _run_state_chain(self, i: int) -> int:
        """``_run_inline`` for the state nodes of a chain that work in place (a run with no
        run id): each node's delta goes straight into the run's store and the next node is
        called in the same loop; watched, each node's started note, its write and its
        finished note are logged in that order, as the general path logs them. Returns a
        ready node this loop leaves to the general path (left in ``ready``), or -1."""
        stores = self.stores
        assert stores is not None
        schedule = self.schedule
        if not schedule.states[i]:
            self.ready.appendleft(i)
            return i
        fns, keys = schedule.fns, schedule.keys
        results, status, remaining, inputs = self.results, self.status, self.remaining, self.inputs
        store, finished, ready, hops = stores.store, stores.finished, self.ready, stores.hops
        write_one = store._write_one
        observer = self.observer
        started = 0.0
        view = StateView(store)
        args, kwargs = inputs[i]  # type: ignore[misc]
        bare = not args and not kwargs
        while True:
            if observer is not None:  # _call_args' and _started's part
                observer.enter(i)
                observer.started(i)
                started = perf_counter()
            try:
                result = fns[i](view) if bare else fns[i](view, *args, **kwargs)
            except Exception as exc:
                inputs[i] = (args, kwargs)
                self.views[i] = view
                result = self._retry_inline(i, (view, *args), kwargs, exc, started)
                self._after_inline(i, result, started)
                return -1
            if result.__class__ is dict and len(result) == 1:
                # one field, the common delta: ``_write_one`` checks it as it stores it
                ((path, value),) = result.items()
                try:
                    stored = write_one("state", path, value, keys[i])
                except (InvalidKeyError, ValueTypeError) as exc:
                    try:  # a bad delta: ``checked_delta`` names the node
                        checked_delta(result, keys[i], store)
                    except (TypeError, ValueTypeError) as bad:
                        self._fail(i, bad, started, 1, 0.0)
                    else:
                        self._fail_commit(i, exc)
                    return -1
                except WeftError as exc:
                    self._fail_commit(i, exc)
                    return -1
                delta = result if stored is value else {path: stored}
            elif result.__class__ is Writes:
                try:
                    result.write_to(store, keys[i])
                except WeftError as exc:
                    self._fail_commit(i, exc)
                    return -1
                delta = result.result  # what it hands down
            elif result.__class__ is not dict or not result:
                if result is not None:  # a flag, a coroutine, a mapping: the general path
                    inputs[i] = (args, kwargs)
                    self.views[i] = view
                    self._after_inline(i, result, started)
                    return -1
                delta = None
            else:
                delta = result
                if not kept_delta(result):
                    try:
                        delta = checked_delta(result, keys[i], store)
                    except (TypeError, ValueTypeError) as exc:
                        self._fail(i, exc, started, 1, 0.0)
                        return -1
                if delta:
                    try:
                        store.write_many("state", delta, source=keys[i])
                    except WeftError as exc:
                        self._fail_commit(i, exc)
                        return -1
            if observer is not None:
                observer.finished(i, _CONTINUE, perf_counter() - started)
            finished[i] = True
            stores.frontier = i + 1
            results[i] = delta
            status[i] = DONE
            s = hops[i]  # the next state node, called with the same arguments
            if s < 0 or ready:
                s = schedule.chain[i]
                if s < 0 or ready or not stores.direct[s]:
                    inputs[i] = (args, kwargs)
                    self._release_all(i)
                    return -1
                code = schedule.codes[i]  # not NO: the arguments change
                if code == FIRST:
                    args = (delta, *args[1:]) if len(args) > 1 else (delta,)
                else:
                    try:
                        args, kwargs = pass_one(code, schedule.mode_args[i], delta, (args, kwargs))
                    except Exception as exc:
                        self._fail_pass_down(i, s, exc)
                        return -1
                bare = not args and not kwargs
            remaining[s] = 0
            i = s

    def _after_inline(
        self, i: int, result: Any, started: float = 0.0
    ) -> tuple[int, Coroutine[Any, Any, Any], float] | None:
        """Leave an inline loop with a result it does not handle (a flag, a coroutine)."""
        if result is _FAILED_CALL:
            return None
        if result.__class__ is _CORO:
            if not self.driven:
                return i, result, started
            try:
                result = run_sync(result)
            except (Exception, Interrupt) as exc:
                self._fail(i, exc, started, 1, 0.0)
                return None
        self._complete(i, result, started, 0.0)
        return None

    def _retry_inline(
        self, i: int, args: tuple[Any, ...], kwargs: dict[str, Any], exc: Exception, started: float
    ) -> Any:
        retry = self.schedule.retries[i]
        attempt = 1
        while retry is not None and attempt < retry.attempts and isinstance(exc, retry.retry_on):
            attempt += 1  # inline nodes have no backoff: nothing to wait for
            self._rewind(i)
            try:
                return self.schedule.fns[i](*args, **kwargs)
            except Exception as again:
                exc = again
            except Interrupt as pause:
                self._fail(i, pause, started, 1, 0.0)
                return _FAILED_CALL
        self._fail(i, exc, started, attempt, 0.0)
        return _FAILED_CALL

    async def _settle_awaitable(
        self, i: int, coro: Coroutine[Any, Any, Any], started: float
    ) -> None:
        try:
            result = await coro
        except (Exception, Interrupt) as exc:
            self._fail(i, exc, started, 1, 0.0)
            return
        self._complete(i, result, started, 0.0)

    async def _run_direct(self, i: int) -> None:
        args, kwargs = self._call_args(i)
        started = self._started(i)
        try:
            ok, value, attempts = await self._attempts(i, args, kwargs)
        except Interrupt as pause:
            ok, value, attempts = False, pause, 1
        if ok:
            self._complete(i, value, started, 0.0)
        else:
            self._fail(i, value, started, attempts, 0.0)
