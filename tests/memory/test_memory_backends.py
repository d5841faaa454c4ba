"""Memory backends beside the event log: one database, tables of their own, old files kept.

``memory_backend(backend)`` gives the memory backend in an event-log backend's database;
the memory tables are created and migrated by the memory backends, never by
``weft.persist``; and a database made when ``weft.persist`` still created the memory
tables opens with its rows, full-text index and vectors intact (on SQLite and on the
PostgreSQL server at 127.0.0.1, which must be up: a test fails, never skips).
"""

from __future__ import annotations

import doctest
import sqlite3
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from test_long_term import PG

import weft.memory.backends.in_memory
import weft.memory.backends.shared
import weft.memory.backends.sqlite
from weft.errors import FutureFormatError, PersistError, StorageError
from weft.memory import (
    InMemoryMemoryBackend,
    LongTermMemory,
    Owner,
    PostgresMemoryBackend,
    SQLiteMemoryBackend,
    memory_backend,
)
from weft.memory.backends.base import pack_vector
from weft.persist import (
    Backend,
    DurableRun,
    InMemoryBackend,
    PostgresBackend,
    SQLiteBackend,
    load_store,
)
from weft.persist.codec import encode_event, encode_value
from weft.store import Event, registry

ADA = Owner(user_id="ada")


@pytest.fixture
def schema() -> Iterator[str]:
    """A fresh PostgreSQL schema name, dropped after the test."""
    name = f"t_{uuid.uuid4().hex[:12]}"
    yield name
    with psycopg.connect(PG, autocommit=True) as conn:
        conn.execute(f'DROP SCHEMA IF EXISTS "{name}" CASCADE')


def tables(path: Path) -> set[str]:
    with sqlite3.connect(path) as conn:
        rows = conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'").fetchall()
    conn.close()
    return {row[0] for row in rows}


def pg_tables(schema: str) -> set[str]:
    with psycopg.connect(PG) as conn:
        rows = conn.execute(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = %s", (schema,)
        ).fetchall()
    return {row[0] for row in rows}


# ------------------------------------------------------------ memory_backend()


def test_a_memory_backend_is_taken_as_it_is() -> None:
    rows = InMemoryMemoryBackend()
    assert memory_backend(rows) is rows
    assert LongTermMemory(rows, owner=ADA).backend is rows


def test_memory_rows_live_as_long_as_the_in_memory_backend_object() -> None:
    backend = InMemoryBackend()
    LongTermMemory(backend, owner=ADA).put("prefs", "tone", "brief")
    assert memory_backend(backend) is memory_backend(backend)
    assert LongTermMemory(backend, owner=ADA).get_value("prefs", "tone") == "brief"
    assert LongTermMemory(InMemoryBackend(), owner=ADA).get("prefs", "tone") is None


def test_sqlite_memory_lives_in_the_event_logs_file(tmp_path: Path) -> None:
    path = tmp_path / "weft.db"
    LongTermMemory(SQLiteBackend(path), owner=ADA).put("prefs", "tone", "brief")
    with SQLiteBackend(path) as backend, DurableRun.open(backend, "chat") as run:
        run.store.write("state", "topic", "otters")
    assert {"weft_events", "weft_memory", "weft_memory_fts"} <= tables(path)
    with SQLiteMemoryBackend(path) as rows:  # the same file, opened on its own
        assert LongTermMemory(rows, owner=ADA).get_value("prefs", "tone") == "brief"
    with SQLiteBackend(path) as backend:
        assert load_store(backend, "chat").value("state", "topic") == "otters"
        assert LongTermMemory(backend, owner=ADA).get_value("prefs", "tone") == "brief"


def test_sqlite_memory_follows_the_event_logs_synchronous_setting(tmp_path: Path) -> None:
    with SQLiteBackend(tmp_path / "w.db", synchronous="FULL") as backend:
        rows = memory_backend(backend)
        assert isinstance(rows, SQLiteMemoryBackend)
        assert rows.path == backend.path
        with rows._guard("test") as conn:
            assert conn.execute("PRAGMA synchronous").fetchone()[0] == 2  # FULL
        rows.close()


def test_the_event_log_and_memory_write_the_file_at_once(tmp_path: Path) -> None:
    path = tmp_path / "weft.db"
    errors: list[BaseException] = []
    with SQLiteBackend(path) as backend:
        memory = LongTermMemory(backend, owner=ADA)

        def log() -> None:
            try:
                with DurableRun.open(backend, "chat") as run:
                    for i in range(200):
                        run.store.write("state", f"k{i}", i)
            except BaseException as exc:
                errors.append(exc)

        writer = threading.Thread(target=log)
        writer.start()
        for i in range(200):
            memory.put("notes", f"n{i}", f"note {i}")
        writer.join()
        assert errors == []
        assert backend.last_step("chat") == 200
        assert len(memory.list("notes")) == 200


def test_postgres_memory_lives_in_the_event_logs_schema(schema: str) -> None:
    with PostgresBackend(PG, schema=schema, timeout=5) as backend:
        memory = LongTermMemory(backend, owner=ADA)
        memory.put("prefs", "tone", "brief")
        assert memory.recall("brief").values() == ["brief"]
        memory.backend.close()
    assert {"threads", "events", "memory", "memory_migrations"} <= pg_tables(schema)
    with PostgresMemoryBackend(PG, schema=schema, timeout=5) as rows:
        assert LongTermMemory(rows, owner=ADA).get_value("prefs", "tone") == "brief"


def test_an_event_log_backend_weft_has_no_memory_for_is_a_clear_error() -> None:
    class LogOnly(Backend):
        pass

    LogOnly.__abstractmethods__ = frozenset()  # an event log of your own, never used here
    with pytest.raises(PersistError, match=r"LogOnly keeps event logs only.*MemoryBackend"):
        LongTermMemory(LogOnly(), owner=ADA)
    with pytest.raises(PersistError, match=r"got dict; pass a weft.persist backend"):
        LongTermMemory({}, owner=ADA)  # type: ignore[arg-type]


def test_a_closed_memory_backend_is_a_storage_error_naming_the_file(tmp_path: Path) -> None:
    rows = SQLiteMemoryBackend(tmp_path / "weft.db")
    rows.close()
    with pytest.raises(StorageError, match=rf"{tmp_path / 'weft.db'}.*closed.*open a new one"):
        LongTermMemory(rows, owner=ADA).list()


# ------------------------------------------------------------------- schemas


def test_persist_creates_no_memory_tables(tmp_path: Path, schema: str) -> None:
    SQLiteBackend(tmp_path / "weft.db").close()
    assert tables(tmp_path / "weft.db") == {"weft_threads", "weft_events", "weft_snapshots"}
    PostgresBackend(PG, schema=schema, timeout=5).close()
    assert pg_tables(schema) == {"threads", "events", "snapshots", "schema_migrations"}


def test_the_memory_backend_makes_its_tables_once(tmp_path: Path) -> None:
    path = tmp_path / "weft.db"
    for _ in range(2):
        SQLiteMemoryBackend(path).close()
    assert {
        "weft_memory",
        "weft_memory_fts",
        "weft_memory_migrations",
        "weft_memory_owners",
    } <= tables(path)
    with sqlite3.connect(path) as conn:
        assert conn.execute("SELECT version FROM weft_memory_migrations").fetchall() == [(1,), (2,)]
        assert conn.execute("PRAGMA user_version").fetchone()[0] == 0  # the event log's number
    conn.close()


def test_memory_tables_from_a_newer_weft_are_refused_unchanged(tmp_path: Path) -> None:
    path = tmp_path / "weft.db"
    SQLiteMemoryBackend(path).close()
    with sqlite3.connect(path) as conn:
        conn.execute("INSERT INTO weft_memory_migrations VALUES (99, 0)")
    conn.close()
    before = path.read_bytes()
    with pytest.raises(FutureFormatError, match=r"memory schema version 99.*up to 2.*Upgrade"):
        SQLiteMemoryBackend(path)
    assert path.read_bytes() == before


# -------------------------------------------- databases made before the split

# What weft.persist's first migration made before memory had backends of its own,
# verbatim: the event log and the memory tables in one script.
OLD_SQLITE = """
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
"""

OLD_POSTGRES = """
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
"""

EVENT = Event(1, "write", "state", "topic", "otters", None, "replace", 1.0)
VECTOR = [0.5, -0.25, 1.0]


def old_row(key: str, value: Any, text: str) -> tuple[Any, ...]:
    """A memory row as the old code wrote it, with a vector from model ``m``."""
    record = encode_value(value, registry)
    return ("user:ada", "notes", key, record, text, 10.0, 10.0, None, "m", pack_vector(VECTOR))


OLD_ROWS = [
    old_row("boss", {"mood": "tense"}, "my boss is terrible"),
    old_row("dog", "walks at dawn", "the dog needs a walk"),
]


def check_adopted(memory: LongTermMemory) -> None:
    """The old rows, their full-text index and vectors answer, and new rows join them."""
    assert memory.get_value("notes", "boss") == {"mood": "tense"}
    assert [r.key for r in memory.list("notes")] == ["boss", "dog"]
    assert [hit.record.key for hit in memory.recall("terrible boss").hits] == ["boss"]
    assert memory.backend.unembedded(memory.owner, "m", now=20.0) == []  # vectors kept
    kept = memory.backend.nearest(memory.owner, "m", VECTOR, limit=5, now=20.0)
    assert [(record.key, round(similarity, 6)) for record, similarity in kept] == [
        ("boss", 1.0),
        ("dog", 1.0),
    ]
    memory.put("notes", "tea", "green tea in the morning")
    assert [hit.record.key for hit in memory.recall("tea").hits] == ["tea"]


def test_an_sqlite_file_from_before_the_split_keeps_its_memory(tmp_path: Path) -> None:
    path = tmp_path / "weft.db"
    with sqlite3.connect(path) as conn:
        conn.executescript(OLD_SQLITE)
        conn.execute("PRAGMA user_version = 1")
        conn.execute("INSERT INTO weft_threads (thread_id, created_at) VALUES ('chat', 1.0)")
        conn.execute(
            "INSERT INTO weft_events VALUES ('chat', 1, 'r1', ?)", (encode_event(EVENT, registry),)
        )
        conn.executemany("INSERT INTO weft_memory VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", OLD_ROWS)
    conn.close()
    with SQLiteBackend(path) as backend:
        assert load_store(backend, "chat").value("state", "topic") == "otters"
        check_adopted(LongTermMemory(backend, owner=ADA))
    with SQLiteBackend(path) as backend:  # opened again: nothing is created twice
        memory = LongTermMemory(backend, owner=ADA)
        assert [r.key for r in memory.list("notes")] == ["tea", "boss", "dog"]


def test_a_postgres_schema_from_before_the_split_keeps_its_memory(schema: str) -> None:
    quoted = f'"{schema}"'
    with psycopg.connect(PG) as conn:
        conn.execute(f"CREATE SCHEMA {quoted}")
        conn.execute(
            f"CREATE TABLE {quoted}.schema_migrations (version integer PRIMARY KEY, "
            "applied_at timestamptz NOT NULL DEFAULT now())"
        )
        conn.execute(OLD_POSTGRES.format(schema=quoted).encode())
        conn.execute(f"INSERT INTO {quoted}.schema_migrations (version) VALUES (1)")
        conn.execute(f"INSERT INTO {quoted}.threads VALUES ('chat', 1, 0, 1.0, 1.0, NULL, NULL)")
        conn.execute(
            f"INSERT INTO {quoted}.events VALUES ('chat', 1, 'r1', %s)",
            (encode_event(EVENT, registry),),
        )
        with conn.cursor() as cur:
            cur.executemany(
                f"INSERT INTO {quoted}.memory (owner, namespace, key, record, text, created_at, "
                "updated_at, expires_at, vector_model, vector) "
                "VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s)",
                OLD_ROWS,
            )
    with PostgresBackend(PG, schema=schema, timeout=5) as backend:
        assert load_store(backend, "chat").value("state", "topic") == "otters"
        memory = LongTermMemory(backend, owner=ADA)
        check_adopted(memory)
        memory.backend.close()


def test_the_docstring_examples_run() -> None:
    for module in (
        weft.memory.backends.in_memory,
        weft.memory.backends.shared,
        weft.memory.backends.sqlite,
    ):
        assert doctest.testmod(module).failed == 0, module.__name__
