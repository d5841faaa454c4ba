"""The one sync-over-async bridge: every layer's blocking API wraps its async core with it.

``run_sync`` reuses this thread's cached event loop (creating one costs ~100 us, reusing
~9 us); called from a thread that already runs a loop (a sync node in an async app), it
runs the coroutine on a helper thread and blocks, which keeps nested graphs working.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import contextvars
import threading
import weakref
from collections.abc import Coroutine
from typing import Any, Final, TypeVar

T = TypeVar("T")

_LOOPS: Final[weakref.WeakSet[asyncio.AbstractEventLoop]] = weakref.WeakSet()


class _Holder:
    """Owns one thread's cached loop; the loop closes when its thread ends."""

    __slots__ = ("loop",)

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        _LOOPS.add(self.loop)

    def __del__(self) -> None:
        _close(self.loop)


class _Local(threading.local):
    holder: _Holder | None = None


_local: Final = _Local()


def _close(loop: asyncio.AbstractEventLoop) -> None:
    if not loop.is_closed() and not loop.is_running():
        loop.close()


@atexit.register
def _close_all() -> None:
    for loop in list(_LOOPS):
        _close(loop)


def thread_loop() -> asyncio.AbstractEventLoop:
    """This thread's cached event loop (created on first use)."""
    holder = _local.holder
    if holder is None or holder.loop.is_closed():
        holder = _local.holder = _Holder()
    return holder.loop


def run_sync(coro: Coroutine[Any, Any, T]) -> T:
    """Run ``coro`` to completion from sync code and return its result."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        loop = thread_loop()
        task = loop.create_task(coro)
        try:
            return loop.run_until_complete(task)
        except BaseException:
            if not task.done():  # interrupted (KeyboardInterrupt): do not leave it pending
                task.cancel()
                with contextlib.suppress(BaseException):  # its CancelledError, or its error
                    loop.run_until_complete(task)
            raise
    return _on_helper_thread(coro)


def _on_helper_thread(coro: Coroutine[Any, Any, T]) -> T:
    box: list[Any] = []

    def target() -> None:
        try:
            box.append((True, run_sync(coro)))
        except BaseException as exc:
            box.append((False, exc))

    # the caller's context goes along (as asyncio.to_thread does): what it runs inside of
    # (a watched unit, a pausable one) is the same whether it is awaited or run here
    context = contextvars.copy_context()
    thread = threading.Thread(target=context.run, args=(target,), name="weft-sync", daemon=True)
    thread.start()
    thread.join()
    ok, value = box[0]
    if ok:
        result: T = value
        return result
    raise value


def drive(coro: Coroutine[Any, Any, T]) -> T:
    """Run a coroutine that never awaits anything pending with no event loop (the engine's
    graphs with no async node and no timeout)."""
    try:
        coro.send(None)
    except StopIteration as stop:
        value: T = stop.value
        return value
    coro.close()
    raise RuntimeError(
        "weft internal error: a run planned without an event loop tried to wait; "
        "please report it, and use 'await graph.arun()' meanwhile"
    )
