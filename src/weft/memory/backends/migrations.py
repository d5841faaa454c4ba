"""The long-term memory schema, as numbered migrations of its own.

The memory tables live in the same database as the event log (the same SQLite file,
the same PostgreSQL schema) but are created and versioned by the memory backends,
never by ``weft.persist``: SQLite keeps the applied numbers in ``weft_memory_migrations``,
PostgreSQL in ``<schema>.memory_migrations``; a newer weft's database is refused unchanged.

Migration 1 creates its tables only if they are missing: databases made before memory
had backends of its own got the very same tables from the event log's first migration,
and the memory backend adopts them, rows and full-text index included.
"""

from __future__ import annotations

from typing import Final

SQLITE: Final[tuple[str, ...]] = (
    # 1: rows with FTS5 token recall, kept in step by triggers
    """
    CREATE TABLE IF NOT EXISTS weft_memory (
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
    CREATE INDEX IF NOT EXISTS weft_memory_expiry ON weft_memory (owner, expires_at)
        WHERE expires_at IS NOT NULL;
    CREATE VIRTUAL TABLE IF NOT EXISTS weft_memory_fts USING fts5(
        text, content='weft_memory', content_rowid='rowid', tokenize='porter unicode61'
    );
    CREATE TRIGGER IF NOT EXISTS weft_memory_ai AFTER INSERT ON weft_memory BEGIN
        INSERT INTO weft_memory_fts (rowid, text) VALUES (new.rowid, new.text);
    END;
    CREATE TRIGGER IF NOT EXISTS weft_memory_ad AFTER DELETE ON weft_memory BEGIN
        INSERT INTO weft_memory_fts (weft_memory_fts, rowid, text)
            VALUES ('delete', old.rowid, old.text);
    END;
    CREATE TRIGGER IF NOT EXISTS weft_memory_au AFTER UPDATE OF text ON weft_memory BEGIN
        INSERT INTO weft_memory_fts (weft_memory_fts, rowid, text)
            VALUES ('delete', old.rowid, old.text);
        INSERT INTO weft_memory_fts (rowid, text) VALUES (new.rowid, new.text);
    END;
    """,
    # 2: a version per owner, so that a process keeping the owner's vectors in memory
    # sees that another process wrote
    """
    CREATE TABLE IF NOT EXISTS weft_memory_owners (
        owner TEXT PRIMARY KEY,
        version INTEGER NOT NULL
    );
    """,
)
"""SQLite migrations; migration ``n`` is ``SQLITE[n - 1]``."""

POSTGRES: Final[tuple[str, ...]] = (
    # 1: rows with full-text token recall
    """
    CREATE TABLE IF NOT EXISTS {schema}.memory (
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
    CREATE INDEX IF NOT EXISTS memory_tsv ON {schema}.memory USING gin (tsv);
    CREATE INDEX IF NOT EXISTS memory_expiry ON {schema}.memory (owner, expires_at)
        WHERE expires_at IS NOT NULL;
    """,
    # 2: a version per owner (see the SQLite migration 2)
    """
    CREATE TABLE IF NOT EXISTS {schema}.memory_owners (
        owner text PRIMARY KEY,
        version bigint NOT NULL
    );
    """,
)
"""PostgreSQL migrations (``{schema}`` is filled in); migration ``n`` is ``POSTGRES[n - 1]``."""
