"""Fixtures shared by the memory tests."""

from __future__ import annotations

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
