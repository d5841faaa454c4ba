"""The PostgreSQL backend: psycopg 3 with a connection pool, in one schema of its own.

weft creates its schema (``weft`` by default) and tables itself, through the numbered
migrations of ``weft.persist.migrations``, applied under an advisory lock so that
several processes may start at once. psycopg is imported when a backend is made, so
``import weft`` never needs it (``pip install 'weft[postgres]'``).

Appends are checked as SQLite's are (the thread's last step must be the one the writer
expected), here by ``UPDATE threads SET last_step = new WHERE thread_id = ... AND
last_step = expected``; the row lock makes a concurrent writer wait, then find the step
moved and get a ``ConflictError``. Every database failure is a ``StorageError`` naming
the server and schema; an unreachable server says how to start one.

>>> backend = PostgresBackend("postgresql://postgres@127.0.0.1:5432/weft_test")  # doctest: +SKIP
"""

from __future__ import annotations

import re
import weakref
from collections.abc import Iterator, Sequence
from contextlib import closing, contextmanager
from typing import TYPE_CHECKING, Any, Final

from weft.errors import PersistError, StorageError
from weft.persist import migrations
from weft.persist.base import EventRow, SnapshotRow, conflict
from weft.persist.sql import INSERT_EVENT, Mode, SQLBackend
from weft.store import TypeRegistry, registry

if TYPE_CHECKING:
    import psycopg
    from psycopg_pool import ConnectionPool

DEFAULT_CONNINFO: Final = "postgresql://postgres@127.0.0.1:5432/weft"
_SCHEMA: Final = re.compile(r"[a-z_][a-z0-9_]{0,62}")
_TABLES: Final = ("threads", "events", "snapshots", "memory", "memory_owners")


class PostgresPool:
    """A pool of connections to one schema of a PostgreSQL server (see the module
    docstring): what the event-log and the long-term memory backends of a schema have in
    common."""

    _WHAT: str
    _SCRIPTS: Sequence[str]
    _VERSIONS: str
    _pool: ConnectionPool[psycopg.Connection[Any]]

    def __init__(
        self,
        conninfo: str = DEFAULT_CONNINFO,
        *,
        schema: str = "weft",
        min_size: int = 1,
        max_size: int = 4,
        timeout: float = 10.0,
        types: TypeRegistry = registry,
    ) -> None:
        if not isinstance(schema, str) or not _SCHEMA.fullmatch(schema):
            raise PersistError(
                f"schema={schema!r}: expected a lower-case SQL name such as 'weft' (letters, "
                "digits and _, not starting with a digit)"
            )
        try:
            import psycopg
            from psycopg_pool import ConnectionPool, PoolTimeout
        except ImportError as exc:
            raise StorageError(
                f"{type(self).__name__} needs psycopg 3 and psycopg_pool: "
                "pip install 'weft[postgres]'"
            ) from exc
        self.types = types
        self.conninfo = conninfo
        self.schema = schema
        self._where = _describe(conninfo, schema)
        self._tables = {name: f'"{schema}".{name}' for name in (*_TABLES, self._VERSIONS)}
        self._errors: tuple[type[Exception], ...] = (psycopg.Error,)
        self._pool = ConnectionPool(
            conninfo, min_size=min_size, max_size=max_size, timeout=timeout, open=False
        )
        try:
            try:
                self._pool.open(wait=True, timeout=timeout)
            except PoolTimeout as exc:
                raise StorageError(
                    f"PostgreSQL {self._where}: no connection within {timeout:g}s for the "
                    f"{self._WHAT}. Is the server running and the database created? Start it "
                    "(e.g. `pg_ctlcluster 15 main start`; CI's .ci/run does this), create the "
                    "database (`createdb -h 127.0.0.1 -U postgres weft_test`), and check the "
                    "conninfo"
                ) from exc
            self._migrate()
        except BaseException:
            self._pool.close()
            raise
        self._finalizer = weakref.finalize(self, self._pool.close)

    def _migrate(self) -> None:
        """Apply the migrations ``_SCRIPTS`` not applied yet, counted in the table
        ``_VERSIONS``, under the schema's lock (the event log and memory share it, so
        neither races the other to create the schema)."""
        scripts, versions = self._SCRIPTS, self._tables[self._VERSIONS]
        with self._db(f"creating or upgrading the {self._WHAT} tables") as conn:
            conn.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", (f"weft:{self.schema}",))
            conn.execute(f'CREATE SCHEMA IF NOT EXISTS "{self.schema}"')
            conn.execute(
                f"CREATE TABLE IF NOT EXISTS {versions} (version integer PRIMARY KEY, "
                "applied_at timestamptz NOT NULL DEFAULT now())"
            )
            row = conn.execute(f"SELECT coalesce(max(version), 0) FROM {versions}").fetchone()
            version = 0 if row is None else int(row[0])
            migrations.check_version(f"PostgreSQL {self._where}", self._WHAT, version, len(scripts))
            for number in range(version + 1, len(scripts) + 1):
                conn.execute(scripts[number - 1].format(schema=f'"{self.schema}"').encode())
                conn.execute(f"INSERT INTO {versions} (version) VALUES (%s)", (number,))

    @property
    def location(self) -> str:
        return self._where

    def close(self) -> None:
        self._finalizer()

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self._where}>"

    def _sql(self, statement: str) -> str:
        return statement.format_map(self._tables).replace("?", "%s")

    @contextmanager
    def _db(self, what: str, mode: Mode = "read") -> Iterator[psycopg.Connection[Any]]:
        """A pooled connection in a transaction (committed on success)."""
        try:
            with self._pool.connection() as conn:
                if mode == "snapshot":
                    conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY")
                yield conn
        except self._errors as exc:
            raise StorageError(f"PostgreSQL {self._where}: {what} failed: {exc}") from exc


class PostgresBackend(PostgresPool, SQLBackend):
    """Threads in a PostgreSQL schema (see the module docstring)."""

    _WHAT = "event log"
    _SCRIPTS = migrations.POSTGRES
    _VERSIONS = "schema_migrations"

    _THREADS = (
        "SELECT thread_id, last_step, first_step, created_at, updated_at, parent_thread, "
        "parent_step FROM {threads} AS t"
    )
    _NEW_THREAD = (
        "INSERT INTO {threads} (thread_id, last_step, first_step, created_at, updated_at, "
        "parent_thread, parent_step) VALUES (%(t)s, %(last)s, %(first)s, %(now)s, %(now)s, "
        "%(pt)s, %(ps)s) ON CONFLICT (thread_id) DO NOTHING"
    )

    def _append_rows(
        self,
        thread_id: str,
        run_id: str,
        expected: int,
        rows: Sequence[EventRow],
        snapshot: SnapshotRow | None,
        keep_snapshots: int,
        now: float,
    ) -> None:
        last = rows[-1][0]
        with self._db(f"appending to thread {thread_id!r}") as conn:
            moved = conn.execute(
                self._sql(
                    "UPDATE {threads} SET last_step = ?, updated_at = ? "
                    "WHERE thread_id = ? AND last_step = ?"
                ),
                (last, now, thread_id, expected),
            ).rowcount
            if not moved:
                args = {
                    "t": thread_id,
                    "first": 0,
                    "last": last,
                    "now": now,
                    "pt": None,
                    "ps": None,
                }
                if expected != 0 or not conn.execute(self._sql(self._NEW_THREAD), args).rowcount:
                    sql = self._sql("SELECT last_step FROM {threads} WHERE thread_id = ?")
                    row = conn.execute(sql, (thread_id,)).fetchone()
                    raise conflict(thread_id, expected, 0 if row is None else int(row[0]))
            with closing(conn.cursor()) as cur:
                cur.executemany(self._sql(INSERT_EVENT), [(thread_id, *row) for row in rows])
            if snapshot is not None:
                self._store_snapshot(conn, thread_id, snapshot, keep_snapshots)


def _describe(conninfo: str, schema: str) -> str:
    """The server, database and schema, for messages (never the password)."""
    try:
        from psycopg.conninfo import conninfo_to_dict

        parts = conninfo_to_dict(conninfo)
    except Exception:
        return f"(conninfo not shown) schema {schema!r}"
    host, port, db = parts.get("host", "localhost"), parts.get("port", 5432), parts.get("dbname")
    return f"{host}:{port}/{db or '?'} schema {schema!r}"
