"""The in-memory backend: the test double, and a store for runs that need no disk.

It is the SQLite backend on a database of its own in this process's memory, so it keeps
the same records and follows the same rules (conflicts, snapshots, pruning) by the same
code; its threads live as long as the backend object does.

>>> from weft.persist import DurableRun, InMemoryBackend
>>> backend = InMemoryBackend()
>>> with DurableRun.open(backend, "chat-1") as run:
...     _ = run.store.write("state", "topic", "otters")
>>> backend.load("chat-1").to_store().value("state", "topic")
'otters'
"""

from __future__ import annotations

from weft.persist.sqlite import SQLiteBackend
from weft.store import TypeRegistry, registry


class InMemoryBackend(SQLiteBackend):
    """Threads in this process's memory (thread-safe)."""

    def __init__(self, *, types: TypeRegistry = registry) -> None:
        super().__init__(":memory:", types=types)

    @property
    def location(self) -> str:
        return "memory"

    def close(self) -> None:
        """Nothing to release: the threads live as long as this object."""
