"""Long-term memory in an SQLite file, with FTS5 token recall ranked by ``bm25()``.

The file is the one ``weft.persist.SQLiteBackend`` keeps its event logs in (by default
``./.weft/weft.db``), through a connection of this backend's own: the memory rows have
their own tables and migrations (``weft.memory.backends.migrations``), and WAL mode lets
the two connections read and write side by side (a writer waits up to ``timeout``
seconds for SQLite's write lock). ``synchronous`` has the event-log backend's meaning.

The FTS5 table is an external-content index over ``weft_memory.text`` (porter stemming,
Unicode word breaks), kept in step by triggers inside the same transactions as the rows.
Every query filters by owner in SQL. ``bm25()`` is lower-is-better; the score returned
is its negation, so higher is better on every backend. Every database failure is a
``StorageError`` naming the file.

>>> import tempfile, pathlib
>>> from weft.memory import LongTermMemory, Owner, SQLiteMemoryBackend
>>> path = pathlib.Path(tempfile.mkdtemp()) / "weft.db"
>>> with SQLiteMemoryBackend(path) as rows:
...     _ = LongTermMemory(rows, owner=Owner(user_id="ada")).put("prefs", "tone", "brief")
...     [record.key for record in rows.list("user:ada", now=0.0)]
['tone']
"""

from __future__ import annotations

import sqlite3
import threading
import time
import weakref
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Final, Literal

from weft.errors import FutureFormatError, PersistError, StorageError
from weft.memory.backends import migrations
from weft.memory.backends.base import MemoryBackend, MemoryRow, Namespaces
from weft.persist.sqlite import DEFAULT_PATH
from weft.store import TypeRegistry, registry

_COLUMNS: Final = "namespace, key, record, text, created_at, updated_at, expires_at"


class SQLiteMemoryBackend(MemoryBackend):
    """Long-term memory rows in an SQLite file (see the module docstring)."""

    def __init__(
        self,
        path: str | Path | None = None,
        *,
        synchronous: Literal["NORMAL", "FULL"] = "NORMAL",
        timeout: float = 30.0,
        types: TypeRegistry = registry,
    ) -> None:
        super().__init__(types=types)
        if synchronous not in ("NORMAL", "FULL"):
            raise PersistError(f"synchronous={synchronous!r}: expected 'NORMAL' or 'FULL'")
        self.path = DEFAULT_PATH if path is None else Path(path)
        self._lock = threading.RLock()
        in_memory = str(self.path) == ":memory:"
        if not in_memory:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            self._conn = sqlite3.connect(
                str(self.path), timeout=timeout, isolation_level=None, check_same_thread=False
            )
        except sqlite3.Error as exc:
            raise self._error("opening long-term memory", exc) from exc
        try:
            with self._guard("opening long-term memory"):
                if not in_memory:
                    self._conn.execute("PRAGMA journal_mode=WAL")
                self._conn.execute(f"PRAGMA synchronous={synchronous}")
                self._migrate()
        except BaseException:
            self._conn.close()
            raise
        # closed when this object is collected, too: memory_backend() hands out shared ones
        self._finalizer = weakref.finalize(self, self._conn.close)

    def close(self) -> None:
        with self._lock:
            self._finalizer()

    def __repr__(self) -> str:
        return f"<SQLiteMemoryBackend {str(self.path)!r}>"

    # ------------------------------------------------------------- plumbing

    @contextmanager
    def _guard(self, what: str) -> Iterator[sqlite3.Connection]:
        """The connection under the lock; a database failure becomes a ``StorageError``."""
        with self._lock:
            try:
                yield self._conn
            except sqlite3.Error as exc:
                raise self._error(what, exc) from exc

    @contextmanager
    def _transaction(self, what: str) -> Iterator[sqlite3.Connection]:
        with self._guard(what) as conn:
            conn.execute("BEGIN IMMEDIATE")
            try:
                yield conn
            except BaseException:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")

    def _error(self, what: str, exc: sqlite3.Error) -> StorageError:
        text = str(exc)
        if "not a database" in text or "malformed" in text or "corrupt" in text:
            hint = (
                "the file is damaged or is not a weft database. weft changed nothing in it; "
                f"keep a copy, try `sqlite3 {self.path} .recover`, or restore it from a backup"
            )
        elif "locked" in text or "busy" in text:
            hint = "another connection held the write lock too long; retry, or raise timeout="
        elif "closed" in text:
            hint = "this memory backend was closed; open a new one on the file"
        elif "readonly" in text or "unable to open" in text:
            hint = "check that the path exists and is writable by this process"
        else:
            hint = "see the SQLite message above"
        return StorageError(f"SQLite database {self.path}: {what} failed: {text}; {hint}")

    def _migrate(self) -> None:
        newest = len(migrations.SQLITE)
        with self._transaction("creating or upgrading the long-term memory tables") as conn:
            conn.execute(
                "CREATE TABLE IF NOT EXISTS weft_memory_migrations "
                "(version INTEGER PRIMARY KEY, applied_at REAL NOT NULL)"
            )
            version = conn.execute(
                "SELECT coalesce(max(version), 0) FROM weft_memory_migrations"
            ).fetchone()[0]
            if version > newest:
                raise FutureFormatError(
                    f"SQLite database {self.path} has long-term memory schema version {version}, "
                    f"but this weft knows versions up to {newest}: a newer weft made it. "
                    "Upgrade weft to open it; nothing was changed"
                )
            for number in range(version + 1, newest + 1):
                for statement in migrations.SQLITE[number - 1]:
                    conn.execute(statement)
                conn.execute(
                    "INSERT INTO weft_memory_migrations (version, applied_at) VALUES (?, ?)",
                    (number, time.time()),
                )

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
        with self._transaction(f"writing memory {namespace}/{key}") as conn:
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
        with self._guard(f"reading memory {namespace}/{key}") as conn:
            row = conn.execute(
                f"SELECT {_COLUMNS} FROM weft_memory WHERE owner = ? AND namespace = ? AND key = ?",
                (owner, namespace, key),
            ).fetchone()
        return None if row is None else tuple(row)

    def _delete_row(self, owner: str, namespace: str, key: str) -> bool:
        with self._transaction(f"deleting memory {namespace}/{key}") as conn:
            return bool(
                conn.execute(
                    "DELETE FROM weft_memory WHERE owner = ? AND namespace = ? AND key = ?",
                    (owner, namespace, key),
                ).rowcount
            )

    def _list_rows(
        self, owner: str, namespaces: Namespaces, prefix: str, limit: int | None
    ) -> list[MemoryRow]:
        sql = f"SELECT {_COLUMNS} FROM weft_memory WHERE owner = ?"
        args: list[Any] = [owner]
        if namespaces is not None:
            sql += f" AND namespace IN ({', '.join('?' * len(namespaces))})"
            args += namespaces
        if prefix:
            sql += " AND substr(key, 1, ?) = ?"
            args += [len(prefix), prefix]
        sql += " ORDER BY updated_at DESC, namespace, key LIMIT ?"
        args.append(-1 if limit is None else limit)
        with self._guard("listing long-term memory") as conn:
            return conn.execute(sql, args).fetchall()

    def _search_rows(
        self, owner: str, words: Sequence[str], namespaces: Namespaces, limit: int
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
        with self._guard("searching long-term memory") as conn:
            rows = conn.execute(sql, args).fetchall()
        return [(tuple(row[:7]), -float(row[7])) for row in rows]

    def _vector_rows(
        self, owner: str, model: str, namespaces: Namespaces
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
        with self._guard("reading memory vectors") as conn:
            rows = conn.execute(sql, args).fetchall()
        return [(tuple(row[:7]), row[7]) for row in rows]

    def _set_vector_rows(self, owner: str, model: str, rows: list[tuple[str, str, bytes]]) -> None:
        with self._transaction("storing memory vectors") as conn:
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
        with self._guard("checking for expired memory") as conn:
            # a read first, so that listing never takes the write lock when nothing expired
            if (
                conn.execute(f"SELECT 1 FROM weft_memory WHERE {where} LIMIT 1", args).fetchone()
                is None
            ):
                return 0
        with self._transaction("purging expired memory") as conn:
            gone: int = conn.execute(f"DELETE FROM weft_memory WHERE {where}", args).rowcount
            return gone
