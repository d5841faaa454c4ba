"""Helpers for the persist tests (a module of its own: ``conftest`` is ambiguous across
test folders)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from weft.errors import StorageError
from weft.persist import Backend, PostgresBackend

PG = "postgresql://postgres@127.0.0.1:5432/weft_test"
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
