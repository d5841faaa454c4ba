"""The SQLite backend: the embedded default (standard library ``sqlite3``, WAL).

One file holds every thread's event log and its snapshots (``weft.memory`` keeps
long-term memory in it too, in tables of its own); the default is ``./.weft/weft.db``,
created on first use. The database runs in WAL mode with ``synchronous=NORMAL``: a
committed step survives the process being killed (the WAL is written before the commit
returns), and a power loss may lose the last commits but never corrupts the file. Pass
``synchronous="FULL"`` to survive power loss too (an fsync per commit: slower).

At ``NORMAL`` an event-log backend copies its WAL back into the database on a thread
of its own (``PRAGMA wal_checkpoint(PASSIVE)``, at most every 50 ms while commits come
in, none while idle), so that a commit does not wait for the checkpoint's syncs; its own
connection still checkpoints when the WAL reaches 4,000 pages (16 MB), a ceiling the
thread keeps it under in practice. At ``FULL`` every commit syncs the WAL anyway and
SQLite's own checkpoint every 1,000 pages costs little, so nothing runs beside it.

One connection per backend object, shared by its threads under a lock; several
processes may open the same file (writers take SQLite's write lock in turn, waiting up
to ``timeout`` seconds). An append is refused (``ConflictError``) unless the thread's
last step is the one its writer expected. Every append claims its thread for the
backend that made it (the thread's ``writer``); while a backend's claim holds, no other
connection has appended to the thread since, so the last step it remembers is the
thread's, and its append is one ``INSERT`` that checks the claim and reads nothing of
the events table. Another writer's append to the thread takes the claim, and the next
append here reads the thread again in a transaction. Every database failure is a
``StorageError`` naming the file; a damaged file is never written to or "repaired" by
weft.

>>> import tempfile, pathlib
>>> from weft.persist import SQLiteBackend
>>> path = pathlib.Path(tempfile.mkdtemp()) / "weft.db"
>>> with SQLiteBackend(path) as backend:
...     backend.last_step("chat-1")
0
"""

from __future__ import annotations

import os
import secrets
import sqlite3
import threading
import time
import weakref
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, suppress
from functools import cached_property
from pathlib import Path
from typing import Final, Literal

from weft.errors import PersistError, StorageError
from weft.persist import migrations
from weft.persist.base import EventRow, SnapshotRow, conflict
from weft.persist.sql import Mode, SQLBackend
from weft.store import TypeRegistry, registry

DEFAULT_PATH: Final = Path(".weft") / "weft.db"
Synchronous = Literal["NORMAL", "FULL"]

TABLES: Final = {
    name: f"weft_{name}" for name in ("threads", "events", "snapshots", "memory", "memory_owners")
}
# A thread's events are the rows numbered (thread number << 32) + step (migration 2).
MAX_STEP: Final = (1 << 32) - 1
_OF_THREAD: Final = "(SELECT num << 32 AS base FROM weft_threads WHERE thread_id = ?) AS t"
_IN_THREAD: Final = "e.seq > t.base AND e.seq <= t.base + 4294967295"
_INSERT: Final = (  # step, run, record, thread
    "INSERT INTO weft_events (seq, run_id, record) "
    "SELECT (num << 32) + ?, ?, ? FROM weft_threads WHERE thread_id = ?"
)
_LAST_STEP: Final = (  # the thread's newest event's step, its first step, its rows' base
    "SELECT (SELECT max(e.seq) - t.base FROM weft_events AS e WHERE " + _IN_THREAD + "), "
    "t.first_step, t.base FROM (SELECT num << 32 AS base, first_step FROM weft_threads "
    "WHERE thread_id = :thread) AS t"
)


class SQLiteFile:
    """One connection to an SQLite file, shared under a lock (see the module docstring):
    what the event-log and the long-term memory backends of a file have in common."""

    _WHAT: str
    _SCRIPTS: Sequence[str]
    _VERSIONS: str | None = None
    _CHECKPOINTS_APART = False  # whether a thread checkpoints the WAL (see the module)
    _checkpoints: Checkpointer | None = None
    path: Path
    _conn: sqlite3.Connection

    def __init__(
        self,
        path: str | Path | None = None,
        *,
        synchronous: Synchronous = "NORMAL",
        timeout: float = 30.0,
        types: TypeRegistry = registry,
    ) -> None:
        if synchronous not in ("NORMAL", "FULL"):
            raise PersistError(f"synchronous={synchronous!r}: expected 'NORMAL' or 'FULL'")
        if path is not None and not isinstance(path, (str, os.PathLike)):
            raise PersistError(f"path={path!r:.60}: expected the path of a SQLite file (a str)")
        self.types = types
        self.path = DEFAULT_PATH if path is None else Path(path)
        self.synchronous = synchronous
        self._lock = threading.RLock()
        in_memory = str(self.path) == ":memory:"
        checkpoints = None
        if self._CHECKPOINTS_APART and synchronous == "NORMAL" and not in_memory:
            checkpoints = self._checkpoints = Checkpointer(self.path.resolve(), timeout)
        if not in_memory:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            self._conn = sqlite3.connect(
                str(self.path), timeout=timeout, isolation_level=None, check_same_thread=False
            )
        except sqlite3.Error as exc:
            raise self._error(f"opening the {self._WHAT}", exc) from exc
        try:
            with self._guard(f"opening the {self._WHAT}") as conn:
                if not in_memory:
                    conn.execute("PRAGMA journal_mode=WAL")
                conn.execute(f"PRAGMA synchronous={synchronous}")
                if checkpoints is not None:
                    conn.execute(f"PRAGMA wal_autocheckpoint={Checkpointer.CEILING}")
            self._migrate()
        except BaseException:
            self._conn.close()
            raise
        self._finalizer = weakref.finalize(self, _close, self._conn, checkpoints)

    def _migrate(self) -> None:
        """Apply the migrations ``_SCRIPTS`` not applied yet, counted in the table
        ``_VERSIONS`` (or in ``PRAGMA user_version``)."""
        scripts, versions = self._SCRIPTS, self._VERSIONS
        with self._db(f"creating or upgrading the {self._WHAT} tables", "write") as conn:
            if versions is None:
                version = conn.execute("PRAGMA user_version").fetchone()[0]
            else:
                conn.execute(
                    f"CREATE TABLE IF NOT EXISTS {versions} "
                    "(version INTEGER PRIMARY KEY, applied_at REAL NOT NULL)"
                )
                version = conn.execute(f"SELECT coalesce(max(version), 0) FROM {versions}")
                version = version.fetchone()[0]
            where = f"SQLite database {self.path}"
            migrations.check_version(where, self._WHAT, version, len(scripts))
            for number in range(version + 1, len(scripts) + 1):
                for statement in _statements(scripts[number - 1]):
                    conn.execute(statement)
                if versions is None:
                    conn.execute(f"PRAGMA user_version = {number}")
                else:
                    conn.execute(
                        f"INSERT INTO {versions} (version, applied_at) VALUES (?, ?)",
                        (number, time.time()),
                    )

    @property
    def location(self) -> str:
        return str(self.path)

    def close(self) -> None:
        with self._lock:
            self._finalizer()

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {str(self.path)!r}>"

    def _sql(self, statement: str) -> str:
        return statement.format_map(TABLES)

    @contextmanager
    def _guard(self, what: str) -> Iterator[sqlite3.Connection]:
        """The connection under the lock; a database failure becomes a ``StorageError``."""
        with self._lock:
            try:
                yield self._conn
            except sqlite3.Error as exc:
                raise self._error(what, exc) from exc

    @contextmanager
    def _db(self, what: str, mode: Mode = "read") -> Iterator[sqlite3.Connection]:
        with self._guard(what) as conn:
            if mode == "read":
                yield conn
                return
            conn.execute("BEGIN IMMEDIATE" if mode == "write" else "BEGIN")
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
            hint = "this backend was closed; open a new one on the file"
        elif "readonly" in text or "unable to open" in text:
            hint = "check that the path exists and is writable by this process"
        else:
            hint = "see the SQLite message above"
        return StorageError(f"SQLite database {self.path}: {what} failed: {text}; {hint}")


class SQLiteBackend(SQLiteFile, SQLBackend):
    """Threads in one SQLite file (see the module docstring)."""

    _WHAT = "event log"
    _SCRIPTS = migrations.SQLITE
    _CHECKPOINTS_APART = True

    _THREADS = (
        "SELECT t.thread_id, max(t.first_step, coalesce((SELECT max(e.seq) - t.base FROM "
        f"weft_events AS e WHERE {_IN_THREAD}), 0)), t.first_step, t.created_at, "
        "coalesce((SELECT json_extract(e.record, '$.time') FROM weft_events AS e "
        f"WHERE {_IN_THREAD} ORDER BY e.seq DESC LIMIT 1), t.created_at), "
        "t.parent_thread, t.parent_step "
        "FROM (SELECT *, num << 32 AS base FROM weft_threads) AS t"
    )
    _NEW_THREAD = (
        "INSERT INTO weft_threads (thread_id, first_step, created_at, parent_thread, "
        "parent_step) VALUES (:t, :first, :now, :pt, :ps) ON CONFLICT (thread_id) DO NOTHING"
    )
    _EVENTS = (
        f"SELECT e.seq - t.base, e.run_id, e.record FROM {_OF_THREAD} JOIN weft_events AS e "
        "ON e.seq > t.base + max(?, 0) AND e.seq <= t.base + min(?, 4294967295) ORDER BY e.seq"
    )
    _RUNS = (
        f"SELECT e.run_id, min(e.seq) - t.base, max(e.seq) - t.base, count(*) FROM {_OF_THREAD} "
        f"JOIN weft_events AS e ON {_IN_THREAD} GROUP BY e.run_id ORDER BY min(e.seq)"
    )
    _DROP_EVENTS = (
        f"DELETE FROM weft_events WHERE seq IN (SELECT e.seq FROM {_OF_THREAD} "
        f"JOIN weft_events AS e ON {_IN_THREAD})"
    )
    _PRUNE_EVENTS = (
        f"DELETE FROM weft_events WHERE seq IN (SELECT e.seq FROM {_OF_THREAD} "
        "JOIN weft_events AS e ON e.seq > t.base AND e.seq <= t.base + ?)"
    )

    # What this backend knows of the threads it claimed: thread -> (its rows' base, its last
    # step), true while the thread's row (the number in the base, the same id) still names
    # this backend as its ``writer``. Checked by the append that relies on it, so nothing
    # else (a delete, a prune, a thread begun again under the same number) needs to forget it.
    @cached_property
    def _known(self) -> dict[str, tuple[int, int]]:
        return {}

    @cached_property
    def _writer(self) -> int:
        """This backend's claim on the threads it appends to: random, never 0 or NULL."""
        return secrets.randbits(62) + 1

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
        # The hot path of every durable run is one INSERT in autocommit mode: one round
        # trip, one commit. When this backend knows the thread's last step is ``expected``,
        # the INSERT checks only that the thread is still its claim (``_CLAIMED``: a lookup
        # of the thread's row; reading the events table in an INSERT into it would make
        # SQLite copy the rows to a temporary table first, ~10-25 us a commit). Anything
        # else (a thread not known or claimed by another writer, a snapshot, a large batch,
        # a lost race) takes the transaction below, which claims the thread and learns it.
        if rows[-1][0] > MAX_STEP:
            raise PersistError(
                f"thread {thread_id!r} would pass step {MAX_STEP:,}, the most an SQLite thread "
                "holds; prune it (weft prune) or go on in a new thread"
            )
        with self._lock:
            if snapshot is None and len(rows) <= _FAST_ROWS:
                try:
                    done = self._append_claimed(thread_id, run_id, expected, rows)
                except sqlite3.Error as exc:
                    raise self._error(f"appending to thread {thread_id!r}", exc) from exc
                if done:
                    if self._checkpoints is not None:
                        self._checkpoints.due()
                    return
            with self._db(f"appending to thread {thread_id!r}", "write") as conn:
                found = conn.execute(_LAST_STEP, {"thread": thread_id}).fetchone()
                actual: int = 0 if found is None else max(found[1], found[0] or 0)
                if actual != expected:
                    raise conflict(thread_id, expected, actual)
                if found is None:
                    new = {"t": thread_id, "first": 0, "now": now, "pt": None, "ps": None}
                    conn.execute(self._NEW_THREAD, new)
                    found = conn.execute(_LAST_STEP, {"thread": thread_id}).fetchone()
                conn.execute(_CLAIM, {"thread": thread_id, "writer": self._writer})
                conn.executemany(_INSERT, _with(rows, thread_id))
                if snapshot is not None:
                    self._store_snapshot(conn, thread_id, snapshot, keep_snapshots)
            known = self._known
            if len(known) >= _KNOWN_THREADS:
                known = self._known = {}  # a bound: past it, threads are learnt again
            known[thread_id] = (found[2], rows[-1][0])
            if self._checkpoints is not None:
                self._checkpoints.due()

    def _append_claimed(
        self, thread_id: str, run_id: str, expected: int, rows: Sequence[EventRow]
    ) -> bool:
        """Append with ``_CLAIMED`` if the thread is known to be at ``expected``; False if
        that was not tried, or wrote nothing (another writer claimed the thread since)."""
        known = self._known
        found = known.get(thread_id)
        if found is None or found[1] != expected:
            return False
        base = found[0]
        args: list[object] = [base, run_id]
        for step, _run, record in rows:
            args += (step, record)
        args += (base >> 32, thread_id, self._writer)
        try:
            if not self._conn.execute(_CLAIMED[len(rows)], args).rowcount:
                return False
        except sqlite3.IntegrityError:
            return False  # a step taken: the transaction says by whom
        known[thread_id] = (base, rows[-1][0])
        return True


class Checkpointer:
    """Checkpoints an SQLite file's WAL on a thread of its own, with a connection of its
    own, a while after commits ask for it (see the module docstring): ``PASSIVE``, so it
    never blocks a writer or a reader, and a checkpoint that fails or finds the file busy
    is left to the next one or to the writer's own at ``CEILING`` pages.

    Measured on the W3 chain at ``NORMAL`` (``bench/bench_persist.py``): 35.5 -> 28.0 us a
    node (12 rounds of 8 runs, side by side), the WAL's high-water mark 4.1 -> 13.7 MB;
    checkpointing every 20 ms rather than 50 was slower (29.1), a ceiling of 2,000 pages
    too (33.4), and ``RESTART`` after the passive checkpoint slower than none (37.4): it
    holds the writer back while it syncs."""

    CEILING: Final = 4000  # pages: the writer's own checkpoints (SQLite's default: 1,000)
    DELAY: Final = 0.05  # seconds from the first commit that asks to the checkpoint

    def __init__(self, path: Path, timeout: float) -> None:
        self.path, self.timeout = path, timeout
        self._asked = threading.Event()
        self._closing = threading.Event()
        self._thread: threading.Thread | None = None

    def due(self) -> None:
        """A commit went in: checkpoint within ``DELAY`` (called under the writer's lock,
        after every commit: one test when a checkpoint is asked for already). In a process
        forked from the one that started the thread, none runs: the writer's own
        checkpoints bound the WAL (SQLite's rule is a connection per process anyway)."""
        asked = self._asked
        if not asked.is_set():
            if self._thread is None and not self._closing.is_set():
                self._thread = threading.Thread(
                    target=_checkpoint_loop,
                    args=(self.path, self.timeout, asked, self._closing, self.DELAY),
                    name=f"weft checkpoints {self.path.name}",
                    daemon=True,  # an unclosed backend does not keep the interpreter alive
                )
                self._thread.start()
            asked.set()

    def close(self) -> None:
        """Stop the thread (after the checkpoint it may be making) and wait for it."""
        self._closing.set()
        self._asked.set()
        thread, self._thread = self._thread, None
        if thread is not None and thread is not threading.current_thread():
            thread.join(self.timeout + 10.0)  # a checkpoint past that goes on, unwaited


def _checkpoint_loop(
    path: Path,
    timeout: float,
    asked: threading.Event,
    closing: threading.Event,
    delay: float,
) -> None:
    """The checkpointer's thread: a checkpoint ``delay`` after each time it is asked, until
    ``closing``. Holds nothing of the backend, so that an unclosed backend can be
    collected (its finalizer closes the checkpointer)."""
    try:  # mode=rw: never create the file (a folder removed while the backend was open)
        conn = sqlite3.connect(
            f"{path.as_uri()}?mode=rw", uri=True, timeout=timeout, isolation_level=None
        )
    except sqlite3.Error:  # the writer's own checkpoints bound the WAL
        return
    try:
        conn.execute("PRAGMA synchronous=NORMAL")
        while True:
            asked.wait()
            if closing.wait(delay):
                return
            asked.clear()
            if closing.is_set():  # close() came between the two: its wake-up was cleared
                return
            # busy, or the file went away: the next checkpoint, or the writer's, does it
            with suppress(sqlite3.Error):
                conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
    except sqlite3.Error:
        return
    finally:
        conn.close()


def _close(conn: sqlite3.Connection, checkpoints: Checkpointer | None) -> None:
    """A file's finalizer: its checkpointer stopped first, then its connection closed."""
    if checkpoints is not None:
        checkpoints.close()
    conn.close()


def _claimed(n: int) -> str:
    """One INSERT of ``n`` events that writes only while the thread's row still names this
    backend as its writer (parameters, in order: the thread's rows' base, the run, the step
    and record of each row, the thread's number and id, the writer). The statement takes
    SQLite's write lock before it reads the row, so nobody appends between the check and
    the rows. Plain ``?`` parameters from a list: binding names from a dict cost ~1.3 us
    more a commit."""
    values = ", ".join(["(?, ?)"] * n)
    return (
        "INSERT INTO weft_events (seq, run_id, record) SELECT ? + v.column1, ?, v.column2 "
        f"FROM (VALUES {values}) AS v "
        "WHERE (SELECT writer FROM weft_threads WHERE num = ? AND thread_id = ?) = ?"
    )


_CLAIM: Final = (  # an append's transaction makes its backend the thread's writer
    "UPDATE weft_threads SET writer = :writer WHERE thread_id = :thread AND writer IS NOT :writer"
)
_FAST_ROWS: Final = 8  # larger batches are rare (a merge of many writes): the transaction
_CLAIMED: Final = {n: _claimed(n) for n in range(1, _FAST_ROWS + 1)}
_KNOWN_THREADS: Final = 4096  # threads whose last step a backend remembers


def _with(rows: Sequence[EventRow], thread_id: str) -> list[tuple[int, str, str, str]]:
    """The rows with their thread, as ``_INSERT`` takes them (a function apart: inside
    ``_append_rows`` the comprehension made ``thread_id`` a cell at every append)."""
    return [(*row, thread_id) for row in rows]


def _statements(script: str) -> Iterator[str]:
    """The statements of a script, one at a time (a trigger body's ``;`` does not split)."""
    buffer = ""
    for piece in script.split(";"):
        buffer += piece + ";"
        if sqlite3.complete_statement(buffer):
            if buffer.strip(" \n;"):
                yield buffer.strip()
            buffer = ""
