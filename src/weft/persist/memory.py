"""The in-memory backend: the test double, and a store for runs that need no disk.

It keeps the same encoded records as the database backends (so a value that would not
survive SQLite does not survive here either) and follows the same rules (conflicts,
snapshots, pruning, owners, TTL); token recall is a BM25 in Python.

>>> from weft.persist import DurableRun, InMemoryBackend
>>> backend = InMemoryBackend()
>>> with DurableRun.open(backend, "chat-1") as run:
...     _ = run.store.write("state", "topic", "otters")
>>> backend.load("chat-1").to_store().value("state", "topic")
'otters'
"""

from __future__ import annotations

import math
import threading
from bisect import bisect_right
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from weft.persist.base import (
    Backend,
    EventRow,
    RunInfo,
    SnapshotRow,
    ThreadInfo,
    conflict,
    exists,
)
from weft.persist.memory_base import MemoryBackend, MemoryRow, tokens
from weft.store import TypeRegistry, registry


@dataclass(slots=True)
class _Thread:
    info: ThreadInfo
    events: list[EventRow] = field(default_factory=list)
    snapshots: list[SnapshotRow] = field(default_factory=list)


def _step(row: tuple[int, str] | tuple[int, str, str]) -> int:
    return row[0]


class InMemoryBackend(Backend):
    """Threads and long-term memory in this process's memory (thread-safe)."""

    def __init__(self, *, types: TypeRegistry = registry) -> None:
        super().__init__(types=types)
        self._lock = threading.Lock()
        self._threads: dict[str, _Thread] = {}
        self._memory = InMemoryMemory(types=types)

    @property
    def location(self) -> str:
        return "memory"

    def close(self) -> None:
        """Nothing to release: the data lives as long as this object."""

    @property
    def memory(self) -> InMemoryMemory:
        return self._memory

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
        with self._lock:
            thread = self._threads.get(thread_id)
            actual = 0 if thread is None else thread.info.last_step
            if actual != expected:
                raise conflict(thread_id, expected, actual)
            if thread is None:
                info = ThreadInfo(
                    thread_id=thread_id, last_step=0, first_step=0, created_at=now, updated_at=now
                )
                thread = self._threads[thread_id] = _Thread(info)
            thread.events.extend(rows)
            thread.info = replace(thread.info, last_step=rows[-1][0], updated_at=now)
            if snapshot is not None:
                thread.snapshots.append(snapshot)
                first = thread.info.first_step
                kept = [s for s in thread.snapshots if s[0] > first][-keep_snapshots:]
                thread.snapshots = [s for s in thread.snapshots if s[0] <= first] + kept

    def _load_rows(
        self, thread_id: str, step: int | None
    ) -> tuple[ThreadInfo | None, SnapshotRow | None, list[EventRow]]:
        with self._lock:
            thread = self._threads.get(thread_id)
            if thread is None:
                return None, None, []
            target = thread.info.last_step if step is None else step
            at = bisect_right(thread.snapshots, target, key=_step)
            snapshot = thread.snapshots[at - 1] if at else None
            after = snapshot[0] if snapshot is not None else 0
            lo = bisect_right(thread.events, after, key=_step)
            hi = bisect_right(thread.events, target, key=_step)
            return thread.info, snapshot, thread.events[lo:hi]

    def _event_rows(self, thread_id: str, after: int, upto: int | None) -> list[EventRow]:
        with self._lock:
            thread = self._threads.get(thread_id)
            if thread is None:
                return []
            lo = bisect_right(thread.events, after, key=_step)
            hi = (
                len(thread.events) if upto is None else bisect_right(thread.events, upto, key=_step)
            )
            return thread.events[lo:hi]

    def _thread_info(self, thread_id: str) -> ThreadInfo | None:
        with self._lock:
            thread = self._threads.get(thread_id)
            return None if thread is None else thread.info

    def _thread_infos(self) -> list[ThreadInfo]:
        with self._lock:
            return [self._threads[t].info for t in sorted(self._threads)]

    def _run_infos(self, thread_id: str) -> list[RunInfo]:
        with self._lock:
            thread = self._threads.get(thread_id)
            rows = [] if thread is None else list(thread.events)
        runs: dict[str, list[int]] = {}
        for step, run, _record in rows:
            seen = runs.get(run)
            if seen is None:
                runs[run] = [step, step, 1]
            else:
                seen[1] = step
                seen[2] += 1
        return [
            RunInfo(thread_id=thread_id, run_id=run, first_step=a, last_step=b, events=n)
            for run, (a, b, n) in runs.items()
        ]

    def _delete(self, thread_id: str) -> bool:
        with self._lock:
            return self._threads.pop(thread_id, None) is not None

    def _create(
        self, thread_id: str, snapshot: SnapshotRow, parent: tuple[str, int] | None, now: float
    ) -> None:
        with self._lock:
            known = self._threads.get(thread_id)
            if known is not None:
                raise exists(thread_id, known.info.last_step)
            info = ThreadInfo(
                thread_id=thread_id,
                last_step=snapshot[0],
                first_step=snapshot[0],
                created_at=now,
                updated_at=now,
                parent_thread=None if parent is None else parent[0],
                parent_step=None if parent is None else parent[1],
            )
            self._threads[thread_id] = _Thread(info, [], [snapshot])

    def _prune_rows(self, thread_id: str, cut: int, snapshot: SnapshotRow | None) -> int:
        with self._lock:
            thread = self._threads.get(thread_id)
            if thread is None:
                return 0
            snapshots = [s for s in thread.snapshots if s[0] >= cut]
            if snapshot is not None and all(s[0] != cut for s in snapshots):
                snapshots.insert(0, snapshot)
            thread.snapshots = snapshots
            at = bisect_right(thread.events, cut, key=_step)
            thread.events = thread.events[at:]
            thread.info = replace(thread.info, first_step=cut)
            return at


@dataclass(slots=True)
class _Row:
    record: str
    text: str
    created_at: float
    updated_at: float
    expires_at: float | None
    model: str | None = None
    vector: bytes | None = None


class InMemoryMemory(MemoryBackend):
    """Long-term memory rows in a dict; token recall is Okapi BM25 (k1=1.2, b=0.75)."""

    def __init__(self, *, types: TypeRegistry = registry) -> None:
        super().__init__(types=types)
        self._lock = threading.Lock()
        self._rows: dict[tuple[str, str, str], _Row] = {}

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

    def _owned(self, owner: str, namespaces: tuple[str, ...] | None) -> list[tuple[str, str, _Row]]:
        with self._lock:
            return [
                (ns, key, row)
                for (o, ns, key), row in self._rows.items()
                if o == owner and (namespaces is None or ns in namespaces)
            ]

    def _list_rows(
        self, owner: str, namespace: str | None, prefix: str, limit: int | None
    ) -> list[MemoryRow]:
        rows = [
            _as_row(ns, key, row)
            for ns, key, row in self._owned(owner, None if namespace is None else (namespace,))
            if key.startswith(prefix)
        ]
        rows.sort(key=lambda r: (-r[5], r[0], r[1]))
        return rows if limit is None else rows[:limit]

    def _search_rows(
        self, owner: str, words: Sequence[str], namespaces: tuple[str, ...] | None, limit: int
    ) -> list[tuple[MemoryRow, float]]:
        docs = [(ns, key, row, tokens(row.text)) for ns, key, row in self._owned(owner, namespaces)]
        if not docs:
            return []
        average = sum(len(d[3]) for d in docs) / len(docs) or 1.0
        counts = [Counter(d[3]) for d in docs]
        query = set(words)
        idf = {}
        for word in query:
            n = sum(1 for c in counts if word in c)
            idf[word] = math.log(1 + (len(docs) - n + 0.5) / (n + 0.5))
        scored = []
        for (ns, key, row, words_of), count in zip(docs, counts, strict=True):
            norm = 1.2 * (0.25 + 0.75 * len(words_of) / average)
            score = sum(idf[w] * count[w] * 2.2 / (count[w] + norm) for w in query if count[w])
            if score > 0:
                scored.append((_as_row(ns, key, row), score))
        scored.sort(key=lambda hit: (-hit[1], hit[0][0], hit[0][1]))
        return scored[:limit]

    def _vector_rows(
        self, owner: str, model: str, namespaces: tuple[str, ...] | None
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
