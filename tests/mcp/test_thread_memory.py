"""``ThreadMemory`` without MCP: the thread the server serves, shared with other writers."""

from __future__ import annotations

from pathlib import Path

import pytest
from mcp_helpers import seed_thread

from weft.errors import PersistError, StorageError
from weft.mcp import ThreadMemory, client_source, open_backend


def test_a_stale_server_reads_what_another_process_wrote(tmp_path: Path) -> None:
    db = seed_thread(tmp_path / "weft.db")
    a, b = ThreadMemory.open(db, "notes"), ThreadMemory.open(db, "notes")
    try:
        a.call("memory_write", {"key": "n", "value": 1}, source="mcp:a")
        read = b.call("memory_read", {"keys": ["n"]})
    finally:
        a.close()
        b.close()
    assert read["entries"]["shared:n"]["value"] == 1


def test_a_write_that_loses_the_race_is_made_again_on_the_newer_thread(tmp_path: Path) -> None:
    db = seed_thread(tmp_path / "weft.db")
    a, b = ThreadMemory.open(db, "notes"), ThreadMemory.open(db, "notes")
    try:
        a.call("memory_write", {"key": "first", "value": 1}, source="mcp:a")
        # b's tools, called without the catch-up a call does: its append conflicts
        written = b.tools.memory_write({"key": "second", "value": 2}, source="mcp:b")
        both = a.call("memory_read", {"keys": ["first", "second"]})
    finally:
        a.close()
        b.close()
    assert written["ok"], written
    assert both["entries"]["shared:first"]["value"] == 1
    assert both["entries"]["shared:second"]["source"] == "mcp:b"


def test_a_thread_that_does_not_exist_is_named_with_the_ones_that_do(tmp_path: Path) -> None:
    db = seed_thread(tmp_path / "weft.db")
    with pytest.raises(PersistError, match=r"thread 'nots' does not exist .* 'notes'.*--create"):
        ThreadMemory.open(db, "nots")


def test_a_missing_file_is_not_created_unless_asked(tmp_path: Path) -> None:
    with pytest.raises(PersistError, match="no such SQLite file"):
        open_backend(tmp_path / "typo.db")
    assert not (tmp_path / "typo.db").exists()


@pytest.mark.parametrize(
    ("db", "says"),
    [
        ("mysql://u@h/db", "unknown kind of database URL"),
        (".", "is a folder"),
    ],
)
def test_a_wrong_database_is_a_persist_error(db: str, says: str) -> None:
    with pytest.raises(PersistError, match=says):
        open_backend(db)


def test_a_file_that_is_not_sqlite_is_a_storage_error(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("not a database, just text " * 100)
    with pytest.raises(StorageError, match=r"notes\.txt"):
        open_backend(tmp_path / "notes.txt")


@pytest.mark.parametrize(
    ("name", "session", "source"),
    [
        ("Claude Desktop", "s1", "mcp:Claude Desktop"),
        ("  two\nlines\x00 ", None, "mcp:two lines"),
        ("x" * 100, None, "mcp:" + "x" * 64),
        ("\ud800bad", None, "mcp:?bad"),
        ("", "4f2a", "mcp:session-4f2a"),
        (None, None, "mcp:session-unknown"),
    ],
)
def test_the_source_of_a_client(name: str | None, session: str | None, source: str) -> None:
    assert client_source(name, session) == source
