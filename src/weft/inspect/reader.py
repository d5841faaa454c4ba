"""``Reader``: read and steer the threads stored in a database, as typed records.

A ``Reader`` opens a SQLite file or a PostgreSQL DSN (or wraps a backend you already
have) and answers what a person inspecting stored runs asks: which threads and runs
there are (``threads``), what ran in one and how long it took (``timeline``), its raw
events (``events``; ``follow`` and ``afollow`` tail them as another process writes), its
state at any step (``state``, ``diff``), its memory as ``memory_list`` shows it
(``memory``), and the questions its runs wait on (``pauses``). It also steers:
``answer`` records answers to a paused run (its owner resumes it with the same run id and
no ``answers=``), ``fork`` starts a new thread from a step, ``prune`` drops old steps.
``weft threads``, ``weft show`` and the other inspection commands are this class, rendered.

>>> import tempfile, pathlib
>>> from weft.persist import DurableRun, SQLiteBackend
>>> db = pathlib.Path(tempfile.mkdtemp()) / "weft.db"
>>> with SQLiteBackend(db) as backend:
...     run = DurableRun.open(backend, "chat-1")
...     _ = run.store.write("state", "plan", "draft")
...     run.close()
>>> with Reader.open(db) as reader:
...     [(t.thread_id, t.last_step) for t in reader.threads()]
[('chat-1', 1)]
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable, Iterator, Mapping
from pathlib import Path
from typing import Any, Final, Self

# the types weft itself stores (chat messages of a ToolAgent's run, an executor's job
# outcomes) register as their modules load: a thread written by a run loads here too, in a
# process that never ran one
import weft.llm.messages
import weft.plan.jobs  # noqa: F401
from weft.errors import ConflictError, PauseError, PersistError, StepError, WeftError
from weft.inspect import _build, _open
from weft.inspect.records import (
    EntryChange,
    Fork,
    MemoryItem,
    RunSummary,
    StateDiff,
    StateEntry,
    ThreadEvent,
    ThreadState,
    ThreadSummary,
    TimelineItem,
    to_json,
)
from weft.memory import AgentMemory
from weft.persist import Backend, DurableRun, ThreadInfo, fork_thread
from weft.persist.runs import new_id
from weft.persist.snapshot import build_store
from weft.persist.sqlite import DEFAULT_PATH
from weft.store import Event, Pause, RunRecord, StepRecord, Store
from weft.store import reducers as _reducers
from weft.store.records import KIND

__all__ = [
    "EntryChange",
    "Fork",
    "MemoryItem",
    "Progress",
    "Reader",
    "RunSummary",
    "StateDiff",
    "StateEntry",
    "ThreadEvent",
    "ThreadState",
    "ThreadSummary",
    "TimelineItem",
    "to_json",
]

Progress = Callable[[int, int], None]
"""``progress(done, total)``: called as long work advances (events replayed, threads read)."""

_THREADS_SHOWN: Final = 10
_ANSWER_ATTEMPTS: Final = 3
_TICK: Final = 512  # events replayed between two progress calls


class Reader:
    """Reads (and steers) the threads of one backend; see the module docstring.

    ``reducers`` gives the fields reduced by your own functions (``{"state:notes": fn}``),
    which a thread cannot be replayed without; built-in reducers are found by name.
    """

    def __init__(
        self,
        backend: Backend,
        *,
        reducers: Mapping[str, _reducers.Reducer] | None = None,
        owns_backend: bool = False,
    ) -> None:
        if not isinstance(backend, Backend):
            raise PersistError(
                f"backend={backend!r:.60}: expected a weft.persist backend such as "
                "SQLiteBackend('.weft/weft.db') or PostgresBackend(dsn); or use Reader.open(db)"
            )
        self.backend = backend
        self._reducers = dict(reducers or {})
        self._owns_backend = owns_backend

    @classmethod
    def open(
        cls,
        db: str | Path | None = None,
        *,
        schema: str = "weft",
        reducers: Mapping[str, _reducers.Reducer] | None = None,
    ) -> Reader:
        """A reader of ``db``: the path of an existing SQLite file (default
        ``./.weft/weft.db``) or a ``postgresql://`` DSN (weft's tables in ``schema``); a
        ``PersistError`` or ``StorageError`` saying what is wrong when it cannot be opened."""
        from weft.mcp.thread import open_backend  # the one way weft opens a database by name

        text = "" if db is None else str(db)
        if text.startswith(("postgresql://", "postgres://")):
            _open.check_schema(text, schema)
            backend = open_backend(text, create=False, schema=schema)
        else:
            path = DEFAULT_PATH if db is None else Path(text)
            _open.check_file(path)
            backend = open_backend(path, create=False)
        return cls(backend, reducers=reducers, owns_backend=True)

    @property
    def location(self) -> str:
        """Where the threads live: the file, or the server and schema."""
        return self.backend.location

    def close(self) -> None:
        """Close the backend if this reader opened it."""
        if self._owns_backend:
            self.backend.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<Reader {self.location}>"

    # ------------------------------------------------------------------ threads

    def threads(self, *, progress: Progress | None = None) -> list[ThreadSummary]:
        """Every thread, by id, with its runs (each thread is replayed to its last step; one
        that cannot be says why in its ``error``)."""
        infos = self.backend.threads()
        out = []
        for done, info in enumerate(infos, 1):
            try:
                out.append(self._summary(info, self._replay(info, None)))
            except WeftError as error:  # one thread that cannot be replayed hides no other
                out.append(self._summary(info, None, error=" ".join(str(error).split())))
            if progress is not None:
                progress(done, len(infos))
        return out

    def thread(self, thread_id: str, *, progress: Progress | None = None) -> ThreadSummary:
        """One thread's summary (a ``PersistError`` naming the threads there are if it does
        not exist)."""
        info = self._info(thread_id)
        return self._summary(info, self._replay(info, None, progress))

    def timeline(
        self, thread_id: str, *, at: int | None = None, progress: Progress | None = None
    ) -> list[TimelineItem]:
        """What ran in the thread (as of step ``at``, default its last): each run, then its
        units of work, keyed calls and questions, in the order they started; a unit
        recorded again at one path (each turn of a turn runtime) once per time, as far back
        as the thread's log goes."""
        info = self._info(thread_id)
        store = self._replay(info, at, progress)
        log = self.backend.history(thread_id, after=info.first_step, upto=at)
        earlier = _build.replaced(store, (logged.event for logged in log))
        return _build.timeline(store, earlier)

    # ------------------------------------------------------------------- events

    def events(
        self, thread_id: str, *, since: int = 0, until: int | None = None
    ) -> list[ThreadEvent]:
        """The thread's stored events with ``since < step <= until`` (default: to its last
        step), oldest first, each with the run (process) that appended it."""
        self._info(thread_id)
        _check_whole(since, "since", minimum=0)
        if until is not None:
            _check_whole(until, "until", minimum=since)
        return self._poll(thread_id, since, until)

    def follow(
        self,
        thread_id: str,
        *,
        since: int = 0,
        interval: float = 0.25,
        stop: Callable[[], bool] | None = None,
    ) -> Iterator[ThreadEvent]:
        """The thread's events after ``since``, then each new one as another process
        appends it, polling every ``interval`` seconds; ends once ``stop()`` is true, after
        reading what was appended before it was (else runs until the caller stops iterating,
        or Ctrl-C)."""
        last = self._start_following(thread_id, since, interval)
        while True:
            stopping = stop is not None and stop()  # asked first: what came before it is read
            for event in self._poll(thread_id, last):
                last = event.step
                yield event
            if stopping:
                return
            time.sleep(interval)

    async def afollow(
        self,
        thread_id: str,
        *,
        since: int = 0,
        interval: float = 0.25,
        stop: Callable[[], bool] | None = None,
    ) -> AsyncIterator[ThreadEvent]:
        """``follow`` for an event loop (a web page's live feed): each poll runs in a worker
        thread, so the loop is never blocked by the database."""
        last = await asyncio.to_thread(self._start_following, thread_id, since, interval)
        while True:
            stopping = stop is not None and stop()
            for event in await asyncio.to_thread(self._poll, thread_id, last):
                last = event.step
                yield event
            if stopping:
                return
            await asyncio.sleep(interval)

    def _start_following(self, thread_id: str, since: int, interval: float) -> int:
        self._info(thread_id)
        _check_whole(since, "since", minimum=0)
        if not isinstance(interval, (int, float)) or isinstance(interval, bool) or interval <= 0:
            raise PersistError(f"interval={interval!r}: expected seconds > 0, e.g. 0.25")
        return since

    def _poll(self, thread_id: str, after: int, until: int | None = None) -> list[ThreadEvent]:
        return [
            _build.thread_event(logged.run_id, logged.event)
            for logged in self.backend.history(thread_id, after=after, upto=until)
        ]

    # -------------------------------------------------------------------- state

    def state(
        self,
        thread_id: str,
        *,
        at: int | None = None,
        prefix: str | None = None,
        progress: Progress | None = None,
    ) -> ThreadState:
        """The thread's entries as of step ``at`` (default: its last), those whose
        ``kind:path`` key starts with ``prefix`` when given; run records are left out."""
        info = self._info(thread_id)
        if prefix is not None and not isinstance(prefix, str):
            raise PersistError(f"prefix={prefix!r}: expected the start of a key, e.g. 'state:'")
        store = self._replay(info, at, progress)
        entries = tuple(
            _build.state_entry(entry)
            for entry in store.entries(key_prefix=prefix or "")
            if not _build.a_record(entry)
        )
        step = info.last_step if at is None else at
        return ThreadState(thread_id=thread_id, step=step, prefix=prefix, entries=entries)

    def diff(
        self, thread_id: str, a: int, b: int, *, progress: Progress | None = None
    ) -> StateDiff:
        """How the thread's state changed from step ``a`` to step ``b``, key by key (run
        records left out)."""
        info = self._info(thread_id)
        before = _build.values(self._replay(info, a, _half(progress, 0)))
        after = _build.values(after_store := self._replay(info, b, _half(progress, 1)))
        changes: list[EntryChange] = []
        for key in sorted(before.keys() | after.keys()):
            old, new = before.get(key), after.get(key)
            if new is None:
                changes.append(
                    EntryChange(key=key, change="removed", before=old, after=None, source=None)
                )
            elif old is None or old != new:
                kind, _, path = key.partition(":")
                found = after_store.get(kind, path)
                changes.append(
                    EntryChange(
                        key=key,
                        change="added" if old is None else "changed",
                        before=old,
                        after=new,
                        source=None if found is None else found.source,
                    )
                )
        low, high = min(a, b), max(a, b)
        events = len(self.backend.history(thread_id, after=low, upto=high))
        return StateDiff(thread_id=thread_id, a=a, b=b, events=events, changes=tuple(changes))

    def memory(
        self, thread_id: str, *, at: int | None = None, progress: Progress | None = None
    ) -> list[MemoryItem]:
        """The thread's memory entries as ``memory_list`` shows them (every one, not the
        200 newest), the most recent write first."""
        store = self._replay(self._info(thread_id), at, progress)
        items = [
            MemoryItem(
                key=entry.key,
                kind=entry.kind,
                title=entry.title,
                description=entry.description,
                source=entry.source,
                value_bytes=_build.size_of(entry.value),
                created_at=entry.created_at.timestamp(),
                updated_at=entry.updated_at.timestamp(),
                value=entry.value,
            )
            for entry in AgentMemory(store).list()
        ]
        items.reverse()
        return items

    # ------------------------------------------------------------------- pauses

    def pauses(self, thread_id: str, *, waiting: bool = False) -> list[Pause]:
        """The questions the thread's runs asked a person, in the order asked (only those
        still waiting for an answer when ``waiting``)."""
        store = self._replay(self._info(thread_id), None)
        found = [
            value
            for entry in store.entries(kind=KIND)
            if isinstance(value := entry.value, Pause) and not (waiting and value.answered)
        ]
        found.sort(key=lambda p: (p.asked_at, p.id))
        return found

    def answer(self, thread_id: str, answers: Mapping[str, Any]) -> list[Pause]:
        """Record ``answers`` (``{question id: answer}``) to questions waiting in the thread,
        one commit per run, and mark those runs running again; returns the answered
        questions. The run's owner then resumes it with its run id (no ``answers=``: they
        are recorded) and the paused unit gets its answer; a paused turn runs again when its
        runtime is called with the thread id and no input."""
        self._info(thread_id)
        if not isinstance(answers, Mapping) or not answers:
            raise PauseError(
                f"answers={answers!r:.80}: expected a non-empty dict of question id to answer, "
                "e.g. {'post-1/review/pauses/0': 'yes'}; reader.pauses(thread) lists the ids"
            )
        for attempt in range(1, _ANSWER_ATTEMPTS + 1):
            run = DurableRun.open(
                self.backend,
                thread_id,
                run_id=new_id("answer"),
                reducers=self._reducers,
                name="weft.answer",
            )
            try:
                return _build.record_answers(run.store, thread_id, answers)
            except ConflictError:  # the run's owner wrote meanwhile: read again, answer again
                if attempt == _ANSWER_ATTEMPTS:
                    raise
            finally:
                run.close()
        raise AssertionError("unreachable")  # pragma: no cover

    # ------------------------------------------------------------------ steering

    def fork(self, thread_id: str, step: int, *, to: str | None = None) -> Fork:
        """Start a new thread (``to``, default ``<thread>~fork-<hex>``) from the thread at
        ``step``; the thread itself is unchanged."""
        info = self._info(thread_id)
        _check_step(info, step)
        run = fork_thread(self.backend, thread_id, step=step, thread_id=to, reducers=self._reducers)
        try:
            return Fork(
                thread_id=run.thread_id,
                parent_thread=thread_id,
                parent_step=step,
                last_step=run.step,
            )
        finally:
            run.close()

    def prune(self, thread_id: str, *, keep_last: int) -> int:
        """Drop the thread's steps but its last ``keep_last`` (a snapshot at the cut keeps
        it loadable from there on); returns how many events went."""
        self._info(thread_id)
        _check_whole(keep_last, "keep_last", minimum=0)
        return self.backend.prune(thread_id, keep_last=keep_last, reducers=self._reducers)

    # ----------------------------------------------------------------- internals

    def _info(self, thread_id: str) -> ThreadInfo:
        info = self.backend.thread(thread_id)
        if info is None:
            names = [t.thread_id for t in self.backend.threads()]
            shown = ", ".join(repr(name) for name in names[:_THREADS_SHOWN])
            if len(names) > _THREADS_SHOWN:
                shown += f" and {len(names) - _THREADS_SHOWN} more"
            there = f"its threads are {shown}" if names else "it has no threads yet"
            raise PersistError(
                f"thread {thread_id!r} does not exist in {self.location}; {there}. "
                "Check the id (weft threads lists them) or the database"
            )
        return info

    def _replay(self, info: ThreadInfo, at: int | None, progress: Progress | None = None) -> Store:
        """The thread's store as of ``at`` (default its last step)."""
        if at is not None:
            _check_step(info, at)
        checkpoint = self.backend.load(info.thread_id, step=at)
        events = checkpoint.events
        ticking = events if progress is None else _ticking(events, progress)
        return build_store(
            checkpoint.snapshot, ticking, reducers=self._reducers, types=self.backend.types
        )

    def _summary(
        self, info: ThreadInfo, store: Store | None, *, error: str | None = None
    ) -> ThreadSummary:
        runs: dict[str, RunRecord] = {}
        steps: dict[str, int] = {}
        units: dict[str, int] = {}
        waiting: dict[str, int] = {}
        entries = size = 0
        for entry in store.entries() if store is not None else ():
            entries += 1
            value = entry.value
            size += _build.size_of(value)
            if entry.kind != KIND:
                continue
            run_id = entry.path.split("/", 1)[0]
            if isinstance(value, RunRecord):
                runs[entry.path] = value
                steps[entry.path] = entry.seq
            elif isinstance(value, StepRecord):
                units[run_id] = units.get(run_id, 0) + 1
            elif isinstance(value, Pause) and not value.answered:
                waiting[run_id] = waiting.get(run_id, 0) + 1
        summaries = sorted(
            (
                RunSummary(
                    run_id=run_id,
                    kind=record.kind,
                    status=record.status,
                    units=units.get(run_id, 0),
                    waiting=waiting.get(run_id, 0),
                    started_at=record.started_at,
                    duration_ms=record.duration_ms,
                    step=steps[run_id],
                    record=record,
                )
                for run_id, record in runs.items()
            ),
            key=lambda r: (r.started_at, r.run_id),
        )
        return ThreadSummary(
            thread_id=info.thread_id,
            first_step=info.first_step,
            last_step=info.last_step,
            entries=entries,
            size_bytes=size,
            created_at=info.created_at,
            updated_at=info.updated_at,
            parent_thread=info.parent_thread,
            parent_step=info.parent_step,
            runs=tuple(summaries),
            writers=tuple(self.backend.runs(info.thread_id)),
            error=error,
        )


def _check_step(info: ThreadInfo, step: object) -> None:
    if not isinstance(step, int) or isinstance(step, bool):
        raise StepError(f"step {step!r}: expected a whole number")
    if not info.first_step <= step <= info.last_step:
        since = " (it was pruned or forked there)" if info.first_step else ""
        raise StepError(
            f"thread {info.thread_id!r} has no step {step}: its steps go from "
            f"{info.first_step}{since} to {info.last_step}"
        )


def _check_whole(value: object, name: str, *, minimum: int) -> None:
    if not isinstance(value, int) or isinstance(value, bool) or value < minimum:
        raise PersistError(f"{name}={value!r}: expected a whole number >= {minimum}")


def _ticking(events: tuple[Event, ...], progress: Progress) -> Iterator[Event]:
    total = len(events)
    progress(0, total)
    for done, event in enumerate(events, 1):
        yield event
        if done % _TICK == 0 or done == total:
            progress(done, total)


def _half(progress: Progress | None, which: int) -> Progress | None:
    """Two replays as one progress: the first half, then the second."""
    if progress is None:
        return None
    return lambda done, total: progress(which * total + done, 2 * total)
