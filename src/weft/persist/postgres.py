"""The PostgreSQL backend: psycopg 3 with a connection pool, in one schema of its own.

weft creates its schema (``weft`` by default) and tables itself, through the numbered
migrations of ``weft.persist.migrations``, applied under an advisory lock so that
several processes may start at once. psycopg is imported when a backend is made, so
``import weft`` never needs it (``pip install 'weft[postgres]'``).

Appends use the same optimistic check as SQLite: ``UPDATE threads SET last_step = new
WHERE thread_id = ... AND last_step = expected``; the row lock makes a concurrent writer
wait, then find the step moved and get a ``ConflictError``. Every database failure is a
``StorageError`` naming the server and schema; an unreachable server says how to start
one.

>>> backend = PostgresBackend("postgresql://postgres@127.0.0.1:5432/weft_test")  # doctest: +SKIP
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Final

from weft.errors import FutureFormatError, PersistError, StorageError
from weft.persist import migrations
from weft.persist.base import (
    Backend,
    EventRow,
    RunInfo,
    SnapshotRow,
    ThreadInfo,
    conflict,
    exists,
)
from weft.store import TypeRegistry, registry

if TYPE_CHECKING:
    import psycopg
    from psycopg_pool import ConnectionPool

DEFAULT_CONNINFO: Final = "postgresql://postgres@127.0.0.1:5432/weft"
_SCHEMA: Final = re.compile(r"[a-z_][a-z0-9_]{0,62}")
_THREAD_COLUMNS: Final = (
    "thread_id, last_step, first_step, created_at, updated_at, parent_thread, parent_step"
)


class PostgresBackend(Backend):
    """Threads in a PostgreSQL schema (see the module docstring)."""

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
        super().__init__(types=types)
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
                "PostgresBackend needs psycopg 3 and psycopg_pool: pip install 'weft[postgres]'"
            ) from exc
        self.conninfo = conninfo
        self.schema = schema
        self._where = _describe(conninfo, schema)
        self._errors: tuple[type[Exception], ...] = (psycopg.Error,)
        self._pool: ConnectionPool[psycopg.Connection[Any]] = ConnectionPool(
            conninfo, min_size=min_size, max_size=max_size, timeout=timeout, open=False
        )
        try:
            self._pool.open(wait=True, timeout=timeout)
        except PoolTimeout as exc:
            self._pool.close()
            raise StorageError(
                f"PostgreSQL {self._where}: no connection within {timeout:g}s. Is the server "
                "running and the database created? Start it (e.g. `pg_ctlcluster 15 main start`; "
                "CI's .ci/run does this), create the database (`createdb -h 127.0.0.1 -U "
                "postgres weft_test`), and check the conninfo"
            ) from exc
        try:
            self._migrate()
        except BaseException:
            self._pool.close()
            raise

    @property
    def location(self) -> str:
        return self._where

    def close(self) -> None:
        self._pool.close()

    def __repr__(self) -> str:
        return f"<PostgresBackend {self._where}>"

    # ------------------------------------------------------------- plumbing

    def t(self, table: str) -> str:
        """A table of weft's schema, qualified (the schema name was checked)."""
        return f'"{self.schema}".{table}'

    @contextmanager
    def _conn(self, what: str) -> Iterator[psycopg.Connection[Any]]:
        """A pooled connection in a transaction (committed on success); a database
        failure becomes a ``StorageError``."""
        try:
            with self._pool.connection() as conn:
                yield conn
        except self._errors as exc:
            raise StorageError(f"PostgreSQL {self._where}: {what} failed: {exc}") from exc

    def _migrate(self) -> None:
        with self._conn("creating or upgrading weft's schema") as conn:
            conn.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", (f"weft:{self.schema}",))
            conn.execute(f'CREATE SCHEMA IF NOT EXISTS "{self.schema}"')
            conn.execute(
                f"CREATE TABLE IF NOT EXISTS {self.t('schema_migrations')} (version integer "
                "PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())"
            )
            row = conn.execute(
                f"SELECT coalesce(max(version), 0) FROM {self.t('schema_migrations')}"
            ).fetchone()
            version = 0 if row is None else int(row[0])
            if version > len(migrations.POSTGRES):
                raise FutureFormatError(
                    f"PostgreSQL {self._where} has weft schema version {version}, but this weft "
                    f"knows versions up to {len(migrations.POSTGRES)}: a newer weft made it. "
                    "Upgrade weft to use it; nothing was changed"
                )
            for number in range(version + 1, len(migrations.POSTGRES) + 1):
                script = migrations.POSTGRES[number - 1].format(schema=f'"{self.schema}"')
                conn.execute(script.encode())
                conn.execute(
                    f"INSERT INTO {self.t('schema_migrations')} (version) VALUES (%s)", (number,)
                )

    # ------------------------------------------------------------ primitives

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
        threads, events, snapshots = self.t("threads"), self.t("events"), self.t("snapshots")
        with self._conn(f"appending to thread {thread_id!r}") as conn:
            moved = conn.execute(
                f"UPDATE {threads} SET last_step = %s, updated_at = %s "
                "WHERE thread_id = %s AND last_step = %s",
                (last, now, thread_id, expected),
            ).rowcount
            if not moved:
                made = 0
                if expected == 0:
                    made = conn.execute(
                        f"INSERT INTO {threads} (thread_id, last_step, first_step, created_at, "
                        "updated_at) VALUES (%s, %s, 0, %s, %s) ON CONFLICT (thread_id) DO NOTHING",
                        (thread_id, last, now, now),
                    ).rowcount
                if not made:
                    row = conn.execute(
                        f"SELECT last_step FROM {threads} WHERE thread_id = %s", (thread_id,)
                    ).fetchone()
                    raise conflict(thread_id, expected, 0 if row is None else int(row[0]))
            with conn.cursor() as cur:
                cur.executemany(
                    f"INSERT INTO {events} (thread_id, step, run_id, record) "
                    "VALUES (%s, %s, %s, %s)",
                    [(thread_id, step, run, record) for step, run, record in rows],
                )
            if snapshot is not None:
                conn.execute(
                    f"INSERT INTO {snapshots} (thread_id, step, record) VALUES (%s, %s, %s) "
                    "ON CONFLICT (thread_id, step) DO UPDATE SET record = excluded.record",
                    (thread_id, snapshot[0], snapshot[1]),
                )
                conn.execute(
                    f"DELETE FROM {snapshots} WHERE thread_id = %(t)s AND step > (SELECT "
                    f"first_step FROM {threads} WHERE thread_id = %(t)s) AND step NOT IN "
                    f"(SELECT step FROM {snapshots} WHERE thread_id = %(t)s ORDER BY step DESC "
                    "LIMIT %(k)s)",
                    {"t": thread_id, "k": keep_snapshots},
                )

    def _load_rows(
        self, thread_id: str, step: int | None
    ) -> tuple[ThreadInfo | None, SnapshotRow | None, list[EventRow]]:
        with self._conn(f"loading thread {thread_id!r}") as conn:
            conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY")
            info = self._info(conn, thread_id)
            if info is None:
                return None, None, []
            target = info.last_step if step is None else step
            snapshot = conn.execute(
                f"SELECT step, record FROM {self.t('snapshots')} WHERE thread_id = %s "
                "AND step <= %s ORDER BY step DESC LIMIT 1",
                (thread_id, target),
            ).fetchone()
            after = 0 if snapshot is None else snapshot[0]
            rows = conn.execute(
                f"SELECT step, run_id, record FROM {self.t('events')} WHERE thread_id = %s "
                "AND step > %s AND step <= %s ORDER BY step",
                (thread_id, after, target),
            ).fetchall()
        found = None if snapshot is None else (int(snapshot[0]), str(snapshot[1]))
        return info, found, [(int(s), str(r), str(x)) for s, r, x in rows]

    def _event_rows(self, thread_id: str, after: int, upto: int | None) -> list[EventRow]:
        with self._conn(f"reading the history of thread {thread_id!r}") as conn:
            rows = conn.execute(
                f"SELECT step, run_id, record FROM {self.t('events')} WHERE thread_id = %s "
                "AND step > %s AND step <= %s ORDER BY step",
                (thread_id, after, (1 << 62) if upto is None else upto),
            ).fetchall()
        return [(int(s), str(r), str(x)) for s, r, x in rows]

    def _thread_info(self, thread_id: str) -> ThreadInfo | None:
        with self._conn(f"reading thread {thread_id!r}") as conn:
            return self._info(conn, thread_id)

    def _thread_infos(self) -> list[ThreadInfo]:
        with self._conn("listing threads") as conn:
            rows = conn.execute(
                f"SELECT {_THREAD_COLUMNS} FROM {self.t('threads')} ORDER BY thread_id"
            ).fetchall()
        return [_thread(row) for row in rows]

    def _run_infos(self, thread_id: str) -> list[RunInfo]:
        with self._conn(f"listing the runs of thread {thread_id!r}") as conn:
            rows = conn.execute(
                f"SELECT run_id, min(step), max(step), count(*) FROM {self.t('events')} "
                "WHERE thread_id = %s GROUP BY run_id ORDER BY min(step)",
                (thread_id,),
            ).fetchall()
        return [
            RunInfo(thread_id=thread_id, run_id=r, first_step=int(a), last_step=int(b), events=n)
            for r, a, b, n in rows
        ]

    def _delete(self, thread_id: str) -> bool:
        with self._conn(f"deleting thread {thread_id!r}") as conn:
            conn.execute(f"DELETE FROM {self.t('events')} WHERE thread_id = %s", (thread_id,))
            conn.execute(f"DELETE FROM {self.t('snapshots')} WHERE thread_id = %s", (thread_id,))
            gone = conn.execute(
                f"DELETE FROM {self.t('threads')} WHERE thread_id = %s", (thread_id,)
            ).rowcount
        return bool(gone)

    def _create(
        self, thread_id: str, snapshot: SnapshotRow, parent: tuple[str, int] | None, now: float
    ) -> None:
        with self._conn(f"creating thread {thread_id!r}") as conn:
            made = conn.execute(
                f"INSERT INTO {self.t('threads')} ({_THREAD_COLUMNS}) VALUES "
                "(%s, %s, %s, %s, %s, %s, %s) ON CONFLICT (thread_id) DO NOTHING",
                (
                    thread_id,
                    snapshot[0],
                    snapshot[0],
                    now,
                    now,
                    None if parent is None else parent[0],
                    None if parent is None else parent[1],
                ),
            ).rowcount
            if not made:
                known = self._info(conn, thread_id)
                raise exists(thread_id, 0 if known is None else known.last_step)
            conn.execute(
                f"INSERT INTO {self.t('snapshots')} (thread_id, step, record) VALUES (%s, %s, %s)",
                (thread_id, snapshot[0], snapshot[1]),
            )

    def _prune_rows(self, thread_id: str, cut: int, snapshot: SnapshotRow | None) -> int:
        with self._conn(f"pruning thread {thread_id!r}") as conn:
            if snapshot is not None:
                conn.execute(
                    f"INSERT INTO {self.t('snapshots')} (thread_id, step, record) "
                    "VALUES (%s, %s, %s) ON CONFLICT (thread_id, step) DO NOTHING",
                    (thread_id, cut, snapshot[1]),
                )
            gone = conn.execute(
                f"DELETE FROM {self.t('events')} WHERE thread_id = %s AND step <= %s",
                (thread_id, cut),
            ).rowcount
            conn.execute(
                f"DELETE FROM {self.t('snapshots')} WHERE thread_id = %s AND step < %s",
                (thread_id, cut),
            )
            conn.execute(
                f"UPDATE {self.t('threads')} SET first_step = %s WHERE thread_id = %s",
                (cut, thread_id),
            )
        return gone

    def _info(self, conn: psycopg.Connection[Any], thread_id: str) -> ThreadInfo | None:
        row = conn.execute(
            f"SELECT {_THREAD_COLUMNS} FROM {self.t('threads')} WHERE thread_id = %s",
            (thread_id,),
        ).fetchone()
        return None if row is None else _thread(row)


def _thread(row: Sequence[Any]) -> ThreadInfo:
    return ThreadInfo(
        thread_id=row[0],
        last_step=int(row[1]),
        first_step=int(row[2]),
        created_at=row[3],
        updated_at=row[4],
        parent_thread=row[5],
        parent_step=None if row[6] is None else int(row[6]),
    )


def _describe(conninfo: str, schema: str) -> str:
    """The server, database and schema, for messages (never the password)."""
    try:
        from psycopg.conninfo import conninfo_to_dict

        parts = conninfo_to_dict(conninfo)
    except Exception:
        return f"(conninfo not shown) schema {schema!r}"
    host, port, db = parts.get("host", "localhost"), parts.get("port", 5432), parts.get("dbname")
    return f"{host}:{port}/{db or '?'} schema {schema!r}"
