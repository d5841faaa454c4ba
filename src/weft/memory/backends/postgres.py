"""Long-term memory in PostgreSQL, with full-text token recall.

The rows live in the schema ``weft.persist.PostgresBackend`` keeps its event logs in
(``weft`` by default), in a table this backend creates and migrates itself
(``weft.memory.backends.migrations``), through a connection pool of its own. Migrations
run under the same advisory lock as the event log's, so processes that start at once
never race to create the schema. psycopg is imported when a backend is made
(``pip install 'weft[postgres]'``).

The ``tsv`` column is generated from ``text`` (``to_tsvector('english', ...)``, GIN
indexed); a query's words are OR-ed through ``websearch_to_tsquery`` (which never fails
on odd input) and ranked by ``ts_rank``. Every query filters by owner in SQL, and every
database failure is a ``StorageError`` naming the server and schema.

>>> rows = PostgresMemoryBackend("postgresql://postgres@127.0.0.1:5432/weft")  # doctest: +SKIP
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

from weft.memory.backends import migrations
from weft.memory.backends.base import MemoryRow, Namespaces
from weft.memory.backends.sql import COLUMNS, SQLMemoryBackend, in_namespaces, memory_row
from weft.persist.postgres import PostgresPool

_OPERATORS: Final = frozenset({"or", "and", "not"})


class PostgresMemoryBackend(PostgresPool, SQLMemoryBackend):
    """Long-term memory rows in a PostgreSQL schema (see the module docstring)."""

    _WHAT = "long-term memory"
    _SCRIPTS = migrations.POSTGRES
    _VERSIONS = "memory_migrations"

    def _search_rows(
        self, owner: str, words: Sequence[str], namespaces: Namespaces, limit: int
    ) -> list[tuple[MemoryRow, float]]:
        query = " or ".join(w for w in dict.fromkeys(words) if w not in _OPERATORS)
        if not query:
            return []
        sql = (
            f"SELECT {COLUMNS}, ts_rank(tsv, q) AS score FROM {{memory}}, "
            "websearch_to_tsquery('english', ?) AS q "
            f"WHERE owner = ? AND tsv @@ q{in_namespaces(namespaces)} "
            "ORDER BY score DESC, namespace, key LIMIT ?"
        )
        args: list[Any] = [query, owner, *(namespaces or ()), limit]
        with self._db("searching long-term memory") as conn:
            rows = conn.execute(self._sql(sql), args).fetchall()
        return [(memory_row(row), float(row[7])) for row in rows]
