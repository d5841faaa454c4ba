"""What the SQLite and PostgreSQL memory backends share: every primitive but token search.

Statements are written once, as ``weft.persist.sql`` writes them (``?`` parameters, the
``{memory}`` table); every query filters by owner in SQL.
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Sequence
from contextlib import AbstractContextManager, closing
from typing import Any, Final

from weft.memory.backends.base import MemoryBackend, MemoryRow, Namespaces
from weft.memory.vector_index import VectorRow
from weft.persist.sql import Mode

COLUMNS: Final = "namespace, key, record, text, created_at, updated_at, expires_at"
_KEY: Final = "owner = ? AND namespace = ? AND key = ?"
_PUT: Final = (
    "INSERT INTO {memory} AS m (owner, namespace, key, record, text, created_at, updated_at, "
    "expires_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (owner, namespace, key) DO UPDATE "
    "SET record = excluded.record, text = excluded.text, updated_at = excluded.updated_at, "
    "expires_at = excluded.expires_at, vector_model = NULL, vector = NULL, created_at = CASE "
    "WHEN m.expires_at IS NULL OR m.expires_at > excluded.updated_at THEN m.created_at "
    "ELSE excluded.created_at END RETURNING created_at"
)
_EXPIRED: Final = "FROM {memory} WHERE expires_at IS NOT NULL AND expires_at <= ?"
_BUMP: Final = (
    "INSERT INTO {memory_owners} AS o (owner, version) VALUES (?, 1) ON CONFLICT (owner) "
    "DO UPDATE SET version = o.version + 1 RETURNING version"
)
_VERSION: Final = "SELECT version FROM {memory_owners} WHERE owner = ?"
_MANY: Final = 200
"""Rows read by one statement of ``_get_rows``."""


def in_namespaces(namespaces: Namespaces, column: str = "namespace") -> str:
    """The ``AND`` clause that keeps rows of ``namespaces`` (none for None)."""
    if namespaces is None:
        return ""
    return f" AND {column} IN ({', '.join('?' * len(namespaces)) or 'NULL'})"


def memory_row(row: Sequence[Any]) -> MemoryRow:
    """The seven columns of ``COLUMNS`` as a row."""
    return (row[0], row[1], row[2], row[3], row[4], row[5], row[6])


class SQLMemoryBackend(MemoryBackend):
    """A memory backend on an SQL database; a subclass gives ``_sql`` and ``_db`` (a
    connection mixin of ``weft.persist`` does) and ``_search_rows``."""

    @abstractmethod
    def _sql(self, statement: str) -> str: ...

    @abstractmethod
    def _db(self, what: str, mode: Mode = "read") -> AbstractContextManager[Any]: ...

    def _put_row(
        self,
        owner: str,
        namespace: str,
        key: str,
        record: str,
        text: str,
        expires_at: float | None,
        now: float,
    ) -> tuple[float, int]:
        args = (owner, namespace, key, record, text, now, now, expires_at)
        with self._db(f"writing memory {namespace}/{key}", "write") as conn:
            created = float(conn.execute(self._sql(_PUT), args).fetchone()[0])
            return created, self._bump(conn, owner)

    def _bump(self, conn: Any, owner: str) -> int:
        """The owner's next version, in the transaction of the write it counts."""
        return int(conn.execute(self._sql(_BUMP), (owner,)).fetchone()[0])

    def _version(self, owner: str) -> int:
        with self._db("reading the version of long-term memory") as conn:
            row = conn.execute(self._sql(_VERSION), (owner,)).fetchone()
        return 0 if row is None else int(row[0])

    def _get_row(self, owner: str, namespace: str, key: str) -> MemoryRow | None:
        sql = self._sql(f"SELECT {COLUMNS} FROM {{memory}} WHERE {_KEY}")
        with self._db(f"reading memory {namespace}/{key}") as conn:
            row = conn.execute(sql, (owner, namespace, key)).fetchone()
        return None if row is None else memory_row(row)

    def _get_rows(self, owner: str, keys: Sequence[tuple[str, str]]) -> list[MemoryRow]:
        by_namespace: dict[str, list[str]] = {}
        for namespace, key in keys:
            by_namespace.setdefault(namespace, []).append(key)
        found: list[MemoryRow] = []
        with self._db("reading long-term memory") as conn:
            for namespace, names in by_namespace.items():
                for start in range(0, len(names), _MANY):
                    chunk = names[start : start + _MANY]
                    sql = (
                        f"SELECT {COLUMNS} FROM {{memory}} WHERE owner = ? AND namespace = ? "
                        f"AND key IN ({', '.join('?' * len(chunk))})"
                    )
                    rows = conn.execute(self._sql(sql), [owner, namespace, *chunk])
                    found += [memory_row(row) for row in rows]
        return found

    def _delete_row(self, owner: str, namespace: str, key: str) -> int | None:
        sql = self._sql(f"DELETE FROM {{memory}} WHERE {_KEY}")
        with self._db(f"deleting memory {namespace}/{key}", "write") as conn:
            if not conn.execute(sql, (owner, namespace, key)).rowcount:
                return None
            return self._bump(conn, owner)

    def _list_rows(
        self, owner: str, namespaces: Namespaces, prefix: str, limit: int | None
    ) -> list[MemoryRow]:
        sql = f"SELECT {COLUMNS} FROM {{memory}} WHERE owner = ?" + in_namespaces(namespaces)
        args: list[Any] = [owner, *(namespaces or ())]
        if prefix:
            sql += " AND substr(key, 1, ?) = ?"
            args += [len(prefix), prefix]
        sql += " ORDER BY updated_at DESC, namespace, key"
        if limit is not None:
            sql += " LIMIT ?"
            args.append(limit)
        with self._db("listing long-term memory") as conn:
            return [memory_row(row) for row in conn.execute(self._sql(sql), args).fetchall()]

    def _vector_rows(self, owner: str, model: str) -> list[VectorRow]:
        sql = (
            "SELECT namespace, key, expires_at, CASE WHEN vector_model = ? THEN vector END "
            "FROM {memory} WHERE owner = ?"
        )
        with self._db("reading memory vectors") as conn:
            rows = conn.execute(self._sql(sql), (model, owner)).fetchall()
        return [(ns, key, expires, None if v is None else bytes(v)) for ns, key, expires, v in rows]

    def _set_vector_rows(self, owner: str, model: str, rows: list[tuple[str, str, bytes]]) -> int:
        sql = self._sql(f"UPDATE {{memory}} SET vector_model = ?, vector = ? WHERE {_KEY}")
        with self._db("storing memory vectors", "write") as conn:
            with closing(conn.cursor()) as cur:
                cur.executemany(sql, [(model, blob, owner, ns, key) for ns, key, blob in rows])
            return self._bump(conn, owner)

    def _purge(self, owner: str | None, now: float) -> int:
        where = _EXPIRED if owner is None else f"{_EXPIRED} AND owner = ?"
        args = [now] if owner is None else [now, owner]
        with self._db("checking for expired memory") as conn:
            # a read first, so that listing never takes the write lock when nothing expired
            if conn.execute(self._sql(f"SELECT 1 {where} LIMIT 1"), args).fetchone() is None:
                return 0
        with self._db("purging expired memory", "write") as conn:
            gone: int = conn.execute(self._sql(f"DELETE {where}"), args).rowcount
        return gone
