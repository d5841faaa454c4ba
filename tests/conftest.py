"""The whole suite: make sure the PostgreSQL test database exists, so that the README's
test command works on a machine where nothing was set up but a running server.

If the server is unreachable nothing happens here: the PostgreSQL tests then fail with a
message saying how to start it (they are never skipped).
"""

from __future__ import annotations

import contextlib

import pytest

ADMIN_DSN = "postgresql://postgres@127.0.0.1:5432/postgres"
TEST_DATABASE = "weft_test"


def pytest_sessionstart(session: pytest.Session) -> None:
    try:
        import psycopg
    except ImportError:
        return
    with (
        contextlib.suppress(psycopg.OperationalError),
        psycopg.connect(ADMIN_DSN, autocommit=True, connect_timeout=3) as conn,
    ):
        found = conn.execute(
            "SELECT 1 FROM pg_database WHERE datname = %s", (TEST_DATABASE,)
        ).fetchone()
        if found is None:
            conn.execute(f'CREATE DATABASE "{TEST_DATABASE}"')
