"""The typed records of the one run model: what a run is, what finished in it, and what
observers are told. Every layer writes these and nothing else to say how work went: the
WorkGraph engine, the agent loop, plans of tool calls, the executors, keyed calls and the
turn runtime. The persistence layer stores them through the one codec, and resume, the
turn runtime's stage events and any inspector read the same types.

Where they live (kind ``step``; ``weft.store.runlog.RunLog`` reads and writes them)::

    <run id>                  RunRecord    the run: its kind, status, what it is made of
    <run id>/<unit>           StepRecord   a unit of work that finished, with its result
    <run id>/<unit>/calls/<k> StepRecord   a keyed call made inside that unit (kind "call")
    <run id>/<unit>/pauses/<n> Pause       the unit's n-th question to a person, and its answer
    calls/<k>                 StepRecord   a keyed call of a durable run as a whole
    .../calls/<k>             CallIntent   a keyed call that began and has no result yet
    (notes)                   Note         started / finished / failed / skipped, for observers

A *unit* is whatever a layer resumes by: a graph node (its key ``fetch#2``), an agent
iteration (``iter/3``), an action or branch of one, a call of a plan, a task of an executor,
a turn. A unit path may have several segments; a run id has none (no ``/``).

A ``StepRecord`` with ``committed=False`` holds the unit's writes (``changes``) because they
are not in the store yet (the unit worked on a fork that was not merged when it finished);
resume applies them. Otherwise the unit's writes are in the store already.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any, Final, Literal, cast

from weft.errors import StoreError
from weft.store.events import Event
from weft.store.values import freeze, register_builtin

KIND: Final = "step"
"""The store kind every record lives in."""
CALLS: Final = "calls"
"""The path segment under which keyed calls are recorded."""
PAUSES: Final = "pauses"
"""The path segment under which a unit's questions to a person are recorded."""

RunStatus = Literal["running", "completed", "paused"]
NoteEvent = Literal["started", "finished", "failed", "skipped", "paused"]


_SCALARS: Final = frozenset({str, int, float, bool})


@dataclass(frozen=True, slots=True, kw_only=True)
class RunRecord:
    """A run: ``kind`` (``graph``, ``agent``, ``plan`` ...), ``status``, the ``units`` it is
    made of when they are known up front (a graph's node keys: a run id recorded for
    another graph is refused), the store's step when it ``began``, and its ``output`` once
    it completed."""

    kind: str
    status: RunStatus = "running"
    units: tuple[str, ...] = ()
    began: int = 0
    output: Any = None
    started_at: float = 0.0
    duration_ms: float | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.units, tuple):
            object.__setattr__(self, "units", tuple(self.units))
        output = self.output
        if output is not None and output.__class__ not in _SCALARS:
            object.__setattr__(self, "output", freeze(output, where="the output of a run"))


@dataclass(frozen=True, slots=True, kw_only=True, init=False)
class StepRecord:
    """A unit of work that finished: its ``result`` and how it ended.

    ``kind`` says what the unit is (``node``, ``iteration``, ``reply``, ``action``,
    ``branch``, ``call``, ``task``, ``turn``); ``label`` is its human name (a node's id, a
    tool's name); ``flag`` a graph node's stop flag when it is not ``Continue``;
    ``tuple_result`` that the result was a tuple (JSON keeps lists); ``changes`` the unit's
    writes, kept when they are not in the store yet (``committed=False``) or when a later
    view is rebuilt from them on resume; ``writes`` how many events the unit's commit made
    before its record (the record is the commit's last event: resume tells the run's own
    writes from anyone else's by it); ``began`` the store's step when the unit's view was
    taken (for that rebuild); ``started_at`` is wall-clock seconds.
    """

    kind: str = "node"
    label: str | None = None
    result: Any = None
    flag: str | None = None
    tuple_result: bool = False
    changes: tuple[Event, ...] | None = None
    committed: bool = True
    writes: int = 0
    began: int | None = None
    started_at: float | None = None
    duration_ms: float | None = None

    def __init__(
        self,
        *,
        kind: str = "node",
        label: str | None = None,
        result: Any = None,
        flag: str | None = None,
        tuple_result: bool = False,
        changes: tuple[Event, ...] | None = None,
        committed: bool = True,
        writes: int = 0,
        began: int | None = None,
        started_at: float | None = None,
        duration_ms: float | None = None,
    ) -> None:
        # A frozen dataclass's own __init__ sets each field through object.__setattr__, at
        # six times the cost of a plain store; a recorded run makes one per node. The
        # record is filled as its settable twin (``_Building``) and takes its class back.
        object.__setattr__(self, "__class__", _Building)
        building = cast(_Building, self)
        building.kind = kind
        building.label = label
        building.result = result
        building.flag = flag
        building.tuple_result = tuple_result
        building.changes = changes
        building.committed = committed
        building.writes = writes
        building.began = began
        building.started_at = started_at
        building.duration_ms = duration_ms
        building.__class__ = StepRecord  # type: ignore[assignment]
        self.__post_init__()

    def __post_init__(self) -> None:
        result = self.result
        if result is not None and result.__class__ not in _SCALARS:  # the hot path: inlined
            object.__setattr__(self, "result", freeze(result, where=f"the result of a {self.kind}"))
        changes = self.changes
        if changes is not None and not (
            isinstance(changes, tuple) and all(e.__class__ is Event for e in changes)
        ):
            try:
                rebuilt = tuple(Event(*item) for item in changes)
            except TypeError as exc:
                raise StoreError(f"a step record's changes are not events: {exc}") from None
            object.__setattr__(self, "changes", rebuilt)

    @property
    def value(self) -> Any:
        """The result as the unit returned it (a tuple again if it was one)."""
        if self.tuple_result and isinstance(self.result, list):
            return tuple(self.result)
        return self.result


_new: Final = object.__new__


class _Building:
    """``StepRecord``'s slots, in its order, settable: a record is built in one of these
    with plain attribute stores, then becomes a ``StepRecord`` by taking its class (the
    layouts are the same, so Python allows it)."""

    __slots__ = StepRecord.__slots__
    kind: str
    label: str | None
    result: Any
    flag: str | None
    tuple_result: bool
    changes: tuple[Event, ...] | None
    committed: bool
    writes: int
    began: int | None
    started_at: float | None
    duration_ms: float | None


def node_record(writes: int, started_at: float, duration_ms: float) -> StepRecord:
    """``StepRecord(writes=writes, started_at=started_at, duration_ms=duration_ms)``, built
    without the keyword call (nothing to check: no result, no changes): the record of a
    durable chain's node, one per node, 1.5 us -> 0.5 us through the slots' setters ->
    0.19 us built as a ``_Building``."""
    record = _new(_Building)
    record.kind = "node"
    record.label = record.result = record.flag = record.changes = record.began = None
    record.tuple_result = False
    record.committed = True
    record.writes = writes
    record.started_at = started_at
    record.duration_ms = duration_ms
    record.__class__ = StepRecord  # type: ignore[assignment]
    return record  # type: ignore[return-value]


@dataclass(frozen=True, slots=True, kw_only=True)
class Note:
    """A lifecycle event for observers: a unit ``started``, ``finished``, ``failed`` or was
    ``skipped``. It changes no entry (``Store.note``); ``kind`` says what the unit is (as a
    ``StepRecord``'s does); ``reason`` why a unit was skipped (``aborted``, ``recorded``,
    ``cancelled``). ``weft.store.notes`` has the notes of runs and calls."""

    event: NoteEvent
    unit: str
    kind: str = "node"
    label: str | None = None
    run_id: str | None = None
    duration_ms: float | None = None
    flag: str | None = None
    error: str | None = None
    reason: str | None = None


_NOTE_SLOTS: Final = tuple(getattr(Note, f.name).__set__ for f in fields(Note))
"""The slots' own setters, in ``Note``'s field order (``node_note`` sets them by position). A
frozen dataclass's own ``__init__`` sets each field through ``object.__setattr__``."""


def node_note(
    event: NoteEvent,
    unit: str,
    label: str | None,
    run_id: str,
    duration_ms: float | None = None,
    flag: str | None = None,
) -> Note:
    """``Note(event=event, unit=unit, label=label, run_id=run_id, duration_ms=duration_ms,
    flag=flag)`` built without the keyword call: a graph node's started and finished notes,
    two per node of a watched run (1.25 us -> 0.6 us)."""
    note: Note = _new(Note)
    s = _NOTE_SLOTS
    s[0](note, event)
    s[1](note, unit)
    s[2](note, "node")
    s[3](note, label)
    s[4](note, run_id)
    s[5](note, duration_ms)
    s[6](note, flag)
    s[7](note, None)
    s[8](note, None)
    return note


@dataclass(frozen=True, slots=True, kw_only=True)
class Pause:
    """A unit of work that stopped to ask a person (``weft.graph.interrupt``): the
    ``question`` (any JSON value) it asked at its ``index``-th pause point, and the
    ``answer`` once one was given. ``id`` (where it is stored) names it when answering."""

    run_id: str
    unit: str
    label: str | None = None
    index: int = 0
    question: Any = None
    answered: bool = False
    answer: Any = None
    asked_at: float = 0.0
    answered_at: float | None = None

    def __post_init__(self) -> None:
        for name in ("question", "answer"):
            value = getattr(self, name)
            if value is not None and value.__class__ not in _SCALARS:
                object.__setattr__(self, name, freeze(value, where=f"the {name} of a pause"))

    @property
    def id(self) -> str:
        """Its path in kind ``step``: ``<run id>/<unit>/pauses/<index>``."""
        return f"{self.run_id}/{self.unit}/{PAUSES}/{self.index}"


@dataclass(frozen=True, slots=True, kw_only=True)
class CallIntent:
    """A keyed call that began and has no result yet: recorded (on a durable run,
    committed) before the call is made, and replaced by the call's ``StepRecord``.

    ``key`` is the idempotency key the call is given: the record's path and a random
    suffix, read back from here on resume (so every attempt has the same key) and distinct
    from a call at the same path in another database. ``label`` is the caller's key;
    ``failed`` the error of an attempt that raised (its caller saw it, so calling again
    makes the call again); ``started_at`` the first attempt's wall-clock seconds."""

    key: str
    label: str
    started_at: float = 0.0
    failed: str | None = None


register_builtin(RunRecord, "weft.RunRecord")
register_builtin(StepRecord, "weft.StepRecord")
register_builtin(Note, "weft.Note")
register_builtin(Pause, "weft.Pause")
register_builtin(CallIntent, "weft.CallIntent")

RECORDS: Final = (RunRecord, StepRecord, CallIntent, Pause)
"""The record types that are a run's bookkeeping, never anybody's data (memory listings
leave entries holding them out)."""
