"""The backend interface: an append-only event log per thread.

Identity. A *thread* (``thread_id``) is one conversation or workflow: one store, one
log. A *run* (``run_id``) is one execution that appends to it; a run that resumes
after a crash keeps its id. A *step* is the ``seq`` of an event in the thread's store:
each event is one step, so a thread's steps count its events (1, 2, 3 ...).

Writes. ``append(thread_id, run_id, expected_last_step, events)`` adds a batch of
events in one transaction, and only if the thread's last step is still
``expected_last_step``: otherwise it raises ``ConflictError`` naming the thread, the
step the caller expected and the one it found, and writes nothing (optimistic
concurrency; the winner's events stay, the loser reloads and retries). A step costs
O(its own events): the log is appended, never rewritten.

Reads. ``load(thread_id, step=...)`` returns the newest snapshot at or before the step
and the events after it, so loading costs O(events since that snapshot).

Each backend implements a few row-level primitives (``_append_rows``, ``_load_rows``
...; the SQL ones share theirs in ``weft.persist.sql``); encoding, checks and the flows
built from them (loading, pruning) live here once, so the backends behave alike.
"""

from __future__ import annotations

import logging
import time
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from contextlib import suppress
from dataclasses import dataclass
from typing import Final, NamedTuple, Self

from weft.errors import (
    ConflictError,
    CorruptRecordError,
    PersistError,
    StepError,
    ValueTypeError,
)
from weft.persist._gc import paused
from weft.persist.codec import decode_event, decode_snapshot, encode_event, encode_snapshot
from weft.persist.snapshot import Snapshot, build_store, capture
from weft.store import Event, Store, TypeRegistry, registry
from weft.store import reducers as _reducers
from weft.store.values import check_text

logger: Final = logging.getLogger("weft.persist")

EventRow = tuple[int, str, str]
"""(step, run_id, record) as a backend stores one event."""
SnapshotRow = tuple[int, str]
"""(step, record) as a backend stores one snapshot."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ThreadInfo:
    """One thread: its last step and the first step it can still be loaded at.

    ``first_step`` is 0 for a full log, the cut for a pruned thread, and the fork point
    for a thread forked from another (``parent_thread`` at ``parent_step``).
    """

    thread_id: str
    last_step: int
    first_step: int
    created_at: float
    updated_at: float
    parent_thread: str | None = None
    parent_step: int | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class RunInfo:
    """One run of a thread: the steps it appended."""

    thread_id: str
    run_id: str
    first_step: int
    last_step: int
    events: int


class LoggedEvent(NamedTuple):
    """An event of the history, with the run that appended it."""

    run_id: str
    event: Event


@dataclass(frozen=True, slots=True, kw_only=True)
class Checkpoint:
    """A thread as of ``step``: the newest snapshot at or before it and the events after."""

    thread_id: str
    step: int
    snapshot: Snapshot | None
    events: tuple[Event, ...]

    def to_store(
        self,
        *,
        reducers: Mapping[str, _reducers.Reducer] | None = None,
        types: TypeRegistry = registry,
        name: str | None = None,
    ) -> Store:
        """The store as of ``step`` (see ``weft.persist.snapshot.build_store``)."""
        with paused():
            return build_store(
                self.snapshot, self.events, reducers=reducers, types=types, name=name
            )


def check_id(value: object, what: str) -> str:
    """A thread or run id: a non-empty string that every backend can keep (no NUL, which
    PostgreSQL's text refuses, and no lone surrogate, which UTF-8 cannot hold)."""
    if not isinstance(value, str) or not value:
        raise PersistError(f"{what}={value!r}: expected a non-empty string such as 'chat-42'")
    with suppress(ValueTypeError):
        if "\x00" not in value:
            check_text(value)
            return value
    raise PersistError(
        f"{what}={value!r}: an id is text every backend can keep, with no NUL and no "
        "lone surrogate; use letters, digits and punctuation such as 'chat-42'"
    )


def conflict(thread_id: str, expected: int, actual: int) -> ConflictError:
    """The error of a lost append race."""
    return ConflictError(
        f"thread {thread_id!r} moved on: this writer expected its last step to be {expected}, "
        f"but another writer had appended up to step {actual}. Nothing of this batch was "
        "written and the other writer's steps are kept; reload the thread "
        "(DurableRun.reload()) and apply the change again",
        thread_id=thread_id,
        expected=expected,
        actual=actual,
    )


def exists(thread_id: str, last_step: int) -> ConflictError:
    """The error of creating a thread whose id is taken."""
    return ConflictError(
        f"thread {thread_id!r} exists already (its last step is {last_step}); a fork starts a "
        "new thread, so pick an unused thread id (or leave it out to get a fresh one)",
        thread_id=thread_id,
        expected=0,
        actual=last_step,
    )


class Closeable(ABC):
    """Something to ``close()`` when done, or to use as a context manager that closes it."""

    @abstractmethod
    def close(self) -> None:
        """Release what it holds; it is unusable afterwards."""

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


_UNCHECKED: Final = object()


class Backend(Closeable):
    """Where threads' event logs are kept (long-term memory has backends of its own, in
    ``weft.memory``).

    Backends are synchronous on purpose: the store calls its subscribers inside each
    write, and a node's record must be durable before the next node starts.
    """

    _checked_ids: tuple[object, object] = (_UNCHECKED, _UNCHECKED)
    """The thread and run ids ``append`` checked last: a durable run appends once per commit
    with the very same strings, checked once."""

    def __init__(self, *, types: TypeRegistry = registry) -> None:
        self.types = types

    def append(
        self,
        thread_id: str,
        run_id: str,
        expected_last_step: int,
        events: Sequence[Event],
        *,
        snapshot: Snapshot | None = None,
        keep_snapshots: int = 1,
    ) -> int:
        """Append ``events`` (steps after ``expected_last_step``) atomically; returns the new
        last step. ``snapshot`` (at the last of these steps) is stored in the same
        transaction, and older snapshots beyond the newest ``keep_snapshots`` are dropped."""
        checked = self._checked_ids
        if thread_id is not checked[0] or run_id is not checked[1]:
            if not (  # check_id's common case, inlined
                thread_id.__class__ is str
                and run_id.__class__ is str
                and thread_id.isascii()
                and run_id.isascii()
                and "\x00" not in thread_id
                and "\x00" not in run_id
                and thread_id
                and run_id
            ):
                check_id(thread_id, "thread_id")
                check_id(run_id, "run_id")
            self._checked_ids = (thread_id, run_id)
        if not events:
            raise PersistError(f"append to thread {thread_id!r} got no events; pass at least one")
        last = expected_last_step
        rows: list[EventRow] = []
        for event in events:
            if event.seq <= last:
                raise PersistError(
                    f"append to thread {thread_id!r}: event {event.seq} does not come after step "
                    f"{last}; events are appended in step order after expected_last_step"
                )
            last = event.seq
            rows.append((event.seq, run_id, encode_event(event, self.types)))
        snapshot_row = None
        if snapshot is not None:
            if snapshot.step != last:
                raise PersistError(
                    f"a snapshot appended with steps up to {last} is at step {snapshot.step}; "
                    "a snapshot goes with the batch that ends at its step"
                )
            with paused():
                snapshot_row = (snapshot.step, encode_snapshot(snapshot, self.types))
        self._append_rows(
            thread_id,
            run_id,
            expected_last_step,
            rows,
            snapshot_row,
            max(keep_snapshots, 1),
            time.time(),
        )
        return last

    def load(self, thread_id: str, *, step: int | None = None) -> Checkpoint:
        """The thread as of ``step`` (default: its last step); an unknown thread is empty."""
        check_id(thread_id, "thread_id")
        with paused():
            return self._load(thread_id, step)

    def _load(self, thread_id: str, step: int | None) -> Checkpoint:
        info, snapshot_row, rows = self._load_rows(thread_id, step)
        if info is None:
            if step:
                raise StepError(f"thread {thread_id!r} does not exist, so it has no step {step}")
            return Checkpoint(thread_id=thread_id, step=0, snapshot=None, events=())
        target = info.last_step if step is None else step
        self._check_step(info, target)
        snapshot = None
        if snapshot_row is not None:
            try:
                snapshot = decode_snapshot(
                    snapshot_row[1], thread_id=thread_id, step=snapshot_row[0], types=self.types
                )
            except CorruptRecordError as exc:
                if info.first_step > 0:
                    raise  # a pruned or forked thread has nothing older to rebuild from
                # a snapshot is a cache over the log: rebuild from the events instead
                logger.warning("%s; loading thread %r from its events instead", exc, thread_id)
                rows = self._event_rows(thread_id, 0, target)
        elif info.first_step > 0:
            raise CorruptRecordError(
                f"thread {thread_id!r} starts at step {info.first_step} (pruned or forked) but "
                f"has no snapshot at or before step {target}, so it cannot be rebuilt; load a "
                "later step, or restore the database from a backup"
            )
        events = tuple(
            decode_event(text, thread_id=thread_id, step=seq, types=self.types)
            for seq, _run, text in rows
        )
        return Checkpoint(thread_id=thread_id, step=target, snapshot=snapshot, events=events)

    def history(
        self, thread_id: str, *, after: int = 0, upto: int | None = None
    ) -> list[LoggedEvent]:
        """The stored events with ``after < step <= upto``, oldest first, with their runs."""
        check_id(thread_id, "thread_id")
        return [
            LoggedEvent(run, decode_event(text, thread_id=thread_id, step=seq, types=self.types))
            for seq, run, text in self._event_rows(thread_id, after, upto)
        ]

    def last_step(self, thread_id: str) -> int:
        """The thread's last step (0 for a thread that does not exist)."""
        info = self.thread(thread_id)
        return 0 if info is None else info.last_step

    def thread(self, thread_id: str) -> ThreadInfo | None:
        """One thread's info, or None."""
        return self._thread_info(check_id(thread_id, "thread_id"))

    def threads(self) -> list[ThreadInfo]:
        """Every thread, by id."""
        return self._thread_infos()

    def runs(self, thread_id: str) -> list[RunInfo]:
        """The runs that appended to a thread, in the order they started."""
        return self._run_infos(check_id(thread_id, "thread_id"))

    def delete_thread(self, thread_id: str) -> bool:
        """Delete a thread, its events and snapshots; returns whether it existed."""
        return self._delete(check_id(thread_id, "thread_id"))

    def prune(
        self,
        thread_id: str,
        *,
        keep_last: int,
        reducers: Mapping[str, _reducers.Reducer] | None = None,
    ) -> int:
        """Keep only the thread's last ``keep_last`` steps; returns how many events went.

        A snapshot is written at the cut first (if none is there), so the thread stays
        loadable at every step from the cut on; steps before it are gone (``StepError``).
        A field reduced by your own function needs it in ``reducers``.
        """
        if not isinstance(keep_last, int) or keep_last < 0:
            raise PersistError(f"keep_last={keep_last!r}: expected an int >= 0")
        info = self.thread(thread_id)
        if info is None:
            return 0
        cut = info.last_step - keep_last
        if cut <= info.first_step:
            return 0
        checkpoint = self.load(thread_id, step=cut)
        snapshot_row = None
        if checkpoint.snapshot is None or checkpoint.snapshot.step != cut:
            snapshot = capture(checkpoint.to_store(reducers=reducers, types=self.types), step=cut)
            snapshot_row = (cut, encode_snapshot(snapshot, self.types))
        return self._prune_rows(thread_id, cut, snapshot_row)

    def create_thread(
        self, thread_id: str, snapshot: Snapshot, *, parent: tuple[str, int] | None = None
    ) -> None:
        """Start a thread at ``snapshot.step`` from a snapshot (a fork); an existing id is a
        ``ConflictError``."""
        check_id(thread_id, "thread_id")
        row = (snapshot.step, encode_snapshot(snapshot, self.types))
        self._create(thread_id, row, parent, time.time())

    @property
    @abstractmethod
    def location(self) -> str:
        """Where the data lives (a file, a server and schema), for messages."""

    @abstractmethod
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
        """In one transaction: check the last step is ``expected`` (else raise ``conflict``),
        insert the rows, set the last step, store the snapshot and drop old ones (never the
        one at a pruned or forked thread's ``first_step``)."""

    @abstractmethod
    def _load_rows(
        self, thread_id: str, step: int | None
    ) -> tuple[ThreadInfo | None, SnapshotRow | None, list[EventRow]]:
        """In one read: the thread, its newest snapshot at or before ``step`` (or its last
        step), and the events after that snapshot up to the step."""

    @abstractmethod
    def _event_rows(self, thread_id: str, after: int, upto: int | None) -> list[EventRow]: ...

    @abstractmethod
    def _thread_info(self, thread_id: str) -> ThreadInfo | None: ...

    @abstractmethod
    def _thread_infos(self) -> list[ThreadInfo]: ...

    @abstractmethod
    def _run_infos(self, thread_id: str) -> list[RunInfo]: ...

    @abstractmethod
    def _delete(self, thread_id: str) -> bool: ...

    @abstractmethod
    def _create(
        self, thread_id: str, snapshot: SnapshotRow, parent: tuple[str, int] | None, now: float
    ) -> None: ...

    @abstractmethod
    def _prune_rows(self, thread_id: str, cut: int, snapshot: SnapshotRow | None) -> int:
        """In one transaction: store the snapshot at ``cut`` (if given), delete events up to
        the cut and older snapshots, and set ``first_step`` to the cut."""

    @staticmethod
    def _check_step(info: ThreadInfo, step: int) -> None:
        if step > info.last_step:
            raise StepError(
                f"thread {info.thread_id!r} has no step {step}: its last step is {info.last_step}"
            )
        if step < info.first_step:
            why = "was pruned" if info.parent_thread is None else "was forked"
            raise StepError(
                f"thread {info.thread_id!r} {why} and starts at step {info.first_step}, so step "
                f"{step} cannot be loaded; load a step from {info.first_step} to "
                f"{info.last_step}"
                + (
                    f", or step {step} of its parent {info.parent_thread!r}"
                    if info.parent_thread is not None and info.parent_step is not None
                    else ""
                )
            )
