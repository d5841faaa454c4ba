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

from collections.abc import Sequence
from typing import Any

from weft.memory.backends import migrations
from weft.memory.backends.base import MemoryRow, Namespaces
from weft.memory.backends.sql import COLUMNS, SQLMemoryBackend, in_namespaces, memory_row
from weft.persist.sqlite import SQLiteFile


class SQLiteMemoryBackend(SQLiteFile, SQLMemoryBackend):
    """Long-term memory rows in an SQLite file (see the module docstring)."""

    _WHAT = "long-term memory"
    _SCRIPTS = migrations.SQLITE
    _VERSIONS = "weft_memory_migrations"

    def _search_rows(
        self, owner: str, words: Sequence[str], namespaces: Namespaces, limit: int
    ) -> list[tuple[MemoryRow, float]]:
        match = " OR ".join(f'"{word}"' for word in dict.fromkeys(words))
        columns = ", ".join(f"m.{c}" for c in COLUMNS.split(", "))
        among = in_namespaces(namespaces, "m.namespace")
        sql = (
            f"SELECT {columns}, bm25(weft_memory_fts) AS rank FROM weft_memory_fts "
            "JOIN weft_memory AS m ON m.rowid = weft_memory_fts.rowid "
            f"WHERE weft_memory_fts MATCH ? AND m.owner = ?{among} "
            "ORDER BY rank, m.namespace, m.key LIMIT ?"
        )
        args: list[Any] = [match, owner, *(namespaces or ()), limit]
        with self._db("searching long-term memory") as conn:
            rows = conn.execute(sql, args).fetchall()
        return [(memory_row(row), -float(row[7])) for row in rows]
