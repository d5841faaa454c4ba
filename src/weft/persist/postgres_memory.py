"""Long-term memory rows in PostgreSQL, with full-text token recall.

The ``tsv`` column is generated from ``text`` (``to_tsvector('english', ...)``, GIN
indexed); a query's words are OR-ed through ``websearch_to_tsquery`` (which never fails
on odd input) and ranked by ``ts_rank``. Every query filters by owner in SQL.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Final

from weft.persist.memory_base import MemoryBackend, MemoryRow

if TYPE_CHECKING:
    from weft.persist.postgres import PostgresBackend

_COLUMNS: Final = "namespace, key, record, text, created_at, updated_at, expires_at"
_OPERATORS: Final = frozenset({"or", "and", "not"})


class PostgresMemory(MemoryBackend):
    """``PostgresBackend.memory``: long-term memory in the backend's schema and pool."""

    def __init__(self, backend: PostgresBackend) -> None:
        super().__init__(types=backend.types)
        self._backend = backend
        self._table = backend.t("memory")

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
        with self._backend._conn(f"writing memory {namespace}/{key}") as conn:
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
        with self._backend._conn(f"reading memory {namespace}/{key}") as conn:
            row = conn.execute(
                f"SELECT {_COLUMNS} FROM {self._table} WHERE owner = %s AND namespace = %s "
                "AND key = %s",
                (owner, namespace, key),
            ).fetchone()
        return None if row is None else _row(row)

    def _delete_row(self, owner: str, namespace: str, key: str) -> bool:
        with self._backend._conn(f"deleting memory {namespace}/{key}") as conn:
            gone = conn.execute(
                f"DELETE FROM {self._table} WHERE owner = %s AND namespace = %s AND key = %s",
                (owner, namespace, key),
            ).rowcount
        return bool(gone)

    def _list_rows(
        self, owner: str, namespace: str | None, prefix: str, limit: int | None
    ) -> list[MemoryRow]:
        sql = f"SELECT {_COLUMNS} FROM {self._table} WHERE owner = %s"
        args: list[Any] = [owner]
        if namespace is not None:
            sql += " AND namespace = %s"
            args.append(namespace)
        if prefix:
            sql += " AND left(key, %s) = %s"
            args += [len(prefix), prefix]
        sql += " ORDER BY updated_at DESC, namespace, key"
        if limit is not None:
            sql += " LIMIT %s"
            args.append(limit)
        with self._backend._conn("listing long-term memory") as conn:
            return [_row(row) for row in conn.execute(sql, args).fetchall()]

    def _search_rows(
        self, owner: str, words: Sequence[str], namespaces: tuple[str, ...] | None, limit: int
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
        with self._backend._conn("searching long-term memory") as conn:
            rows = conn.execute(sql, args).fetchall()
        return [(_row(row[:7]), float(row[7])) for row in rows]

    def _vector_rows(
        self, owner: str, model: str, namespaces: tuple[str, ...] | None
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
        with self._backend._conn("reading memory vectors") as conn:
            rows = conn.execute(sql, args).fetchall()
        return [(_row(row[:7]), None if row[7] is None else bytes(row[7])) for row in rows]

    def _set_vector_rows(self, owner: str, model: str, rows: list[tuple[str, str, bytes]]) -> None:
        with self._backend._conn("storing memory vectors") as conn, conn.cursor() as cur:
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
        with self._backend._conn("purging expired memory") as conn:
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
