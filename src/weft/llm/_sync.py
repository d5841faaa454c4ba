"""Run one coroutine to completion from synchronous code: the thin sync wrapper's engine."""

from __future__ import annotations

import asyncio
import contextvars
from collections.abc import Coroutine
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

T = TypeVar("T")

# True while a coroutine runs on the private loop of run_sync. The HTTP layer
# reads it to open a client for that one call instead of binding its pooled
# client to a loop that is about to close.
in_sync_bridge: contextvars.ContextVar[bool] = contextvars.ContextVar(
    "weft_llm_in_sync_bridge", default=False
)


async def _bridged(coro: Coroutine[Any, Any, T]) -> T:
    in_sync_bridge.set(True)
    return await coro


def run_sync(coro: Coroutine[Any, Any, T]) -> T:
    """The result of ``coro``, from code that is not a coroutine.

    On a thread with no running event loop (a script, a worker thread) the
    coroutine runs on a fresh loop. On a thread whose loop is running (sync
    code called from inside async code) blocking here would deadlock that
    loop, so the coroutine runs on a fresh loop in a helper thread instead;
    the caller still blocks, which is what asking for the sync API means.
    """
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(_bridged(coro))
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="weft-llm-sync") as pool:
        return pool.submit(asyncio.run, _bridged(coro)).result()
