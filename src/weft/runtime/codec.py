"""A thread's records, and the versioned state codec: which schema version saved a thread.

The records (the README's "Records and versions") are kept by a ``RunLog`` of the run id
``weft.turns``; each turn's record is the last write of its transaction, which marks where
the turn ends in the thread's log. An older version is migrated once on load, the
difference written back in one transaction. A thread with stored fields but no record
predates versioning: it is version 1. Old writes replay with the reducer each was written
with, so a field that changes its reducer needs a new name; a legacy field reduced by your
own function is named in ``legacy_reducers``.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Final, TypeGuard

from weft.errors import (
    ChannelOwnershipError,
    CodecError,
    CorruptRecordError,
    MalformedStateError,
    SchemaError,
    StateVersionError,
)
from weft.persist import Backend
from weft.runtime.lifecycle import ReducerFn
from weft.runtime.schema import StateSchema, unflatten
from weft.store import Event, RunLog, StepRecord, Store, thaw
from weft.store.records import KIND

RUN_ID: Final = "weft.turns"
SCHEMA: Final = "schema"
TURN: Final = "turn"
SCHEMA_PATH: Final = f"{RUN_ID}/{SCHEMA}"
TURN_PATH: Final = f"{RUN_ID}/{TURN}"
MIGRATE_SOURCE: Final = "weft.runtime/migrate"
UNREADABLE: Final = (CorruptRecordError, CodecError)
"""What a backend raises for a stored record it cannot read."""

Migration = Callable[[dict[str, Any]], dict[str, Any]]


@dataclass(frozen=True, slots=True, kw_only=True)
class ThreadRecord:
    """What a thread's records say: the schema version that saved it and its turns so far."""

    version: int
    turns: int


@dataclass(frozen=True, slots=True, kw_only=True)
class StateCodec:
    """The schema's version, and the migrations from each older one: ``migrations[1]``
    takes a version-1 state (the stored fields as a nested dict) to version 2."""

    version: int = 1
    migrations: Mapping[int, Migration] = field(default_factory=dict)
    legacy_reducers: Mapping[str, ReducerFn] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not _count(self.version):
            raise SchemaError(f"StateCodec(version={self.version!r}): a version is an int >= 1")
        for key, fn in self.migrations.items():
            if isinstance(key, bool) or not isinstance(key, int) or not 1 <= key < self.version:
                raise SchemaError(
                    f"StateCodec: migrations[{key!r}] should take version {key!r} to the next, "
                    f"but versions run from 1 to {self.version - 1} below the current "
                    f"{self.version}"
                )
            if not callable(fn):
                raise SchemaError(f"StateCodec: migrations[{key}] is not a function")

    def read(self, store: Store, thread_id: str) -> ThreadRecord | None:
        """The thread's record (None for a new thread), checked against this version."""
        schema, turn = store.get(KIND, SCHEMA_PATH), store.get(KIND, TURN_PATH)
        if schema is not None:
            version = _result(schema.value, SCHEMA)
            if version is None:
                raise _not_a_record(thread_id, schema.seq, schema.value)
        elif turn is not None or next(iter(store.entries(kind="state", key_prefix="state:")), None):
            version = 1  # stored fields from before versioning
        else:
            return None
        turns = 0 if turn is None else _result(turn.value, TURN)
        if turns is None:
            assert turn is not None
            raise _not_a_record(thread_id, turn.seq, turn.value)
        if version > self.version:
            raise StateVersionError(
                f"thread {thread_id!r} was saved by schema version {version}, and this "
                f"runtime's schema is version {self.version}: a newer deployment wrote it. "
                "Run the newer code for this thread (or add the newer schema with a "
                "migration); nothing was changed",
                thread_id=thread_id,
                found=version,
                current=self.version,
            )
        return ThreadRecord(version=version, turns=turns)

    def migrate(self, state: dict[str, Any], found: int, thread_id: str) -> dict[str, Any]:
        """``state`` taken from version ``found`` to the current one."""
        versions: dict[str, Any] = {"thread_id": thread_id, "found": found, "current": self.version}
        for version in range(found, self.version):
            fn = self.migrations.get(version)
            if fn is None:
                raise StateVersionError(
                    f"thread {thread_id!r} was saved by schema version {found} and the schema "
                    f"is version {self.version}, but there is no migration from version "
                    f"{version} to {version + 1}; add StateCodec(migrations={{{version}: fn}})",
                    **versions,
                )
            state = fn(state)
            if not isinstance(state, dict):
                raise StateVersionError(
                    f"migrations[{version}] returned a {type(state).__name__}; a migration "
                    "returns the state as a dict",
                    **versions,
                )
        return state


def start_turn(tx: Store, version: int) -> None:
    """Open a turn in its transaction: a thread without records gets them first."""
    if tx.get(KIND, SCHEMA_PATH) is None:
        _record_schema(tx, version)


def _record_schema(tx: Store, version: int) -> None:
    log = RunLog(tx, RUN_ID)
    if log.run() is None:
        log.begin("turns")
    log.record(SCHEMA, StepRecord(kind=SCHEMA, result=version))


def end_turn(tx: Store, turn: int, began: int, started_at: float) -> None:
    """Close a turn in its transaction: its turn record, the transaction's last write."""
    duration_ms = (time.time() - started_at) * 1000
    record = StepRecord(
        kind=TURN, result=turn, began=began, started_at=started_at, duration_ms=duration_ms
    )
    RunLog(tx, RUN_ID).record(TURN, record)


def _result(value: Any, kind: str) -> int | None:
    if isinstance(value, StepRecord) and value.kind == kind and _count(value.result):
        return value.result
    return None


def _count(value: Any) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 1


def _not_a_record(thread_id: str, step: int, value: Any) -> MalformedStateError:
    return MalformedStateError(
        f"thread {thread_id!r}: its runtime record (step {step}) is {value!r}, which is not "
        "a record weft writes. The turns before it stay loadable "
        "(thread_state(thread_id, turn=n))",
        thread_id=thread_id,
        step=step,
    )


def migrate_store(
    tx: Store, schema: StateSchema, codec: StateCodec, found: int, thread_id: str
) -> None:
    """Migrate the thread in ``tx`` (a transaction's fork) and record the new version."""
    old = {e.path: e.value for e in tx.entries(kind="state", key_prefix="state:")}
    versions: dict[str, Any] = {"thread_id": thread_id, "found": found, "current": codec.version}
    state = codec.migrate(thaw(unflatten(old)), found, thread_id)
    writer = f"the migration to schema version {codec.version}"
    new: dict[str, Any] = {}
    for key, value in state.items():
        try:
            pairs = schema.split(key, value, writer)
        except ChannelOwnershipError as exc:
            raise StateVersionError(f"thread {thread_id!r}: {exc}", **versions) from exc
        for leaf, item in pairs:
            if not leaf.persisted:
                raise StateVersionError(
                    f"thread {thread_id!r}: {writer} left {leaf.path!r}, a {leaf.lifecycle} "
                    "field, which a thread does not store; drop it in the migration",
                    **versions,
                )
            new[leaf.path] = item
    for path, value in new.items():
        if path not in old or old[path] != value:
            tx.write("state", path, value, source=MIGRATE_SOURCE, replace=True)
    for path in old:
        if path not in new:
            tx.delete("state", path, source=MIGRATE_SOURCE)
    _record_schema(tx, codec.version)


_BAD: Final = -1


def _ends(event: Event) -> int | None:
    """The turn a logged runtime record ends (0: none, ``_BAD``: not a record weft writes);
    None for any other event."""
    if event.op != "write" or event.kind != KIND:
        return None
    path, value = event.path, event.value
    if path == TURN_PATH:
        return _result(value, TURN) or _BAD
    if path == SCHEMA_PATH:
        return _BAD if _result(value, SCHEMA) is None else 0
    return None


def _records(backend: Backend, thread_id: str) -> Iterator[tuple[int, int]]:
    """``(step, _ends(event))`` of the thread's runtime records; an event the backend cannot
    decode is a ``_BAD`` record, and the last."""
    info = backend.thread(thread_id)
    after, last = (0, 0) if info is None else (info.first_step, info.last_step)
    while after < last:
        upto = min(after + 512, last)
        try:
            chunk = [logged.event for logged in backend.history(thread_id, after=after, upto=upto)]
        except UNREADABLE:
            chunk = []
            for step in range(after + 1, upto + 1):
                try:
                    chunk.extend(
                        e.event for e in backend.history(thread_id, after=step - 1, upto=step)
                    )
                except UNREADABLE:
                    yield from _ended(chunk)
                    yield step, _BAD
                    return
        yield from _ended(chunk)
        after = upto


def _ended(events: list[Event]) -> Iterator[tuple[int, int]]:
    for event in events:
        ended = _ends(event)
        if ended is not None:
            yield event.seq, ended


def locate_bad_record(backend: Backend, thread_id: str) -> tuple[int | None, int]:
    """(step, turn) of the thread's first unreadable record (an error path: reads the log)."""
    turns = 0
    for step, ended in _records(backend, thread_id):
        if ended == _BAD:
            return step, turns + 1
        turns += ended > 0
    return None, turns + 1


def turn_step(backend: Backend, thread_id: str, turn: int) -> int | None:
    """The step at which turn ``turn`` of the thread ended, or None; a bad record after it
    does not matter."""
    return next((step for step, ended in _records(backend, thread_id) if ended == turn), None)
