"""The in-memory backend: the test double, and a store for runs that need no disk.

It keeps the same encoded records as the database backends (so a value that would not
survive SQLite does not survive here either) and follows the same rules (conflicts,
snapshots, pruning).

>>> from weft.persist import DurableRun, InMemoryBackend
>>> backend = InMemoryBackend()
>>> with DurableRun.open(backend, "chat-1") as run:
...     _ = run.store.write("state", "topic", "otters")
>>> backend.load("chat-1").to_store().value("state", "topic")
'otters'
"""

from __future__ import annotations

import threading
from bisect import bisect_right
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
from weft.store import TypeRegistry, registry


@dataclass(slots=True)
class _Thread:
    info: ThreadInfo
    events: list[EventRow] = field(default_factory=list)
    snapshots: list[SnapshotRow] = field(default_factory=list)


def _step(row: tuple[int, str] | tuple[int, str, str]) -> int:
    return row[0]


class InMemoryBackend(Backend):
    """Threads in this process's memory (thread-safe)."""

    def __init__(self, *, types: TypeRegistry = registry) -> None:
        super().__init__(types=types)
        self._lock = threading.Lock()
        self._threads: dict[str, _Thread] = {}

    @property
    def location(self) -> str:
        return "memory"

    def close(self) -> None:
        """Nothing to release: the data lives as long as this object."""

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
