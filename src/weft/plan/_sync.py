"""The executors' thin sync wrappers: run the async core to completion."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

T = TypeVar("T")


def run_sync(coro: Coroutine[Any, Any, T]) -> T:
    """The result of ``coro`` from sync code: on a fresh loop, or, when this thread
    already runs a loop (sync code inside async code), on a helper thread's loop."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="weft-plan-sync") as pool:
        return pool.submit(asyncio.run, coro).result()
