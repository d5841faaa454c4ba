"""Backends for the persist tests: the same suite runs on memory, SQLite and PostgreSQL.

The PostgreSQL tests talk to the real server on 127.0.0.1:5432 (database ``weft_test``),
each in a schema of its own that is dropped afterwards, so reruns start clean. A server
that cannot be reached fails the test with how to start it: it is never skipped.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from persist_helpers import Factory, drop_schema, postgres

from weft.persist import Backend, InMemoryBackend, SQLiteBackend

BACKENDS = ["memory", "sqlite", "postgres"]


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
