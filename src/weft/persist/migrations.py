"""weft's own database schema, as numbered migrations (never edited once released).

SQLite keeps the applied number in ``PRAGMA user_version``; its threads table has no
``last_step``: a thread's last step is its newest event's (or its ``first_step``), read
inside the write transaction, so an append touches the events table only (and the thread's
``writer`` when another backend appended last: migration 3), whose rows are numbered
``(thread number << 32) + step`` (migration 2); PostgreSQL in the table
``<schema>.schema_migrations`` (one row per applied migration), inside one schema
(``weft`` by default). A database whose number is higher than the newest migration here
was made by a newer weft: opening it is a ``FutureFormatError``, and nothing is changed.

These are the event log's tables only; long-term memory creates and migrates its own
(``weft.memory.backends.migrations``). Databases made before that split got the memory
tables from migration 1 here, and keep them: the memory backends adopt them.
"""

from __future__ import annotations

from typing import Final

from weft.errors import FutureFormatError

SQLITE: Final[tuple[str, ...]] = (
    # 1: event log and snapshots
    """
    CREATE TABLE weft_threads (
        thread_id TEXT PRIMARY KEY,
        first_step INTEGER NOT NULL DEFAULT 0,
        created_at REAL NOT NULL,
        parent_thread TEXT,
        parent_step INTEGER
    );
    CREATE TABLE weft_events (
        thread_id TEXT NOT NULL,
        step INTEGER NOT NULL,
        run_id TEXT NOT NULL,
        record TEXT NOT NULL,
        PRIMARY KEY (thread_id, step)
    ) WITHOUT ROWID;
    CREATE TABLE weft_snapshots (
        thread_id TEXT NOT NULL,
        step INTEGER NOT NULL,
        record TEXT NOT NULL,
        PRIMARY KEY (thread_id, step)
    );
    """,
    # 2: a thread gets a number, and its events are the rows numbered (number << 32) + step
    # of a rowid table: the events of a burst of appends (a run's nodes) go to the end of
    # the table's B-tree, one page per commit. Keyed by (thread_id, step) in a WITHOUT
    # ROWID table they went into the middle, where each full page is rebalanced with its
    # siblings (2.4-2.9 WAL pages a commit against 1.3; a durable node's commit 2-3x as
    # long at synchronous=NORMAL, measured in bench/bench_persist.py).
    """
    CREATE TABLE weft_threads_2 (
        num INTEGER PRIMARY KEY,
        thread_id TEXT NOT NULL UNIQUE,
        first_step INTEGER NOT NULL DEFAULT 0,
        created_at REAL NOT NULL,
        parent_thread TEXT,
        parent_step INTEGER
    );
    INSERT INTO weft_threads_2 (thread_id, first_step, created_at, parent_thread, parent_step)
        SELECT thread_id, first_step, created_at, parent_thread, parent_step
        FROM weft_threads ORDER BY created_at, thread_id;
    CREATE TABLE weft_events_2 (
        seq INTEGER PRIMARY KEY,
        run_id TEXT NOT NULL,
        record TEXT NOT NULL
    );
    INSERT INTO weft_events_2 (seq, run_id, record)
        SELECT (t.num << 32) + e.step, e.run_id, e.record
        FROM weft_events AS e JOIN weft_threads_2 AS t USING (thread_id) ORDER BY 1;
    DROP TABLE weft_events;
    DROP TABLE weft_threads;
    ALTER TABLE weft_threads_2 RENAME TO weft_threads;
    ALTER TABLE weft_events_2 RENAME TO weft_events;
    """,
    # 3: the backend that appended last to a thread (a random number per backend object):
    # while a thread names it, no other connection has appended since, so its next append
    # checks this one row instead of reading the thread's newest event, which an INSERT
    # into the events table can only do after copying the rows it reads (~7 us a commit
    # less than checking SQLite's data_version, which any commit to the file moved).
    """
    ALTER TABLE weft_threads ADD COLUMN writer INTEGER;
    """,
)
"""SQLite migrations; migration ``n`` is ``SQLITE[n - 1]``."""

POSTGRES: Final[tuple[str, ...]] = (
    # 1: event log and snapshots
    """
    CREATE TABLE {schema}.threads (
        thread_id text PRIMARY KEY,
        last_step bigint NOT NULL,
        first_step bigint NOT NULL DEFAULT 0,
        created_at double precision NOT NULL,
        updated_at double precision NOT NULL,
        parent_thread text,
        parent_step bigint
    );
    CREATE TABLE {schema}.events (
        thread_id text NOT NULL,
        step bigint NOT NULL,
        run_id text NOT NULL,
        record text NOT NULL,
        PRIMARY KEY (thread_id, step)
    );
    CREATE TABLE {schema}.snapshots (
        thread_id text NOT NULL,
        step bigint NOT NULL,
        record text NOT NULL,
        PRIMARY KEY (thread_id, step)
    );
    """,
)
"""PostgreSQL migrations (``{schema}`` is filled in); migration ``n`` is ``POSTGRES[n - 1]``."""


def check_version(where: str, what: str, version: int, newest: int) -> None:
    """Refuse a database whose ``what`` schema a newer weft made (``FutureFormatError``)."""
    if version > newest:
        raise FutureFormatError(
            f"{where} has {what} schema version {version}, but this weft knows versions up to "
            f"{newest}: a newer weft made it. Upgrade weft to open it; nothing was changed"
        )
