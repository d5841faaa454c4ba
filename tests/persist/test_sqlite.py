"""The SQLite file: where it goes, how it is opened, and what a damaged one does."""

from __future__ import annotations

import gc
import os
import random
import sqlite3
import threading
import time
from collections.abc import Callable
from contextlib import closing
from pathlib import Path

import pytest

from weft.errors import ConflictError, FutureFormatError, PersistError, StorageError
from weft.persist import DurableRun, SQLiteBackend, migrations
from weft.persist.sqlite import Checkpointer
from weft.store import Event


def _fill(path: Path, threads: int = 20, steps: int = 30) -> None:
    with SQLiteBackend(path) as backend:
        for t in range(threads):
            for s in range(1, steps + 1):
                backend.append(f"t{t}", "r1", s - 1, [
                    Event(s, "write", "state", f"k{s}", "x" * 200, None, "replace", 1.0)
                ])  # fmt: skip


def test_the_default_file_is_under_dot_weft(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    with SQLiteBackend() as backend:
        assert backend.location == os.path.join(".weft", "weft.db")
    assert (tmp_path / ".weft" / "weft.db").exists()


def test_the_file_is_in_wal_mode_with_normal_sync(tmp_path: Path) -> None:
    with SQLiteBackend(tmp_path / "w.db") as backend, backend._guard("test") as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert conn.execute("PRAGMA synchronous").fetchone()[0] == 1  # NORMAL
    with SQLiteBackend(tmp_path / "w.db", synchronous="FULL") as backend, backend._guard("t") as c:
        assert c.execute("PRAGMA synchronous").fetchone()[0] == 2
    with pytest.raises(PersistError, match="synchronous='OFF'"):
        SQLiteBackend(tmp_path / "w.db", synchronous="OFF")  # type: ignore[arg-type]


def test_a_file_that_is_not_a_database_is_a_clear_error_and_stays_untouched(
    tmp_path: Path,
) -> None:
    path = tmp_path / "notes.db"
    path.write_bytes(b"these are my notes, not a database\n" * 200)
    before = path.read_bytes()
    with pytest.raises(StorageError, match=rf"{path}.*not a database.*weft changed nothing"):
        SQLiteBackend(path)
    assert path.read_bytes() == before


def test_a_truncated_file_is_a_clear_error_naming_it(tmp_path: Path) -> None:
    path = tmp_path / "weft.db"
    _fill(path)
    size = path.stat().st_size
    with path.open("r+b") as f:
        f.truncate(size // 2)
    truncated = path.read_bytes()

    def load_everything() -> None:
        with SQLiteBackend(path) as backend:
            for info in backend.threads():
                backend.load(info.thread_id)

    with pytest.raises(StorageError, match=rf"SQLite database {path}.*malformed"):
        load_everything()
    assert path.read_bytes()[: len(truncated)] == truncated


def test_garbage_over_some_pages_fails_only_what_reads_them(tmp_path: Path) -> None:
    path = tmp_path / "weft.db"
    _fill(path, threads=40)
    with path.open("r+b") as f:  # scribble over pages in the middle of the file
        f.seek(path.stat().st_size // 2)
        f.write(os.urandom(8192))
    loaded, errors = 0, []
    with SQLiteBackend(path) as backend:
        for t in range(40):
            try:
                backend.load(f"t{t}")
                loaded += 1
            except StorageError as exc:
                errors.append(str(exc))
    assert loaded > 0 and loaded + len(errors) == 40
    assert all(str(path) in error for error in errors)


def test_a_database_from_a_newer_weft_is_refused_unchanged(tmp_path: Path) -> None:
    path = tmp_path / "weft.db"
    SQLiteBackend(path).close()
    with sqlite3.connect(path) as conn:
        conn.execute("PRAGMA user_version = 99")
    conn.close()
    newest = len(migrations.SQLITE)
    with pytest.raises(FutureFormatError, match=rf"schema version 99.*up to {newest}.*Upgrade"):
        SQLiteBackend(path)


def test_a_committed_step_is_on_disk_when_append_returns(tmp_path: Path) -> None:
    path = tmp_path / "weft.db"
    with SQLiteBackend(path) as backend:
        run = DurableRun.open(backend, "t")
        run.store.write("state", "x", 1)
        # another connection (as another process would) sees it before anything is closed
        with sqlite3.connect(path) as other:
            assert other.execute("SELECT count(*) FROM weft_events").fetchone()[0] == 1
        other.close()
        run.close()


def test_the_file_holds_the_event_log_tables_only(tmp_path: Path) -> None:
    with SQLiteBackend(tmp_path / "w.db") as backend, backend._guard("test") as conn:
        names = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    assert names == {"weft_threads", "weft_events", "weft_snapshots"}


def _old_file(path: Path) -> None:
    """A file as weft wrote it before its events were numbered rows (schema version 1):
    two threads whose events interleave, one forked from the other, and one pruned."""
    with sqlite3.connect(path) as conn:
        for statement in migrations.SQLITE[0].split(";"):
            if statement.strip():
                conn.execute(statement)
        conn.execute("PRAGMA user_version = 1")
        threads = [("b", 0, 2.0, None, None), ("a", 0, 1.0, None, None), ("c", 2, 3.0, "a", 2)]
        conn.executemany("INSERT INTO weft_threads VALUES (?, ?, ?, ?, ?)", threads)
        rows = []
        for step in range(1, 5):
            for thread in ("a", "b"):
                record = (
                    f'{{"v":1,"op":"write","kind":"state","path":"{thread}{step}",'
                    f'"time":{step}.5,"value":{step}}}'
                )
                rows.append((thread, step, "r1" if step < 3 else "r2", record))
        rows.append(("c", 3, "r3", '{"v":1,"op":"write","kind":"state","path":"x","time":9.0}'))
        conn.executemany("INSERT INTO weft_events VALUES (?, ?, ?, ?)", rows)
        snapshot = '{"v":1,"step":2,"entries":[],"reducers":{}}'
        conn.execute("INSERT INTO weft_snapshots VALUES ('c', 2, ?)", (snapshot,))
    conn.close()


def test_a_file_of_the_first_schema_is_migrated_with_every_thread_and_event(
    tmp_path: Path,
) -> None:
    path = tmp_path / "old.db"
    _old_file(path)
    with SQLiteBackend(path) as backend:
        threads = backend.threads()
        assert [(t.thread_id, t.first_step, t.last_step, t.updated_at) for t in threads] == [
            ("a", 0, 4, 4.5),
            ("b", 0, 4, 4.5),
            ("c", 2, 3, 9.0),
        ]  # fmt: skip
        assert [e.event.path for e in backend.history("a")] == ["a1", "a2", "a3", "a4"]
        assert [e.event.path for e in backend.history("b", after=1, upto=3)] == ["b2", "b3"]
        assert [(r.run_id, r.first_step, r.last_step, r.events) for r in backend.runs("b")] == [
            ("r1", 1, 2, 2),
            ("r2", 3, 4, 2),
        ]
        assert backend.thread("c").parent_thread == "a"  # type: ignore[union-attr]
        # the migrated threads go on where they stopped, and new ones after them
        backend.append("a", "r4", 4, [Event(5, "write", "state", "a5", 5, None, "replace", 6.0)])
        backend.append("new", "r5", 0, [Event(1, "write", "state", "n", 1, None, "replace", 7.0)])
        assert [e.event.path for e in backend.history("a", after=3)] == ["a4", "a5"]
        assert backend.last_step("new") == 1 and backend.last_step("b") == 4
        assert backend.delete_thread("a") and backend.history("a") == []
        assert [e.event.path for e in backend.history("b")] == ["b1", "b2", "b3", "b4"]
    with sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == len(migrations.SQLITE)
    conn.close()


def test_a_thread_past_the_last_step_an_sqlite_thread_holds_is_refused(tmp_path: Path) -> None:
    from weft.persist.sqlite import MAX_STEP

    with SQLiteBackend(tmp_path / "w.db") as backend:
        backend.append("t", "r", 0, [Event(1, "write", "state", "k", 1, None, "replace", 1.0)])
        late = Event(MAX_STEP + 1, "write", "state", "k", 2, None, "replace", 1.0)
        with pytest.raises(PersistError, match="would pass step 4,294,967,295"):
            backend.append("t", "r", 1, [late])
        assert backend.last_step("t") == 1  # nothing written, nothing lost


def _event(step: int, value: object = "v") -> list[Event]:
    return [Event(step, "write", "state", "k", value, None, "replace", 1.0)]


def _statements_of(backend: SQLiteBackend, append: Callable[[], object]) -> list[str]:
    """The statements ``append`` ran on the backend's connection (not the parts SQLite
    runs inside one, which its trace shows as ``-- ...``)."""
    seen: list[str] = []
    backend._conn.set_trace_callback(seen.append)
    try:
        append()
    finally:
        backend._conn.set_trace_callback(None)
    return [statement for statement in seen if not statement.startswith("--")]


def test_a_writer_that_knows_the_thread_appends_in_one_statement(tmp_path: Path) -> None:
    with SQLiteBackend(tmp_path / "w.db") as backend:
        first = _statements_of(backend, lambda: backend.append("t", "r", 0, _event(1)))
        assert len(first) > 1  # a new thread: made in a transaction
        again = _statements_of(backend, lambda: backend.append("t", "r", 1, _event(2)))
        assert len(again) == 1 and again[0].startswith("INSERT")
        assert "weft_events AS" not in again[0]  # it reads nothing of the events table
        assert [e.event.seq for e in backend.history("t")] == [1, 2]


def test_appends_to_threads_taken_in_turn_stay_one_statement_each(tmp_path: Path) -> None:
    with SQLiteBackend(tmp_path / "w.db") as backend:
        backend.append("a", "r", 0, _event(1))
        backend.append("b", "r", 0, _event(1))  # a new thread: it forgets nothing of "a"
        for step in (2, 3):
            for thread in ("a", "b"):
                done = _statements_of(backend, lambda t=thread, s=step: backend.append(
                    t, "r", s - 1, _event(s)
                ))  # fmt: skip
                assert len(done) == 1, (thread, step, done)
        assert backend.last_step("a") == backend.last_step("b") == 3


def test_another_connection_s_append_is_a_conflict_even_when_the_next_step_is_free(
    tmp_path: Path,
) -> None:
    """Steps may skip numbers, so the step a stale writer appends can be free: what it
    knows of the thread is checked against every other connection's commits."""
    with SQLiteBackend(tmp_path / "w.db") as a, SQLiteBackend(tmp_path / "w.db") as b:
        a.append("t", "a", 0, _event(1))
        a.append("t", "a", 1, _event(2))  # a knows the thread: its one-statement append
        b.append("t", "b", 2, _event(7, "b"))  # b skips steps 3 to 6
        with pytest.raises(ConflictError) as info:
            a.append("t", "a", 2, _event(3, "late"))
        assert (info.value.expected, info.value.actual) == (2, 7)
        assert [(e.event.seq, e.event.value) for e in a.history("t")] == [
            (1, "v"), (2, "v"), (7, "b"),
        ]  # fmt: skip
        a.append("t", "a", 7, _event(8))  # after reloading, it goes on
        a.append("t", "a", 8, _event(9))
        assert b.last_step("t") == 9


def test_a_thread_deleted_and_begun_again_elsewhere_is_a_conflict(tmp_path: Path) -> None:
    with SQLiteBackend(tmp_path / "w.db") as a, SQLiteBackend(tmp_path / "w.db") as b:
        for step in (1, 2, 3):
            a.append("t", "a", step - 1, _event(step))
        assert b.delete_thread("t")
        b.append("t", "b", 0, _event(1, "new"))  # likely under the thread's old number
        with pytest.raises(ConflictError) as info:
            a.append("t", "a", 3, _event(4))
        assert (info.value.expected, info.value.actual) == (3, 1)
        assert [e.event.value for e in b.history("t")] == ["new"]


def test_a_writer_s_own_delete_and_prune_are_known_to_its_next_append(tmp_path: Path) -> None:
    with SQLiteBackend(tmp_path / "w.db") as backend:
        for step in (1, 2, 3):
            backend.append("t", "r", step - 1, _event(step))
        assert backend.delete_thread("t")
        with pytest.raises(ConflictError):
            backend.append("t", "r", 3, _event(4))
        assert backend.thread("t") is None  # nothing written for a deleted thread
        for step in (1, 2, 3, 4):
            backend.append("u", "r", step - 1, _event(step))
        backend.prune("u", keep_last=1)
        backend.append("u", "r", 4, _event(5))
        assert [e.event.seq for e in backend.history("u")] == [4, 5]


def test_other_connections_commits_elsewhere_leave_an_append_one_statement(
    tmp_path: Path,
) -> None:
    """Another process or backend appends to other threads of the file, and long-term
    memory writes its own tables: the writer's thread is still its claim."""
    from weft.memory import LongTermMemory, Owner, SQLiteMemoryBackend

    with (
        SQLiteBackend(tmp_path / "w.db") as a,
        SQLiteBackend(tmp_path / "w.db") as b,
        SQLiteMemoryBackend(tmp_path / "w.db") as rows,
    ):
        memory = LongTermMemory(rows, owner=Owner(user_id="ada"))
        a.append("t", "a", 0, _event(1))
        for step in (2, 3, 4):
            b.append("other", "b", step - 2, _event(step - 1))
            memory.put("facts", f"k{step}", {"step": step})  # its own connection
            done = _statements_of(a, lambda s=step: a.append("t", "a", s - 1, _event(s)))
            assert len(done) == 1 and "weft_events AS" not in done[0], done
        assert [e.event.seq for e in b.history("t")] == [1, 2, 3, 4]


def test_another_backend_s_append_takes_the_thread_and_the_next_one_learns_it_again(
    tmp_path: Path,
) -> None:
    with SQLiteBackend(tmp_path / "w.db") as a, SQLiteBackend(tmp_path / "w.db") as b:
        a.append("t", "a", 0, _event(1))
        b.append("t", "b", 1, _event(2, "b"))  # b learns the thread and claims it
        done = _statements_of(a, lambda: a.append("t", "a", 2, _event(3)))
        assert len(done) > 2  # the one INSERT wrote nothing; the transaction learnt the thread
        done = _statements_of(a, lambda: a.append("t", "a", 3, _event(4)))
        assert len(done) == 1
        with pytest.raises(ConflictError) as info:  # b's claim went to a: b reads again
            b.append("t", "b", 2, _event(3, "late"))
        assert (info.value.expected, info.value.actual) == (2, 4)
        assert [(e.event.seq, e.event.value) for e in b.history("t")] == [
            (1, "v"), (2, "b"), (3, "v"), (4, "v"),
        ]  # fmt: skip


def test_a_thread_deleted_elsewhere_whose_number_went_to_a_new_thread_of_the_writer(
    tmp_path: Path,
) -> None:
    """The writer's claim is on the thread's number *and* id: a new thread of its own
    under the deleted thread's number takes none of the old thread's appends."""
    with SQLiteBackend(tmp_path / "w.db") as a, SQLiteBackend(tmp_path / "w.db") as b:
        for step in (1, 2):
            a.append("t", "a", step - 1, _event(step))
        assert b.delete_thread("t")
        a.append("u", "a", 0, _event(1, "u"))  # most likely the number "t" had
        with pytest.raises(ConflictError):
            a.append("t", "a", 2, _event(3))
        assert a.thread("t") is None
        assert [(e.event.seq, e.event.value) for e in a.history("u")] == [(1, "u")]


def test_a_backend_opened_on_a_thread_learns_it_at_its_first_append(tmp_path: Path) -> None:
    with SQLiteBackend(tmp_path / "w.db") as backend:
        backend.append("t", "r", 0, _event(1))
    with SQLiteBackend(tmp_path / "w.db") as backend:
        assert len(_statements_of(backend, lambda: backend.append("t", "r", 1, _event(2)))) > 1
        assert len(_statements_of(backend, lambda: backend.append("t", "r", 2, _event(3)))) == 1
        assert [e.event.seq for e in backend.history("t")] == [1, 2, 3]


def _checkpointers() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith("weft checkpoints")]


def _commit(backend: SQLiteBackend, thread: str, steps: int, size: int = 1000) -> None:
    for s in range(1, steps + 1):
        backend.append(thread, "r1", s - 1, [
            Event(s, "write", "state", f"k{s}", "x" * size, None, "replace", 1.0)
        ])  # fmt: skip


def _eventually(check: Callable[[], bool], seconds: float = 10.0) -> bool:
    deadline = time.monotonic() + seconds
    while not check():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


def test_at_normal_the_wal_is_copied_into_the_database_off_the_committing_thread(
    tmp_path: Path,
) -> None:
    path = tmp_path / "w.db"
    with SQLiteBackend(path) as backend:
        assert _checkpointers() == []  # none before the first commit
        _commit(backend, "t", 300)  # ~300 WAL pages: under the writer's own 4,000
        # the database file grows only when a checkpoint copies pages into it, and nothing
        # on the committing side makes one this early
        assert _eventually(lambda: path.stat().st_size > 300 * 1000)
        assert [t.daemon for t in _checkpointers()] == [True]
        with closing(sqlite3.connect(path)) as other:  # a reader sees every commit meanwhile
            assert other.execute("SELECT count(*) FROM weft_events").fetchone()[0] == 300
    assert _checkpointers() == []  # close() stopped it and waited for it
    with SQLiteBackend(path) as backend:
        assert backend.last_step("t") == 300


def test_at_full_and_in_memory_the_writer_checkpoints_as_sqlite_does(tmp_path: Path) -> None:
    with SQLiteBackend(tmp_path / "w.db", synchronous="FULL") as backend:
        _commit(backend, "t", 50)
        assert _checkpointers() == []
        with backend._guard("test") as conn:
            assert conn.execute("PRAGMA wal_autocheckpoint").fetchone()[0] == 1000
    with SQLiteBackend(":memory:") as backend:
        _commit(backend, "t", 50)
        assert _checkpointers() == []


def test_a_backend_dropped_unclosed_stops_its_checkpointer(tmp_path: Path) -> None:
    backend = SQLiteBackend(tmp_path / "w.db")
    _commit(backend, "t", 20)
    assert len(_checkpointers()) == 1
    del backend
    gc.collect()
    assert _eventually(lambda: _checkpointers() == [])


def test_a_file_removed_under_an_open_backend_is_not_created_again_by_its_checkpointer(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "gone"
    folder.mkdir()
    with SQLiteBackend(folder / "w.db") as backend:
        for f in folder.iterdir():  # before the first commit: no checkpointer yet
            f.unlink()
        _commit(backend, "t", 5)  # to the unlinked file, through the open connection
        time.sleep(4 * Checkpointer.DELAY)
        assert not (folder / "w.db").exists()


def test_close_returns_promptly_whenever_it_comes_in_the_checkpointer_s_cycle(
    tmp_path: Path,
) -> None:
    rng = random.Random(7)
    for n in range(40):
        backend = SQLiteBackend(tmp_path / f"w{n}.db")
        _commit(backend, "t", 2, size=10)
        time.sleep(rng.uniform(0.0, 1.2 * Checkpointer.DELAY))
        began = time.monotonic()
        backend.close()
        assert time.monotonic() - began < 2.0
        assert _checkpointers() == []
