"""Durable backends for the event log: in-memory, SQLite, PostgreSQL.

The store's event log is the checkpoint: a run appends its events (deltas, not states)
to a backend as they happen, snapshots every N events keep loading fast, and any step
can be loaded again or forked. ``PostgresBackend`` imports psycopg only when made.
Long-term memory has backends of its own, in ``weft.memory``, on the same databases.
"""

from weft.persist.base import Backend, Checkpoint, LoggedEvent, RunInfo, ThreadInfo
from weft.persist.codec import FORMAT_VERSION
from weft.persist.memory import InMemoryBackend
from weft.persist.postgres import PostgresBackend
from weft.persist.runs import DurableRun, fork_thread, load_store
from weft.persist.snapshot import Snapshot
from weft.persist.sqlite import SQLiteBackend

__all__ = [
    "FORMAT_VERSION",
    "Backend",
    "Checkpoint",
    "DurableRun",
    "InMemoryBackend",
    "LoggedEvent",
    "PostgresBackend",
    "RunInfo",
    "SQLiteBackend",
    "Snapshot",
    "ThreadInfo",
    "fork_thread",
    "load_store",
]
