"""weft's own database schema, as numbered migrations (never edited once released).

SQLite keeps the applied number in ``PRAGMA user_version``; its threads table has no
``last_step``: a thread's last step is its newest event's (or its ``first_step``), read
inside the write transaction, so an append touches the events table only; PostgreSQL in the table
``<schema>.schema_migrations`` (one row per applied migration), inside one schema
(``weft`` by default). A database whose number is higher than the newest migration here
was made by a newer weft: opening it is a ``FutureFormatError``, and nothing is changed.
"""

from __future__ import annotations

from typing import Final

SQLITE: Final[tuple[str, ...]] = (
    # 1: event log, snapshots, long-term memory with FTS5 token recall
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
    CREATE TABLE weft_memory (
        owner TEXT NOT NULL,
        namespace TEXT NOT NULL,
        key TEXT NOT NULL,
        record TEXT NOT NULL,
        text TEXT NOT NULL,
        created_at REAL NOT NULL,
        updated_at REAL NOT NULL,
        expires_at REAL,
        vector_model TEXT,
        vector BLOB,
        PRIMARY KEY (owner, namespace, key)
    );
    CREATE INDEX weft_memory_expiry ON weft_memory (owner, expires_at)
        WHERE expires_at IS NOT NULL;
    CREATE VIRTUAL TABLE weft_memory_fts USING fts5(
        text, content='weft_memory', content_rowid='rowid', tokenize='porter unicode61'
    );
    CREATE TRIGGER weft_memory_ai AFTER INSERT ON weft_memory BEGIN
        INSERT INTO weft_memory_fts (rowid, text) VALUES (new.rowid, new.text);
    END;
    CREATE TRIGGER weft_memory_ad AFTER DELETE ON weft_memory BEGIN
        INSERT INTO weft_memory_fts (weft_memory_fts, rowid, text)
            VALUES ('delete', old.rowid, old.text);
    END;
    CREATE TRIGGER weft_memory_au AFTER UPDATE OF text ON weft_memory BEGIN
        INSERT INTO weft_memory_fts (weft_memory_fts, rowid, text)
            VALUES ('delete', old.rowid, old.text);
        INSERT INTO weft_memory_fts (rowid, text) VALUES (new.rowid, new.text);
    END;
    """,
)
"""SQLite migrations; migration ``n`` is ``SQLITE[n - 1]``."""

POSTGRES: Final[tuple[str, ...]] = (
    # 1: event log, snapshots, long-term memory with full-text token recall
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
    CREATE TABLE {schema}.memory (
        owner text NOT NULL,
        namespace text NOT NULL,
        key text NOT NULL,
        record text NOT NULL,
        text text NOT NULL,
        tsv tsvector GENERATED ALWAYS AS (to_tsvector('english', text)) STORED,
        created_at double precision NOT NULL,
        updated_at double precision NOT NULL,
        expires_at double precision,
        vector_model text,
        vector bytea,
        PRIMARY KEY (owner, namespace, key)
    );
    CREATE INDEX memory_tsv ON {schema}.memory USING gin (tsv);
    CREATE INDEX memory_expiry ON {schema}.memory (owner, expires_at)
        WHERE expires_at IS NOT NULL;
    """,
)
"""PostgreSQL migrations (``{schema}`` is filled in); migration ``n`` is ``POSTGRES[n - 1]``."""
