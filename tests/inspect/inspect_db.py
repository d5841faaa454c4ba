"""Databases for the inspector's tests (a module of its own: ``conftest`` is ambiguous across
test folders): SQLite files and schemas of the real PostgreSQL server."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from pathlib import Path

import pytest

from weft.errors import StorageError
from weft.persist import Backend, PostgresBackend, SQLiteBackend

PG = "postgresql://postgres@127.0.0.1:5432/weft_test"
Opener = Callable[[], Backend]


def postgres(schema: str) -> PostgresBackend:
    try:
        return PostgresBackend(PG, schema=schema, timeout=5)
    except StorageError as exc:
        pytest.fail(
            "the inspector's PostgreSQL tests need a server on 127.0.0.1:5432 with a database "
            "weft_test (trust auth, user postgres); .ci/run starts one. Locally: "
            "`pg_ctlcluster 15 main start && createdb -h 127.0.0.1 -U postgres weft_test`. "
            f"The error: {exc}"
        )


def drop_schema(schema: str) -> None:
    import psycopg

    with psycopg.connect(PG, autocommit=True) as conn:
        conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


def opener(kind: str, folder: Path) -> tuple[Opener, Callable[[], None]]:
    """Opens a new connection to one database each call (as another process would), and
    the cleanup that closes them all and drops the database's schema."""
    opened: list[Backend] = []
    schema = f"t_{uuid.uuid4().hex[:12]}"

    def make() -> Backend:
        backend: Backend = (
            SQLiteBackend(folder / "weft.db") if kind == "sqlite" else postgres(schema)
        )
        opened.append(backend)
        return backend

    def cleanup() -> None:
        for backend in opened:
            backend.close()
        if kind == "postgres":
            drop_schema(schema)

    make.schema = schema  # type: ignore[attr-defined]
    return make, cleanup
