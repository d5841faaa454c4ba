"""Fixtures shared by the memory tests."""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest

from weft.memory import AgentMemory
from weft.store import Store


@pytest.fixture(scope="session")
def big_memory() -> AgentMemory:
    """100k step results, built once: for the checks that prefix listing uses the index."""
    store = Store()
    for i in range(100_000):
        store.write("step", f"n{i:06d}", i)
    return AgentMemory(store)


BestOf = Callable[[Callable[[], object]], float]


def _best_of(fn: Callable[[], object], runs: int = 30) -> float:
    best = float("inf")
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


@pytest.fixture
def best_of() -> BestOf:
    """Times a call: the fastest of 30 runs, in seconds (the least noisy estimate)."""
    return _best_of
