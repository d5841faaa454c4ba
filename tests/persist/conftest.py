"""Backends for the persist tests: the same suite runs on memory, SQLite and PostgreSQL.

The PostgreSQL tests talk to the real server on 127.0.0.1:5432 (database ``weft_test``),
each in a schema of its own that is dropped afterwards, so reruns start clean. A server
that cannot be reached fails the test with how to start it: it is never skipped.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from weft.errors import StorageError
from weft.persist import Backend, InMemoryBackend, PostgresBackend, SQLiteBackend

PG = "postgresql://postgres@127.0.0.1:5432/weft_test"
BACKENDS = ["memory", "sqlite", "postgres"]

Factory = Callable[[], Backend]


def postgres(schema: str, **options: object) -> PostgresBackend:
    try:
        return PostgresBackend(PG, schema=schema, timeout=5, **options)  # type: ignore[arg-type]
    except StorageError as exc:
        pytest.fail(
            "the PostgreSQL backend tests need a server on 127.0.0.1:5432 with a database "
            "weft_test (trust auth, user postgres); .ci/run starts one. Locally: "
            "`pg_ctlcluster 15 main start && createdb -h 127.0.0.1 -U postgres weft_test`. "
            f"The error: {exc}"
        )


def drop_schema(schema: str) -> None:
    import psycopg

    with psycopg.connect(PG, autocommit=True) as conn:
        conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


@pytest.fixture
def pg_schema() -> Iterator[str]:
    """A fresh schema name, dropped after the test."""
    schema = f"t_{uuid.uuid4().hex[:12]}"
    yield schema
    drop_schema(schema)


@pytest.fixture(params=BACKENDS)
def backend_kind(request: pytest.FixtureRequest) -> str:
    kind: str = request.param
    return kind


@pytest.fixture
def open_backend(
    backend_kind: str, tmp_path: Path, request: pytest.FixtureRequest
) -> Iterator[Factory]:
    """Opens the test's backend; every call opens it again on the same data (a restart),
    except in memory, where the one backend is returned each time."""
    opened: list[Backend] = []
    shared = InMemoryBackend()
    schema = f"t_{uuid.uuid4().hex[:12]}"

    def make() -> Backend:
        if backend_kind == "memory":
            return shared
        backend: Backend
        if backend_kind == "sqlite":
            backend = SQLiteBackend(tmp_path / "weft.db")
        else:
            backend = postgres(schema)
        opened.append(backend)
        return backend

    yield make
    for backend in opened:
        backend.close()
    if backend_kind == "postgres":
        drop_schema(schema)


@pytest.fixture
def backend(open_backend: Factory) -> Backend:
    return open_backend()
