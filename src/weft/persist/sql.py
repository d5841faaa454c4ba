"""What the SQLite and PostgreSQL backends share: the statements both run, once.

A statement is written with ``?`` parameters and ``{threads}``, ``{events}``,
``{snapshots}`` (``{memory}`` for long-term memory) for the tables; ``_sql`` gives a
backend's spelling of it. ``_db(what, mode)`` is a connection that turns a database
failure into a ``StorageError`` naming ``what``: ``"read"``, ``"snapshot"`` (reads that
see one consistent state) or ``"write"`` (one transaction, committed on success).
"""

from __future__ import annotations

from abc import abstractmethod
from contextlib import AbstractContextManager
from dataclasses import fields
from typing import Any, Final, Literal

from weft.persist.base import Backend, EventRow, RunInfo, SnapshotRow, ThreadInfo, exists

Mode = Literal["read", "snapshot", "write"]

INSERT_EVENT: Final = "INSERT INTO {events} (thread_id, step, run_id, record) VALUES (?, ?, ?, ?)"
_PUT_SNAPSHOT: Final = (
    "INSERT INTO {snapshots} (thread_id, step, record) VALUES (?, ?, ?) "
    "ON CONFLICT (thread_id, step) DO UPDATE SET record = excluded.record"
)
_TRIM_SNAPSHOTS: Final = (
    "DELETE FROM {snapshots} WHERE thread_id = ? "
    "AND step > (SELECT first_step FROM {threads} WHERE thread_id = ?) "
    "AND step NOT IN (SELECT step FROM {snapshots} WHERE thread_id = ? "
    "ORDER BY step DESC LIMIT ?)"
)
_SNAPSHOT_AT: Final = (
    "SELECT step, record FROM {snapshots} WHERE thread_id = ? AND step <= ? "
    "ORDER BY step DESC LIMIT 1"
)
_THREAD_FIELDS: Final = tuple(f.name for f in fields(ThreadInfo))  # the order _THREADS reads


class SQLBackend(Backend):
    """An event-log backend on an SQL database: the primitives but appending, once.

    A subclass gives ``_sql`` and ``_db`` (a connection mixin does), ``_THREADS`` (a
    ``SELECT`` of a thread's fields from ``{threads} AS t``), ``_NEW_THREAD`` (an insert
    that does nothing when the thread exists, with the named parameters ``t``, ``first``,
    ``last``, ``now``, ``pt``, ``ps``) and ``_append_rows``. The statements on the events
    table are attributes, so that a backend that lays the table out otherwise (SQLite
    numbers the rows) can give its own, with the same parameters.
    """

    _THREADS: str
    _NEW_THREAD: str
    # thread, after, upto -> (step, run_id, record) in step order
    _EVENTS: str = (
        "SELECT step, run_id, record FROM {events} "
        "WHERE thread_id = ? AND step > ? AND step <= ? ORDER BY step"
    )
    # thread -> (run_id, first step, last step, events) in the order the runs began
    _RUNS: str = (
        "SELECT run_id, min(step), max(step), count(*) FROM {events} "
        "WHERE thread_id = ? GROUP BY run_id ORDER BY min(step)"
    )
    _DROP_EVENTS: str = "DELETE FROM {events} WHERE thread_id = ?"  # thread
    _PRUNE_EVENTS: str = "DELETE FROM {events} WHERE thread_id = ? AND step <= ?"  # thread, cut

    @abstractmethod
    def _sql(self, statement: str) -> str: ...

    @abstractmethod
    def _db(self, what: str, mode: Mode = "read") -> AbstractContextManager[Any]: ...

    def _store_snapshot(self, conn: Any, thread_id: str, snapshot: SnapshotRow, keep: int) -> None:
        conn.execute(self._sql(_PUT_SNAPSHOT), (thread_id, *snapshot))
        conn.execute(self._sql(_TRIM_SNAPSHOTS), (thread_id, thread_id, thread_id, keep))

    def _load_rows(
        self, thread_id: str, step: int | None
    ) -> tuple[ThreadInfo | None, SnapshotRow | None, list[EventRow]]:
        with self._db(f"loading thread {thread_id!r}", "snapshot") as conn:
            info = self._info(conn, thread_id)
            if info is None:
                return None, None, []
            target = info.last_step if step is None else step
            snapshot = conn.execute(self._sql(_SNAPSHOT_AT), (thread_id, target)).fetchone()
            after = 0 if snapshot is None else snapshot[0]
            rows = conn.execute(self._sql(self._EVENTS), (thread_id, after, target)).fetchall()
        return info, None if snapshot is None else (snapshot[0], snapshot[1]), rows

    def _event_rows(self, thread_id: str, after: int, upto: int | None) -> list[EventRow]:
        upto = (1 << 62) if upto is None else upto
        with self._db(f"reading the history of thread {thread_id!r}") as conn:
            rows: list[EventRow] = conn.execute(
                self._sql(self._EVENTS), (thread_id, after, upto)
            ).fetchall()
        return rows

    def _thread_info(self, thread_id: str) -> ThreadInfo | None:
        with self._db(f"reading thread {thread_id!r}") as conn:
            return self._info(conn, thread_id)

    def _thread_infos(self) -> list[ThreadInfo]:
        with self._db("listing threads") as conn:
            rows = conn.execute(self._sql(f"{self._THREADS} ORDER BY t.thread_id")).fetchall()
        return [ThreadInfo(**dict(zip(_THREAD_FIELDS, row, strict=True))) for row in rows]

    def _run_infos(self, thread_id: str) -> list[RunInfo]:
        with self._db(f"listing the runs of thread {thread_id!r}") as conn:
            rows = conn.execute(self._sql(self._RUNS), (thread_id,)).fetchall()
        return [
            RunInfo(thread_id=thread_id, run_id=r, first_step=a, last_step=b, events=n)
            for r, a, b, n in rows
        ]

    def _delete(self, thread_id: str) -> bool:
        with self._db(f"deleting thread {thread_id!r}", "write") as conn:
            conn.execute(self._sql(self._DROP_EVENTS), (thread_id,))
            for table in ("{snapshots}", "{threads}"):
                sql = self._sql(f"DELETE FROM {table} WHERE thread_id = ?")
                gone = conn.execute(sql, (thread_id,)).rowcount
        return bool(gone)

    def _create(
        self, thread_id: str, snapshot: SnapshotRow, parent: tuple[str, int] | None, now: float
    ) -> None:
        pt, ps = (None, None) if parent is None else parent
        with self._db(f"creating thread {thread_id!r}", "write") as conn:
            step = snapshot[0]
            args = {"t": thread_id, "first": step, "last": step, "now": now, "pt": pt, "ps": ps}
            if not conn.execute(self._sql(self._NEW_THREAD), args).rowcount:
                known = self._info(conn, thread_id)
                raise exists(thread_id, 0 if known is None else known.last_step)
            conn.execute(self._sql(_PUT_SNAPSHOT), (thread_id, *snapshot))

    def _prune_rows(self, thread_id: str, cut: int, snapshot: SnapshotRow | None) -> int:
        with self._db(f"pruning thread {thread_id!r}", "write") as conn:
            if snapshot is not None:
                conn.execute(self._sql(_PUT_SNAPSHOT), (thread_id, *snapshot))
            gone: int = conn.execute(self._sql(self._PRUNE_EVENTS), (thread_id, cut)).rowcount
            sql = self._sql("DELETE FROM {snapshots} WHERE thread_id = ? AND step < ?")
            conn.execute(sql, (thread_id, cut))
            sql = self._sql("UPDATE {threads} SET first_step = ? WHERE thread_id = ?")
            conn.execute(sql, (cut, thread_id))
        return gone

    def _info(self, conn: Any, thread_id: str) -> ThreadInfo | None:
        sql = self._sql(f"{self._THREADS} WHERE t.thread_id = ?")
        row = conn.execute(sql, (thread_id,)).fetchone()
        return None if row is None else ThreadInfo(**dict(zip(_THREAD_FIELDS, row, strict=True)))
