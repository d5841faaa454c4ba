"""Helpers of the graph tests: ``Mode``, one side of the sync/async parity."""

from __future__ import annotations

import asyncio
import functools
import time
from collections.abc import Callable
from typing import Any

from weft.graph import WorkGraph


class Mode:
    """How one parity run builds node values and runs the graph."""

    def __init__(self, name: str) -> None:
        self.name = name

    @property
    def is_async(self) -> bool:
        return self.name == "async"

    def fn(self, f: Callable[..., Any], *, sleep: float = 0.0) -> Callable[..., Any]:
        """``f`` as this mode's kind of node value (optionally sleeping first)."""
        if not self.is_async:
            if not sleep:
                return f

            @functools.wraps(f)
            def slow(*args: Any, **kwargs: Any) -> Any:
                time.sleep(sleep)
                return f(*args, **kwargs)

            return slow

        @functools.wraps(f)
        async def wrapper(*args: Any, **kwargs: Any) -> Any:
            await asyncio.sleep(sleep)
            return f(*args, **kwargs)

        return wrapper

    def run(self, graph: WorkGraph, *args: Any, **kwargs: Any) -> Any:
        if self.is_async:
            return asyncio.run(graph.arun(*args, **kwargs))
        return graph.run(*args, **kwargs)
