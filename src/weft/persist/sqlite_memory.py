"""Long-term memory rows in the SQLite file, with FTS5 token recall ranked by ``bm25()``.

The FTS5 table is an external-content index over ``weft_memory.text`` (porter stemming,
Unicode word breaks), kept in step by triggers inside the same transactions as the rows.
Every query filters by owner in SQL. ``bm25()`` is lower-is-better; the score returned
is its negation, so higher is better on every backend.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Final

from weft.persist.memory_base import MemoryBackend, MemoryRow

if TYPE_CHECKING:
    from weft.persist.sqlite import SQLiteBackend

_COLUMNS: Final = "namespace, key, record, text, created_at, updated_at, expires_at"


class SQLiteMemory(MemoryBackend):
    """``SQLiteBackend.memory``: long-term memory in the backend's file and connection."""

    def __init__(self, backend: SQLiteBackend) -> None:
        super().__init__(types=backend.types)
        self._backend = backend

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
        with self._backend._transaction(f"writing memory {namespace}/{key}") as conn:
            old = conn.execute(
                "SELECT created_at, expires_at FROM weft_memory "
                "WHERE owner = ? AND namespace = ? AND key = ?",
                (owner, namespace, key),
            ).fetchone()
            live = old is not None and (old[1] is None or old[1] > now)
            created: float = old[0] if live else now
            conn.execute(
                "INSERT INTO weft_memory (owner, namespace, key, record, text, created_at, "
                "updated_at, expires_at, vector_model, vector) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, NULL, NULL) "
                "ON CONFLICT (owner, namespace, key) DO UPDATE SET record = excluded.record, "
                "text = excluded.text, created_at = excluded.created_at, "
                "updated_at = excluded.updated_at, expires_at = excluded.expires_at, "
                "vector_model = NULL, vector = NULL",
                (owner, namespace, key, record, text, created, now, expires_at),
            )
            return created

    def _get_row(self, owner: str, namespace: str, key: str) -> MemoryRow | None:
        with self._backend._guard(f"reading memory {namespace}/{key}") as conn:
            row = conn.execute(
                f"SELECT {_COLUMNS} FROM weft_memory WHERE owner = ? AND namespace = ? AND key = ?",
                (owner, namespace, key),
            ).fetchone()
        return None if row is None else tuple(row)

    def _delete_row(self, owner: str, namespace: str, key: str) -> bool:
        with self._backend._transaction(f"deleting memory {namespace}/{key}") as conn:
            return bool(
                conn.execute(
                    "DELETE FROM weft_memory WHERE owner = ? AND namespace = ? AND key = ?",
                    (owner, namespace, key),
                ).rowcount
            )

    def _list_rows(
        self, owner: str, namespace: str | None, prefix: str, limit: int | None
    ) -> list[MemoryRow]:
        sql = f"SELECT {_COLUMNS} FROM weft_memory WHERE owner = ?"
        args: list[Any] = [owner]
        if namespace is not None:
            sql += " AND namespace = ?"
            args.append(namespace)
        if prefix:
            sql += " AND substr(key, 1, ?) = ?"
            args += [len(prefix), prefix]
        sql += " ORDER BY updated_at DESC, namespace, key LIMIT ?"
        args.append(-1 if limit is None else limit)
        with self._backend._guard("listing long-term memory") as conn:
            return conn.execute(sql, args).fetchall()

    def _search_rows(
        self, owner: str, words: Sequence[str], namespaces: tuple[str, ...] | None, limit: int
    ) -> list[tuple[MemoryRow, float]]:
        match = " OR ".join(f'"{word}"' for word in dict.fromkeys(words))
        columns = ", ".join(f"m.{c.strip()}" for c in _COLUMNS.split(","))
        sql = (
            f"SELECT {columns}, bm25(weft_memory_fts) AS rank FROM weft_memory_fts "
            "JOIN weft_memory AS m ON m.rowid = weft_memory_fts.rowid "
            "WHERE weft_memory_fts MATCH ? AND m.owner = ?"
        )
        args: list[Any] = [match, owner]
        if namespaces is not None:
            sql += f" AND m.namespace IN ({', '.join('?' * len(namespaces))})"
            args += namespaces
        sql += " ORDER BY rank, m.namespace, m.key LIMIT ?"
        args.append(limit)
        with self._backend._guard("searching long-term memory") as conn:
            rows = conn.execute(sql, args).fetchall()
        return [(tuple(row[:7]), -float(row[7])) for row in rows]

    def _vector_rows(
        self, owner: str, model: str, namespaces: tuple[str, ...] | None
    ) -> list[tuple[MemoryRow, bytes | None]]:
        sql = (
            f"SELECT {_COLUMNS}, CASE WHEN vector_model = ? THEN vector END "
            "FROM weft_memory WHERE owner = ?"
        )
        args: list[Any] = [model, owner]
        if namespaces is not None:
            sql += f" AND namespace IN ({', '.join('?' * len(namespaces))})"
            args += namespaces
        sql += " ORDER BY namespace, key"
        with self._backend._guard("reading memory vectors") as conn:
            rows = conn.execute(sql, args).fetchall()
        return [(tuple(row[:7]), row[7]) for row in rows]

    def _set_vector_rows(self, owner: str, model: str, rows: list[tuple[str, str, bytes]]) -> None:
        with self._backend._transaction("storing memory vectors") as conn:
            conn.executemany(
                "UPDATE weft_memory SET vector_model = ?, vector = ? "
                "WHERE owner = ? AND namespace = ? AND key = ?",
                [(model, blob, owner, namespace, key) for namespace, key, blob in rows],
            )

    def _purge(self, owner: str | None, now: float) -> int:
        where = "expires_at IS NOT NULL AND expires_at <= ?"
        args: list[Any] = [now]
        if owner is not None:
            where += " AND owner = ?"
            args.append(owner)
        with self._backend._guard("checking for expired memory") as conn:
            # a read first, so that listing never takes the write lock when nothing expired
            if (
                conn.execute(f"SELECT 1 FROM weft_memory WHERE {where} LIMIT 1", args).fetchone()
                is None
            ):
                return 0
        with self._backend._transaction("purging expired memory") as conn:
            gone: int = conn.execute(f"DELETE FROM weft_memory WHERE {where}", args).rowcount
            return gone
