"""Fixtures of the runtime tests: runtimes on a real SQLite file and on PostgreSQL.

The core turn tests run on both backends (``make``); the PostgreSQL backend is one per
session on a schema of ``weft_test`` of its own (dropped at the end), and tests isolate by
unique thread ids. A server that cannot be reached fails the tests; they never skip.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from runtime_helpers import ChatContext, ChatState, Make, drop_schema, postgres, reply, triage

from weft.persist import Backend, PostgresBackend, SQLiteBackend
from weft.runtime import TurnRuntime


@pytest.fixture(scope="session")
def pg_backend() -> Iterator[PostgresBackend]:
    backend = postgres()
    yield backend
    backend.close()
    drop_schema()


@pytest.fixture
def sqlite_backend(tmp_path: Path) -> Iterator[SQLiteBackend]:
    backend = SQLiteBackend(tmp_path / "weft.db")
    yield backend
    backend.close()


@pytest.fixture(params=["sqlite", "postgres"])
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Backend]:
    if request.param == "postgres":
        yield request.getfixturevalue("pg_backend")
        return
    backend = SQLiteBackend(tmp_path / "weft.db")
    yield backend
    backend.close()


@pytest.fixture
def tid() -> str:
    """A thread id no other test uses (the PostgreSQL schema is shared)."""
    return f"chat-{uuid.uuid4().hex[:12]}"


@pytest.fixture
def make(backend: Backend) -> Iterator[Make]:
    """Builds runtimes on the test's backend (ChatState, triage -> reply by default);
    every one is closed afterwards."""
    made: list[TurnRuntime] = []

    def build(*args: Any, **kwargs: Any) -> TurnRuntime:
        if not args:
            args = (ChatState, [triage, reply])
        kwargs.setdefault("context", ChatContext(facts=["likes tea"]))
        runtime = TurnRuntime(*args, backend, **kwargs)
        made.append(runtime)
        return runtime

    yield build
    for runtime in made:
        runtime.close()
