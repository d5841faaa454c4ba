"""What the inspector reads out of a stored thread, as typed records.

Each record is built from the store's own typed records (``RunRecord``, ``StepRecord``,
``Pause``, ``CallIntent`` in ``weft.store.records``) and the backend's (``ThreadInfo``),
never from dicts guessed at: the command line renders them as tables, a web page as JSON
(``to_json``), and both read the same fields.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Literal

from weft.persist import RunInfo
from weft.store import CallIntent, Pause, RunRecord, StepRecord, to_jsonable
from weft.store.records import RECORDS, RunStatus

UnitRecord = RunRecord | StepRecord | Pause | CallIntent
"""A run's bookkeeping record as the timeline shows it."""

TimelineStatus = Literal[
    "running", "completed", "paused", "finished", "waiting", "answered", "pending", "failed"
]
ChangeKind = Literal["added", "removed", "changed"]


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class RunSummary:
    """One run recorded in a thread (a ``RunRecord`` at ``step:<run id>``): its ``kind``
    (``graph``, ``agent``, ``plan``, ``turn`` ...), ``status``, how many ``units`` finished
    and how many questions wait for an answer (``waiting``)."""

    run_id: str
    kind: str
    status: RunStatus
    units: int
    waiting: int
    started_at: float
    duration_ms: float | None
    step: int
    """The thread's step at which the run record was last written."""
    record: RunRecord


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class ThreadSummary:
    """One stored thread: its steps (``first_step`` to ``last_step``; a pruned or forked
    thread starts later), how many entries its state holds and their JSON size
    (``size_bytes``), when it was last written (``updated_at``, epoch seconds), where it was
    forked from, its runs (the ``RunRecord`` s in it) and its ``writers``: the processes'
    run ids that appended to it, with the steps each appended (``RunInfo``; a run recorded
    by a ``DurableRun`` has the run's id by default)."""

    thread_id: str
    first_step: int
    last_step: int
    entries: int
    size_bytes: int
    created_at: float
    updated_at: float
    parent_thread: str | None
    parent_step: int | None
    runs: tuple[RunSummary, ...]
    writers: tuple[RunInfo, ...] = ()
    error: str | None = None
    """Why the thread could not be replayed (a reducer of your own not given, say): its
    entries, size and runs are then unknown (0 and empty)."""

    @property
    def steps(self) -> int:
        """The steps stored (events since ``first_step``)."""
        return self.last_step - self.first_step

    @property
    def paused(self) -> bool:
        """Whether some question of the thread's runs waits for a person's answer (a run
        answered but not resumed yet waits for its owner, not for a person)."""
        return any(run.waiting for run in self.runs)


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class TimelineItem:
    """One line of a thread's timeline: a run, or a unit of work recorded in it (a graph
    node, an agent iteration, a keyed call, a call of a plan, a task, a turn), or a question
    one of them asked.

    ``unit`` is the path inside the run (``""`` for the run itself, ``iter/2/calls/reply``
    for a call nested in an iteration) and ``depth`` how deep it is nested among the run's
    lines (the run 0, a unit 1, a unit recorded inside it 2 ...); ``kind`` the
    record's kind (``pause`` for a question, ``call`` for a keyed call, else the
    ``StepRecord``'s: ``node``, ``iteration``, ``turn`` ...); ``source`` who wrote
    the record; ``step`` the thread's step at which it was last written. A run's own line
    has ``unit == ""`` and the run's kind (``graph``, ``agent`` ...)."""

    run_id: str
    unit: str
    depth: int
    kind: str
    label: str | None
    status: TimelineStatus
    started_at: float | None
    duration_ms: float | None
    source: str | None
    step: int
    record: UnitRecord

    @property
    def path(self) -> str:
        """Where the record is stored (kind ``step``)."""
        if not self.unit:
            return self.run_id
        return f"{self.run_id}/{self.unit}" if self.run_id else self.unit


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class ThreadEvent:
    """One stored event of a thread: its ``step``, the run (process) that appended it, and
    the change (``op`` on ``kind``:``path``, the ``value`` written, by ``source``, at
    ``time``, epoch seconds)."""

    step: int
    run_id: str
    op: str
    kind: str
    path: str
    value: Any
    source: str | None
    reducer: str
    time: float

    @property
    def key(self) -> str:
        return f"{self.kind}:{self.path}"


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class StateEntry:
    """One entry of a thread's state at some step (``step`` is when it was last written)."""

    key: str
    kind: str
    path: str
    value: Any
    source: str | None
    created_at: float
    updated_at: float
    step: int
    size_bytes: int


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class ThreadState:
    """A thread's entries as of ``step`` (those under ``prefix`` when one was given), run
    records left out (the timeline shows those)."""

    thread_id: str
    step: int
    prefix: str | None
    entries: tuple[StateEntry, ...]


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class EntryChange:
    """How one key differs between two steps: ``added``, ``removed`` or ``changed``
    (``before``/``after`` are the values; None where the key held nothing)."""

    key: str
    change: ChangeKind
    before: Any
    after: Any
    source: str | None
    """Who wrote the value at the later step (None for a removal)."""


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class StateDiff:
    """What changed in a thread's state from step ``a`` to step ``b``, key by key, and how
    many events lie between."""

    thread_id: str
    a: int
    b: int
    events: int
    changes: tuple[EntryChange, ...]


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class MemoryItem:
    """A memory entry as ``memory_list`` shows it: its ``key`` and memory ``kind``
    (``step_result``, ``task_result``, ``input``, ``shared``), title, description, writer
    (``source``), JSON size and times (epoch seconds)."""

    key: str
    kind: str
    title: str | None
    description: str | None
    source: str | None
    value_bytes: int
    created_at: float
    updated_at: float
    value: Any


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class Fork:
    """A thread forked from ``parent_thread`` at ``parent_step``."""

    thread_id: str
    parent_thread: str
    parent_step: int
    last_step: int


def to_json(value: Any) -> Any:
    """The JSON-ready form of any inspector record (or a list, tuple or dict of them):
    dataclass fields by name, every field even at its default, with each record's
    properties (``steps``, ``paused``, ``path``, ``key``, a question's ``id``) beside them;
    weft's run records (``RunRecord``, ``StepRecord``, ``Pause``, ``CallIntent``) say which
    they are in ``"type"``; any other stored value as the store's codec writes it."""
    if type(value) in (list, tuple):
        return [to_json(item) for item in value]
    if type(value) is dict:
        return {str(key): to_json(item) for key, item in value.items()}
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        out = {f.name: to_json(getattr(value, f.name)) for f in dataclasses.fields(value)}
        if isinstance(value, RECORDS):
            out = {"type": type(value).__name__, **out}
        for name in _PROPERTIES.get(type(value), ()):
            out[name] = getattr(value, name)
        return out
    return to_jsonable(value)


_PROPERTIES: dict[type, tuple[str, ...]] = {
    ThreadSummary: ("steps", "paused"),
    TimelineItem: ("path",),
    ThreadEvent: ("key",),
    Pause: ("id",),
}
