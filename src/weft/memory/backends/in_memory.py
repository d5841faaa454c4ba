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
from dataclasses import dataclass

from weft.memory.backends.base import MemoryBackend, MemoryRow, Namespaces
from weft.store import TypeRegistry, registry


@dataclass(slots=True)
class _Row:
    record: str
    text: str
    created_at: float
    updated_at: float
    expires_at: float | None
    model: str | None = None
    vector: bytes | None = None


class InMemoryMemoryBackend(MemoryBackend):
    """Long-term memory rows in a dict (thread-safe); they live as long as this object."""

    def __init__(self, *, types: TypeRegistry = registry) -> None:
        super().__init__(types=types)
        self._lock = threading.Lock()
        self._rows: dict[tuple[str, str, str], _Row] = {}

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
    ) -> float:
        with self._lock:
            old = self._rows.get((owner, namespace, key))
            live = old is not None and (old.expires_at is None or old.expires_at > now)
            created = old.created_at if old is not None and live else now
            self._rows[(owner, namespace, key)] = _Row(record, text, created, now, expires_at)
            return created

    def _get_row(self, owner: str, namespace: str, key: str) -> MemoryRow | None:
        with self._lock:
            row = self._rows.get((owner, namespace, key))
            return None if row is None else _as_row(namespace, key, row)

    def _delete_row(self, owner: str, namespace: str, key: str) -> bool:
        with self._lock:
            return self._rows.pop((owner, namespace, key), None) is not None

    def _owned(self, owner: str, namespaces: Namespaces) -> list[tuple[str, str, _Row]]:
        with self._lock:
            return [
                (ns, key, row)
                for (o, ns, key), row in self._rows.items()
                if o == owner and (namespaces is None or ns in namespaces)
            ]

    def _list_rows(
        self, owner: str, namespaces: Namespaces, prefix: str, limit: int | None
    ) -> list[MemoryRow]:
        rows = [
            _as_row(ns, key, row)
            for ns, key, row in self._owned(owner, namespaces)
            if key.startswith(prefix)
        ]
        rows.sort(key=lambda r: (-r[5], r[0], r[1]))
        return rows if limit is None else rows[:limit]

    def _vector_rows(
        self, owner: str, model: str, namespaces: Namespaces
    ) -> list[tuple[MemoryRow, bytes | None]]:
        return [
            (_as_row(ns, key, row), row.vector if row.model == model else None)
            for ns, key, row in sorted(self._owned(owner, namespaces), key=lambda r: r[:2])
        ]

    def _set_vector_rows(self, owner: str, model: str, rows: list[tuple[str, str, bytes]]) -> None:
        with self._lock:
            for namespace, key, blob in rows:
                row = self._rows.get((owner, namespace, key))
                if row is not None:
                    row.model, row.vector = model, blob

    def _purge(self, owner: str | None, now: float) -> int:
        with self._lock:
            doomed = [
                k
                for k, row in self._rows.items()
                if (owner is None or k[0] == owner)
                and row.expires_at is not None
                and row.expires_at <= now
            ]
            for k in doomed:
                del self._rows[k]
            return len(doomed)


def _as_row(namespace: str, key: str, row: _Row) -> MemoryRow:
    return (namespace, key, row.record, row.text, row.created_at, row.updated_at, row.expires_at)
