"""The SQLite backend: the embedded default (standard library ``sqlite3``, WAL).

One file holds every thread's event log and its snapshots (``weft.memory`` keeps
long-term memory in it too, in tables of its own); the default is ``./.weft/weft.db``,
created on first use. The database runs in WAL mode
with ``synchronous=NORMAL``: a committed step survives the process being killed (the
WAL is written before the commit returns), and a power loss may lose the last
commits but never corrupts the file. Pass ``synchronous="FULL"`` to survive power
loss too (an fsync per commit: slower).

One connection per backend object, shared by its threads under a lock; several
processes may open the same file (writers take SQLite's write lock in turn, waiting up
to ``timeout`` seconds). Every database failure is a ``StorageError`` naming the file;
a damaged file is never written to or "repaired" by weft.

>>> import tempfile, pathlib
>>> from weft.persist import SQLiteBackend
>>> path = pathlib.Path(tempfile.mkdtemp()) / "weft.db"
>>> with SQLiteBackend(path) as backend:
...     backend.last_step("chat-1")
0
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Final, Literal

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

DEFAULT_PATH: Final = Path(".weft") / "weft.db"

_THREAD_SELECT: Final = (
    "SELECT t.thread_id, coalesce(max(t.first_step, (SELECT max(step) FROM weft_events AS e "
    "WHERE e.thread_id = t.thread_id)), t.first_step), t.first_step, t.created_at, "
    "coalesce((SELECT json_extract(record, '$.time') FROM weft_events AS e "
    "WHERE e.thread_id = t.thread_id ORDER BY step DESC LIMIT 1), t.created_at), "
    "t.parent_thread, t.parent_step FROM weft_threads AS t"
)
_INSERT: Final = "INSERT INTO weft_events (thread_id, step, run_id, record) VALUES (?, ?, ?, ?)"
_LAST_STEP: Final = (
    "SELECT (SELECT max(step) FROM weft_events WHERE thread_id = ?1), "
    "(SELECT first_step FROM weft_threads WHERE thread_id = ?1)"
)


class SQLiteBackend(Backend):
    """Threads in one SQLite file (see the module docstring)."""

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
        self.synchronous = synchronous
        self._lock = threading.RLock()
        in_memory = str(self.path) == ":memory:"
        if not in_memory:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            self._conn = sqlite3.connect(
                str(self.path), timeout=timeout, isolation_level=None, check_same_thread=False
            )
        except sqlite3.Error as exc:
            raise self._error("opening", exc) from exc
        try:
            with self._guard("opening"):
                if not in_memory:
                    self._conn.execute("PRAGMA journal_mode=WAL")
                self._conn.execute(f"PRAGMA synchronous={synchronous}")
                self._migrate()
        except BaseException:
            self._conn.close()
            raise

    @property
    def location(self) -> str:
        return str(self.path)

    def close(self) -> None:
        with self._lock:
            self._conn.close()

    def __repr__(self) -> str:
        return f"<SQLiteBackend {str(self.path)!r}>"

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
    def _transaction(self, what: str, *, write: bool = True) -> Iterator[sqlite3.Connection]:
        with self._guard(what) as conn:
            conn.execute("BEGIN IMMEDIATE" if write else "BEGIN")
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
            hint = "another process held the write lock too long; retry, or raise timeout="
        elif "readonly" in text or "unable to open" in text:
            hint = "check that the path exists and is writable by this process"
        else:
            hint = "see the SQLite message above"
        return StorageError(f"SQLite database {self.path}: {what} failed: {text}; {hint}")

    def _migrate(self) -> None:
        conn = self._conn
        conn.execute("BEGIN IMMEDIATE")
        try:
            version = conn.execute("PRAGMA user_version").fetchone()[0]
            if version > len(migrations.SQLITE):
                raise FutureFormatError(
                    f"SQLite database {self.path} has schema version {version}, but this weft "
                    f"knows versions up to {len(migrations.SQLITE)}: a newer weft made it. "
                    "Upgrade weft to open it; nothing was changed"
                )
            for number in range(version + 1, len(migrations.SQLITE) + 1):
                for statement in _statements(migrations.SQLITE[number - 1]):
                    conn.execute(statement)
                conn.execute(f"PRAGMA user_version = {number}")
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")

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
        # the hot path of every durable run: no context managers, one read, the inserts
        with self._lock:
            conn = self._conn
            try:
                conn.execute("BEGIN IMMEDIATE")  # the write lock: nobody appends meanwhile
                try:
                    last_event, first = conn.execute(_LAST_STEP, (thread_id,)).fetchone()
                    actual = 0 if first is None else max(first, last_event or 0)
                    if actual != expected:
                        raise conflict(thread_id, expected, actual)
                    if first is None:
                        conn.execute(
                            "INSERT INTO weft_threads (thread_id, first_step, created_at) "
                            "VALUES (?, 0, ?)",
                            (thread_id, now),
                        )
                    if len(rows) == 1:
                        conn.execute(_INSERT, (thread_id, *rows[0]))
                    else:
                        conn.executemany(_INSERT, [(thread_id, *row) for row in rows])
                    if snapshot is not None:
                        self._store_snapshot(conn, thread_id, snapshot, keep_snapshots)
                except BaseException:
                    if conn.in_transaction:
                        conn.execute("ROLLBACK")
                    raise
                conn.execute("COMMIT")
            except sqlite3.Error as exc:
                raise self._error(f"appending to thread {thread_id!r}", exc) from exc

    @staticmethod
    def _store_snapshot(
        conn: sqlite3.Connection, thread_id: str, snapshot: SnapshotRow, keep: int
    ) -> None:
        conn.execute(
            "INSERT OR REPLACE INTO weft_snapshots (thread_id, step, record) VALUES (?, ?, ?)",
            (thread_id, snapshot[0], snapshot[1]),
        )
        conn.execute(
            "DELETE FROM weft_snapshots WHERE thread_id = ?1 "
            "AND step > (SELECT first_step FROM weft_threads WHERE thread_id = ?1) "
            "AND step NOT IN (SELECT step FROM weft_snapshots WHERE thread_id = ?1 "
            "ORDER BY step DESC LIMIT ?2)",
            (thread_id, keep),
        )

    def _load_rows(
        self, thread_id: str, step: int | None
    ) -> tuple[ThreadInfo | None, SnapshotRow | None, list[EventRow]]:
        with self._transaction(f"loading thread {thread_id!r}", write=False) as conn:
            info = self._info(conn, thread_id)
            if info is None:
                return None, None, []
            target = info.last_step if step is None else step
            snapshot = conn.execute(
                "SELECT step, record FROM weft_snapshots WHERE thread_id = ? AND step <= ? "
                "ORDER BY step DESC LIMIT 1",
                (thread_id, target),
            ).fetchone()
            after = 0 if snapshot is None else snapshot[0]
            rows = conn.execute(
                "SELECT step, run_id, record FROM weft_events "
                "WHERE thread_id = ? AND step > ? AND step <= ? ORDER BY step",
                (thread_id, after, target),
            ).fetchall()
            return info, None if snapshot is None else (snapshot[0], snapshot[1]), rows

    def _event_rows(self, thread_id: str, after: int, upto: int | None) -> list[EventRow]:
        with self._guard(f"reading the history of thread {thread_id!r}") as conn:
            return conn.execute(
                "SELECT step, run_id, record FROM weft_events "
                "WHERE thread_id = ? AND step > ? AND step <= ? ORDER BY step",
                (thread_id, after, (1 << 62) if upto is None else upto),
            ).fetchall()

    def _thread_info(self, thread_id: str) -> ThreadInfo | None:
        with self._guard(f"reading thread {thread_id!r}") as conn:
            return self._info(conn, thread_id)

    def _thread_infos(self) -> list[ThreadInfo]:
        with self._guard("listing threads") as conn:
            rows = conn.execute(f"{_THREAD_SELECT} ORDER BY t.thread_id").fetchall()
        return [_thread(row) for row in rows]

    def _run_infos(self, thread_id: str) -> list[RunInfo]:
        with self._guard(f"listing the runs of thread {thread_id!r}") as conn:
            rows = conn.execute(
                "SELECT run_id, MIN(step), MAX(step), COUNT(*) FROM weft_events "
                "WHERE thread_id = ? GROUP BY run_id ORDER BY MIN(step)",
                (thread_id,),
            ).fetchall()
        return [
            RunInfo(thread_id=thread_id, run_id=r, first_step=a, last_step=b, events=n)
            for r, a, b, n in rows
        ]

    def _delete(self, thread_id: str) -> bool:
        with self._transaction(f"deleting thread {thread_id!r}") as conn:
            conn.execute("DELETE FROM weft_events WHERE thread_id = ?", (thread_id,))
            conn.execute("DELETE FROM weft_snapshots WHERE thread_id = ?", (thread_id,))
            return bool(
                conn.execute("DELETE FROM weft_threads WHERE thread_id = ?", (thread_id,)).rowcount
            )

    def _create(
        self, thread_id: str, snapshot: SnapshotRow, parent: tuple[str, int] | None, now: float
    ) -> None:
        with self._transaction(f"creating thread {thread_id!r}") as conn:
            known = self._info(conn, thread_id)
            if known is not None:
                raise exists(thread_id, known.last_step)
            conn.execute(
                "INSERT INTO weft_threads (thread_id, first_step, created_at, parent_thread, "
                "parent_step) VALUES (?, ?, ?, ?, ?)",
                (
                    thread_id,
                    snapshot[0],
                    now,
                    None if parent is None else parent[0],
                    None if parent is None else parent[1],
                ),
            )
            conn.execute(
                "INSERT INTO weft_snapshots (thread_id, step, record) VALUES (?, ?, ?)",
                (thread_id, snapshot[0], snapshot[1]),
            )

    def _prune_rows(self, thread_id: str, cut: int, snapshot: SnapshotRow | None) -> int:
        with self._transaction(f"pruning thread {thread_id!r}") as conn:
            if snapshot is not None:
                conn.execute(
                    "INSERT OR REPLACE INTO weft_snapshots (thread_id, step, record) "
                    "VALUES (?, ?, ?)",
                    (thread_id, cut, snapshot[1]),
                )
            gone: int = conn.execute(
                "DELETE FROM weft_events WHERE thread_id = ? AND step <= ?", (thread_id, cut)
            ).rowcount
            conn.execute(
                "DELETE FROM weft_snapshots WHERE thread_id = ? AND step < ?", (thread_id, cut)
            )
            conn.execute(
                "UPDATE weft_threads SET first_step = ? WHERE thread_id = ?", (cut, thread_id)
            )
            return gone

    @staticmethod
    def _info(conn: sqlite3.Connection, thread_id: str) -> ThreadInfo | None:
        row = conn.execute(f"{_THREAD_SELECT} WHERE t.thread_id = ?", (thread_id,)).fetchone()
        return None if row is None else _thread(row)


def _thread(row: Sequence[Any]) -> ThreadInfo:
    return ThreadInfo(
        thread_id=row[0],
        last_step=row[1],
        first_step=row[2],
        created_at=row[3],
        updated_at=row[4],
        parent_thread=row[5],
        parent_step=row[6],
    )


def _statements(script: str) -> Iterator[str]:
    """The statements of a script, one at a time (a trigger body's ``;`` does not split)."""
    buffer = ""
    for piece in script.split(";"):
        buffer += piece + ";"
        if sqlite3.complete_statement(buffer):
            if buffer.strip(" \n;"):
                yield buffer.strip()
            buffer = ""
