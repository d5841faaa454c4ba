"""Long-term memory rows in this process's memory: the test double, and memory for runs
that need no disk.

It keeps the same encoded records as the database backends (so a value that would not
survive SQLite does not survive here either) and follows the same rules (owners, TTL,
vectors); token recall is the base class's BM25 in Python.

>>> from weft.memory import InMemoryMemoryBackend, LongTermMemory, Owner
>>> memory = LongTermMemory(InMemoryMemoryBackend(), owner=Owner(user_id="ada"))
>>> _ = memory.put("prefs", "tone", "brief")
>>> memory.get_value("prefs", "tone")
'brief'
"""

from __future__ import annotations

import threading
from collections.abc import Sequence

from weft.memory.backends.base import MemoryBackend, MemoryRow, Namespaces
from weft.memory.vector_index import VectorRow
from weft.store import TypeRegistry, registry

_Key = tuple[str, str, str]


class InMemoryMemoryBackend(MemoryBackend):
    """Long-term memory rows in a dict (thread-safe); they live as long as this object."""

    def __init__(self, *, types: TypeRegistry = registry) -> None:
        super().__init__(types=types)
        self._lock = threading.Lock()
        self._rows: dict[_Key, MemoryRow] = {}
        self._vectors: dict[_Key, tuple[str, bytes]] = {}  # (model, vector) of a row
        self._versions: dict[str, int] = {}

    def __repr__(self) -> str:
        return "<InMemoryMemoryBackend>"

    def close(self) -> None:
        """Nothing to release: the rows live as long as this object."""

    def _put_row(
        self,
        owner: str,
        namespace: str,
        key: str,
        record: str,
        text: str,
        expires_at: float | None,
        now: float,
    ) -> tuple[float, int]:
        with self._lock:
            old = self._rows.get((owner, namespace, key))
            created = old[4] if old is not None and (old[6] is None or old[6] > now) else now
            row = (namespace, key, record, text, created, now, expires_at)
            self._rows[(owner, namespace, key)] = row
            self._vectors.pop((owner, namespace, key), None)
            return created, self._bump(owner)

    def _bump(self, owner: str) -> int:
        version = self._versions.get(owner, 0) + 1
        self._versions[owner] = version
        return version

    def _version(self, owner: str) -> int:
        with self._lock:
            return self._versions.get(owner, 0)

    def _get_row(self, owner: str, namespace: str, key: str) -> MemoryRow | None:
        with self._lock:
            return self._rows.get((owner, namespace, key))

    def _get_rows(self, owner: str, keys: Sequence[tuple[str, str]]) -> list[MemoryRow]:
        with self._lock:
            found = (self._rows.get((owner, namespace, key)) for namespace, key in keys)
            return [row for row in found if row is not None]

    def _delete_row(self, owner: str, namespace: str, key: str) -> int | None:
        with self._lock:
            self._vectors.pop((owner, namespace, key), None)
            if self._rows.pop((owner, namespace, key), None) is None:
                return None
            return self._bump(owner)

    def _owned(self, owner: str, namespaces: Namespaces) -> list[tuple[_Key, MemoryRow]]:
        with self._lock:
            return [
                (k, row)
                for k, row in self._rows.items()
                if k[0] == owner and (namespaces is None or k[1] in namespaces)
            ]

    def _list_rows(
        self, owner: str, namespaces: Namespaces, prefix: str, limit: int | None
    ) -> list[MemoryRow]:
        rows = [row for _, row in self._owned(owner, namespaces) if row[1].startswith(prefix)]
        rows.sort(key=lambda r: (-r[5], r[0], r[1]))
        return rows if limit is None else rows[:limit]

    def _vector_rows(self, owner: str, model: str) -> list[VectorRow]:
        found: list[VectorRow] = []
        for k, row in self._owned(owner, None):
            made = self._vectors.get(k)
            blob = made[1] if made is not None and made[0] == model else None
            found.append((row[0], row[1], row[6], blob))
        return found

    def _set_vector_rows(self, owner: str, model: str, rows: list[tuple[str, str, bytes]]) -> int:
        with self._lock:
            for namespace, key, blob in rows:
                if (owner, namespace, key) in self._rows:
                    self._vectors[(owner, namespace, key)] = (model, blob)
            return self._bump(owner)

    def _purge(self, owner: str | None, now: float) -> int:
        with self._lock:
            doomed = [
                k
                for k, row in self._rows.items()
                if (owner is None or k[0] == owner) and row[6] is not None and row[6] <= now
            ]
            for k in doomed:
                del self._rows[k]
                self._vectors.pop(k, None)
            return len(doomed)
