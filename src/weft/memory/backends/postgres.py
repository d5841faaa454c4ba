"""Long-term memory in PostgreSQL, with full-text token recall.

The rows live in the schema ``weft.persist.PostgresBackend`` keeps its event logs in
(``weft`` by default), in a table this backend creates and migrates itself
(``weft.memory.backends.migrations``), through a connection pool of its own. Migrations
run under the same advisory lock as the event log's, so processes that start at once
never race to create the schema. psycopg is imported when a backend is made
(``pip install 'weft[postgres]'``).

The ``tsv`` column is generated from ``text`` (``to_tsvector('english', ...)``, GIN
indexed); a query's words are OR-ed through ``websearch_to_tsquery`` (which never fails
on odd input) and ranked by ``ts_rank``. Every query filters by owner in SQL, and every
database failure is a ``StorageError`` naming the server and schema.

>>> rows = PostgresMemoryBackend("postgresql://postgres@127.0.0.1:5432/weft")  # doctest: +SKIP
"""

from __future__ import annotations

import weakref
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Final

from weft.errors import FutureFormatError, PersistError, StorageError
from weft.memory.backends import migrations
from weft.memory.backends.base import MemoryBackend, MemoryRow, Namespaces
from weft.persist.postgres import _SCHEMA, DEFAULT_CONNINFO, _describe
from weft.store import TypeRegistry, registry

if TYPE_CHECKING:
    import psycopg
    from psycopg_pool import ConnectionPool

_COLUMNS: Final = "namespace, key, record, text, created_at, updated_at, expires_at"
_OPERATORS: Final = frozenset({"or", "and", "not"})


class PostgresMemoryBackend(MemoryBackend):
    """Long-term memory rows in a PostgreSQL schema (see the module docstring)."""

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
                "PostgresMemoryBackend needs psycopg 3 and psycopg_pool: "
                "pip install 'weft[postgres]'"
            ) from exc
        self.schema = schema
        self._where = _describe(conninfo, schema)
        self._table = f'"{schema}".memory'
        self._errors: tuple[type[Exception], ...] = (psycopg.Error,)
        self._pool: ConnectionPool[psycopg.Connection[Any]] = ConnectionPool(
            conninfo, min_size=min_size, max_size=max_size, timeout=timeout, open=False
        )
        try:
            self._pool.open(wait=True, timeout=timeout)
        except PoolTimeout as exc:
            self._pool.close()
            raise StorageError(
                f"PostgreSQL {self._where}: no connection within {timeout:g}s for long-term "
                "memory. Is the server running and the database created? Start it (e.g. "
                "`pg_ctlcluster 15 main start`), create the database (`createdb -h 127.0.0.1 "
                "-U postgres weft_test`), and check the conninfo"
            ) from exc
        try:
            self._migrate()
        except BaseException:
            self._pool.close()
            raise
        # closed when this object is collected, too: memory_backend() hands out shared ones
        self._finalizer = weakref.finalize(self, self._pool.close)

    def close(self) -> None:
        self._finalizer()

    def __repr__(self) -> str:
        return f"<PostgresMemoryBackend {self._where}>"

    # ------------------------------------------------------------- plumbing

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
        schema = f'"{self.schema}"'
        versions = f"{schema}.memory_migrations"
        newest = len(migrations.POSTGRES)
        with self._conn("creating or upgrading the long-term memory tables") as conn:
            # the event log's lock: the two backends never race to create the schema
            conn.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", (f"weft:{self.schema}",))
            conn.execute(f"CREATE SCHEMA IF NOT EXISTS {schema}")
            conn.execute(
                f"CREATE TABLE IF NOT EXISTS {versions} (version integer PRIMARY KEY, "
                "applied_at timestamptz NOT NULL DEFAULT now())"
            )
            row = conn.execute(f"SELECT coalesce(max(version), 0) FROM {versions}").fetchone()
            version = 0 if row is None else int(row[0])
            if version > newest:
                raise FutureFormatError(
                    f"PostgreSQL {self._where} has long-term memory schema version {version}, "
                    f"but this weft knows versions up to {newest}: a newer weft made it. "
                    "Upgrade weft to use it; nothing was changed"
                )
            for number in range(version + 1, newest + 1):
                conn.execute(migrations.POSTGRES[number - 1].format(schema=schema).encode())
                conn.execute(f"INSERT INTO {versions} (version) VALUES (%s)", (number,))

    # ------------------------------------------------------------ primitives

    def _put_row(
        self,
        owner: str,
        namespace: str,
        key: str,
        record: str,
        text: str,
        expires_at: float | None,
        now: float,
    ) -> float:
        with self._conn(f"writing memory {namespace}/{key}") as conn:
            row = conn.execute(
                f"INSERT INTO {self._table} AS m (owner, namespace, key, record, text, "
                "created_at, updated_at, expires_at) VALUES (%(o)s, %(n)s, %(k)s, %(r)s, %(x)s, "
                "%(now)s, %(now)s, %(e)s) ON CONFLICT (owner, namespace, key) DO UPDATE SET "
                "record = excluded.record, text = excluded.text, updated_at = excluded.updated_at, "
                "expires_at = excluded.expires_at, vector_model = NULL, vector = NULL, "
                "created_at = CASE WHEN m.expires_at IS NULL OR m.expires_at > %(now)s "
                "THEN m.created_at ELSE excluded.created_at END RETURNING m.created_at",
                {
                    "o": owner,
                    "n": namespace,
                    "k": key,
                    "r": record,
                    "x": text,
                    "now": now,
                    "e": expires_at,
                },
            ).fetchone()
        assert row is not None
        return float(row[0])

    def _get_row(self, owner: str, namespace: str, key: str) -> MemoryRow | None:
        with self._conn(f"reading memory {namespace}/{key}") as conn:
            row = conn.execute(
                f"SELECT {_COLUMNS} FROM {self._table} WHERE owner = %s AND namespace = %s "
                "AND key = %s",
                (owner, namespace, key),
            ).fetchone()
        return None if row is None else _row(row)

    def _delete_row(self, owner: str, namespace: str, key: str) -> bool:
        with self._conn(f"deleting memory {namespace}/{key}") as conn:
            gone = conn.execute(
                f"DELETE FROM {self._table} WHERE owner = %s AND namespace = %s AND key = %s",
                (owner, namespace, key),
            ).rowcount
        return bool(gone)

    def _list_rows(
        self, owner: str, namespaces: Namespaces, prefix: str, limit: int | None
    ) -> list[MemoryRow]:
        sql = f"SELECT {_COLUMNS} FROM {self._table} WHERE owner = %s"
        args: list[Any] = [owner]
        if namespaces is not None:
            sql += " AND namespace = ANY(%s)"
            args.append(list(namespaces))
        if prefix:
            sql += " AND left(key, %s) = %s"
            args += [len(prefix), prefix]
        sql += " ORDER BY updated_at DESC, namespace, key"
        if limit is not None:
            sql += " LIMIT %s"
            args.append(limit)
        with self._conn("listing long-term memory") as conn:
            return [_row(row) for row in conn.execute(sql, args).fetchall()]

    def _search_rows(
        self, owner: str, words: Sequence[str], namespaces: Namespaces, limit: int
    ) -> list[tuple[MemoryRow, float]]:
        query = " or ".join(w for w in dict.fromkeys(words) if w not in _OPERATORS)
        if not query:
            return []
        sql = (
            f"SELECT {_COLUMNS}, ts_rank(tsv, q) AS score FROM {self._table}, "
            "websearch_to_tsquery('english', %s) AS q WHERE owner = %s AND tsv @@ q"
        )
        args: list[Any] = [query, owner]
        if namespaces is not None:
            sql += " AND namespace = ANY(%s)"
            args.append(list(namespaces))
        sql += " ORDER BY score DESC, namespace, key LIMIT %s"
        args.append(limit)
        with self._conn("searching long-term memory") as conn:
            rows = conn.execute(sql, args).fetchall()
        return [(_row(row[:7]), float(row[7])) for row in rows]

    def _vector_rows(
        self, owner: str, model: str, namespaces: Namespaces
    ) -> list[tuple[MemoryRow, bytes | None]]:
        sql = (
            f"SELECT {_COLUMNS}, CASE WHEN vector_model = %s THEN vector END "
            f"FROM {self._table} WHERE owner = %s"
        )
        args: list[Any] = [model, owner]
        if namespaces is not None:
            sql += " AND namespace = ANY(%s)"
            args.append(list(namespaces))
        sql += " ORDER BY namespace, key"
        with self._conn("reading memory vectors") as conn:
            rows = conn.execute(sql, args).fetchall()
        return [(_row(row[:7]), None if row[7] is None else bytes(row[7])) for row in rows]

    def _set_vector_rows(self, owner: str, model: str, rows: list[tuple[str, str, bytes]]) -> None:
        with self._conn("storing memory vectors") as conn, conn.cursor() as cur:
            cur.executemany(
                f"UPDATE {self._table} SET vector_model = %s, vector = %s "
                "WHERE owner = %s AND namespace = %s AND key = %s",
                [(model, blob, owner, namespace, key) for namespace, key, blob in rows],
            )

    def _purge(self, owner: str | None, now: float) -> int:
        sql = f"DELETE FROM {self._table} WHERE expires_at IS NOT NULL AND expires_at <= %s"
        args: list[Any] = [now]
        if owner is not None:
            sql += " AND owner = %s"
            args.append(owner)
        with self._conn("purging expired memory") as conn:
            return conn.execute(sql, args).rowcount


def _row(row: Any) -> MemoryRow:
    return (
        row[0],
        row[1],
        row[2],
        row[3],
        float(row[4]),
        float(row[5]),
        None if row[6] is None else float(row[6]),
    )
