"""Long-term memory backends: in-memory, SQLite (FTS5 recall), PostgreSQL (full-text recall).

Each keeps its rows in the database of the matching ``weft.persist`` event-log backend,
in tables it creates and migrates itself; ``memory_backend(backend)`` gives the one for
an event-log backend. ``PostgresMemoryBackend`` imports psycopg only when made.
"""

from weft.memory.backends.base import MemoryBackend, MemoryRecord
from weft.memory.backends.in_memory import InMemoryMemoryBackend
from weft.memory.backends.postgres import PostgresMemoryBackend
from weft.memory.backends.shared import memory_backend
from weft.memory.backends.sqlite import SQLiteMemoryBackend

__all__ = [
    "InMemoryMemoryBackend",
    "MemoryBackend",
    "MemoryRecord",
    "PostgresMemoryBackend",
    "SQLiteMemoryBackend",
    "memory_backend",
]
