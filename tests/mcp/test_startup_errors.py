"""``weft mcp`` started wrong: a weft message on stderr, exit code 2, no traceback, nothing
served and nothing created."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest
from mcp_helpers import PG, run_weft, seed_thread


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return seed_thread(tmp_path / "weft.db")


def refused(*args: str, cwd: Path) -> str:
    done = run_weft("mcp", *args, cwd=cwd)
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert "Traceback" not in done.stderr
    assert done.stdout == ""
    assert done.stderr.startswith("weft mcp: ")
    return done.stderr


def test_a_missing_file(tmp_path: Path) -> None:
    says = refused("--db", "typo.db", "--thread", "notes", cwd=tmp_path)
    assert "typo.db: no such SQLite file" in says
    assert not (tmp_path / "typo.db").exists()


def test_the_default_file_when_there_is_none(tmp_path: Path) -> None:
    says = refused("--thread", "notes", cwd=tmp_path)
    assert ".weft/weft.db: no such SQLite file" in says
    assert not (tmp_path / ".weft").exists()


def test_a_file_that_is_not_a_database(tmp_path: Path) -> None:
    (tmp_path / "notes.md").write_text("# my notes\n" * 200)
    assert "notes.md" in refused("--db", "notes.md", "--thread", "notes", cwd=tmp_path)


def test_a_thread_that_does_not_exist(db: Path) -> None:
    says = refused("--db", str(db), "--thread", "note", cwd=db.parent)
    assert "thread 'note' does not exist" in says
    assert "'notes'" in says


def test_an_unknown_transport(db: Path) -> None:
    says = refused("--db", str(db), "--thread", "notes", "--transport", "sse", cwd=db.parent)
    assert "transport='sse': expected 'stdio' or 'http'" in says


def test_a_port_that_is_taken(db: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = str(taken.getsockname()[1])
        args = ("--db", str(db), "--thread", "notes", "--transport", "http", "--port", port)
        says = refused(*args, cwd=db.parent)
    assert f"cannot listen on 127.0.0.1:{port}" in says


def test_a_url_that_is_no_database(tmp_path: Path) -> None:
    says = refused("--db", "mysql://me@127.0.0.1/x", "--thread", "notes", cwd=tmp_path)
    assert "unknown kind of database URL" in says


def test_a_postgres_database_that_does_not_exist(tmp_path: Path) -> None:
    dsn = PG.rsplit("/", 1)[0] + "/weft_no_such_database"
    says = refused("--db", dsn, "--thread", "notes", cwd=tmp_path)
    assert "PostgreSQL 127.0.0.1:5432/weft_no_such_database" in says
    assert 'database "weft_no_such_database" does not exist' in says


def test_a_dsn_that_does_not_parse(tmp_path: Path) -> None:
    says = refused("--db", "postgresql://[::1", "--thread", "notes", cwd=tmp_path)
    assert "not a PostgreSQL DSN" in says


def test_the_command_is_listed_with_its_options() -> None:
    from typer.testing import CliRunner

    from weft.cli import app

    runner = CliRunner()
    assert "mcp" in runner.invoke(app, ["--help"]).output
    shown = runner.invoke(app, ["mcp", "--help"], terminal_width=200).output
    for option in ("--db", "--thread", "--transport", "--host", "--port", "--create"):
        assert option in shown
