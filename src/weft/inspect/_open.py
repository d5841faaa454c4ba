"""What ``Reader.open`` checks before it opens a database by name: reading never creates a
SQLite file, nor weft's tables in a file or a PostgreSQL schema that has none."""

from __future__ import annotations

from contextlib import closing
from pathlib import Path
from typing import Final

from weft.errors import PersistError, StorageError
from weft.persist.sqlite import DEFAULT_PATH

_NO_THREADS: Final = "it holds no weft event log"


def check_file(path: Path) -> None:
    """A SQLite file weft's runs wrote: reading one never creates it, nor weft's tables in
    another program's database (a ``PersistError``, or a ``StorageError`` for a file that
    is not SQLite)."""
    import sqlite3

    if not path.exists():
        raise PersistError(
            f"database {path}: no such SQLite file. Give the file your runs write (weft's "
            f"default is {DEFAULT_PATH}, in the folder they ran in) or a postgresql:// DSN"
        )
    if path.is_dir():
        return  # open_backend says it is a folder
    try:
        with closing(sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)) as conn:
            found = conn.execute(
                "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'weft_threads'"
            ).fetchone()
    except sqlite3.Error as exc:
        raise StorageError(
            f"SQLite database {path}: cannot be read ({exc}); give the file your runs write"
        ) from exc
    if found is None:
        raise PersistError(
            f"database {path}: {_NO_THREADS} (no weft tables); give the file your runs write "
            f"(weft's default is {DEFAULT_PATH})"
        )


def check_schema(dsn: str, schema: str) -> None:
    """weft's tables are in ``schema`` (reading never creates them: a schema spelled wrong
    is said, not made). A server that cannot be reached is left to ``open_backend``, which
    says why in the server's words."""
    try:
        import psycopg
    except ImportError:
        return  # open_backend says how to install it
    try:
        conn = psycopg.connect(dsn, connect_timeout=5)
    except psycopg.Error:
        return
    try:
        with conn:
            found = conn.execute(
                "SELECT 1 FROM information_schema.tables "
                "WHERE table_schema = %s AND table_name = 'threads'",
                (schema,),
            ).fetchone()
    except psycopg.Error as exc:
        raise StorageError(f"PostgreSQL: cannot read schema {schema!r}: {exc}") from exc
    if found is None:
        raise PersistError(
            f"PostgreSQL schema {schema!r}: {_NO_THREADS}; give the schema your runs write "
            "(--schema, default weft)"
        )
