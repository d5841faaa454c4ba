"""The versioned state codec: which schema version saved a thread, and migrations.

Every turn ends by writing the thread's *record*, one entry at kind ``step``, path
``weft.runtime``: ``{"version": <schema version>, "turns": <turns so far>}``. It is the
last write of the turn's transaction, so it also marks where each turn ends in the
thread's log (time travel by turn, and naming the turn of a bad record use that).

Loading a thread reads the record:

- the current version: the thread is used as it is;
- an older version: ``migrations[v](state) -> state`` runs for ``v`` from the thread's
  version up to the current one, in order, on the thread's stored fields as a nested
  dict (``{"session_progress": {"turn_count": 3}, ...}``). The runtime writes the
  difference back in one transaction (changed fields replaced, dropped fields deleted)
  with the new version, so a thread migrates once. A step with no migration is a
  ``StateVersionError`` naming both versions;
- a newer version (a newer deployment wrote it): ``StateVersionError``, and nothing is
  changed;
- a record or event that cannot be read: ``MalformedStateError`` naming the thread, the
  turn it belongs to and its step. Nothing is changed, and every earlier turn stays
  loadable (``TurnRuntime.thread_state(thread_id, turn=n)``).

A thread with stored fields but no record predates versioning: it is version 1. The
log replays old writes with the reducer each was written with, so a migration may
rename, add, drop and transform fields, but a field that changes its reducer needs a
new name; a legacy field reduced by your own function is named in ``legacy_reducers``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

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
from weft.store import Event, Store, thaw

RECORD_KIND: Final = "step"
RECORD_PATH: Final = "weft.runtime"
MIGRATE_SOURCE: Final = "weft.runtime/migrate"
UNREADABLE: Final = (CorruptRecordError, CodecError)
"""What a backend raises for a stored record it cannot read."""

Migration = Callable[[dict[str, Any]], dict[str, Any]]


@dataclass(frozen=True, slots=True, kw_only=True)
class ThreadRecord:
    """A thread's record: the schema version that saved it and its turns so far."""

    version: int
    turns: int


@dataclass(frozen=True, slots=True, kw_only=True)
class StateCodec:
    """The schema's version, and the migrations from each older one (see the module
    docstring). ``migrations[1]`` takes a version-1 state to version 2."""

    version: int = 1
    migrations: Mapping[int, Migration] = field(default_factory=dict)
    legacy_reducers: Mapping[str, ReducerFn] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if isinstance(self.version, bool) or not isinstance(self.version, int) or self.version < 1:
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

    def record(self, turns: int) -> dict[str, int]:
        """The record a turn writes."""
        return {"version": self.version, "turns": turns}

    def read(self, store: Store, thread_id: str) -> ThreadRecord | None:
        """The thread's record (None for a new thread), checked against this version."""
        entry = store.get(RECORD_KIND, RECORD_PATH)
        if entry is None:
            if next(iter(store.entries(kind="state", key_prefix="state:")), None) is None:
                return None
            found = ThreadRecord(version=1, turns=0)  # stored fields from before versioning
        else:
            parsed = parse_record(entry.value)
            if parsed is None:
                raise MalformedStateError(
                    f"thread {thread_id!r}: its runtime record (step {entry.seq}) is "
                    f"{entry.value!r}, not {{'version': int, 'turns': int}}; weft did not "
                    "write it this way. The turns before it stay loadable "
                    "(thread_state(thread_id, turn=n))",
                    thread_id=thread_id,
                    step=entry.seq,
                )
            found = parsed
        if found.version > self.version:
            raise StateVersionError(
                f"thread {thread_id!r} was saved by schema version {found.version}, and this "
                f"runtime's schema is version {self.version}: a newer deployment wrote it. "
                "Run the newer code for this thread (or add the newer schema with a "
                "migration); nothing was changed",
                thread_id=thread_id,
                found=found.version,
                current=self.version,
            )
        return found

    def migrate(self, state: dict[str, Any], found: int, thread_id: str) -> dict[str, Any]:
        """``state`` taken from version ``found`` to the current one."""
        for version in range(found, self.version):
            fn = self.migrations.get(version)
            if fn is None:
                raise StateVersionError(
                    f"thread {thread_id!r} was saved by schema version {found} and the schema "
                    f"is version {self.version}, but there is no migration from version "
                    f"{version} to {version + 1}; add StateCodec(migrations={{{version}: fn}})",
                    thread_id=thread_id,
                    found=found,
                    current=self.version,
                )
            state = fn(state)
            if not isinstance(state, dict):
                raise StateVersionError(
                    f"migrations[{version}] returned a {type(state).__name__}; a migration "
                    "returns the state as a dict",
                    thread_id=thread_id,
                    found=found,
                    current=self.version,
                )
        return state


def parse_record(value: Any) -> ThreadRecord | None:
    """A record value as a ``ThreadRecord``, or None when it is not one."""
    if not isinstance(value, dict):
        return None
    version, turns = value.get("version"), value.get("turns")
    if not all(isinstance(n, int) and not isinstance(n, bool) for n in (version, turns)):
        return None
    assert isinstance(version, int) and isinstance(turns, int)
    if version < 1 or turns < 0:
        return None
    return ThreadRecord(version=version, turns=turns)


def migrate_store(
    tx: Store, schema: StateSchema, codec: StateCodec, found: int, thread_id: str
) -> None:
    """Migrate the thread in ``tx`` (a transaction's fork) and write the new record."""
    old = {e.path: e.value for e in tx.entries(kind="state", key_prefix="state:")}
    state = codec.migrate(thaw(unflatten(old)), found, thread_id)
    writer = f"the migration to schema version {codec.version}"
    new: dict[str, Any] = {}
    for key, value in state.items():
        try:
            pairs = schema.split(key, value, writer)
        except ChannelOwnershipError as exc:
            raise StateVersionError(
                f"thread {thread_id!r}: {exc}", thread_id=thread_id, found=found,
                current=codec.version,
            ) from exc  # fmt: skip
        for leaf, item in pairs:
            if not leaf.persisted:
                raise StateVersionError(
                    f"thread {thread_id!r}: {writer} left {leaf.path!r}, a {leaf.lifecycle} "
                    "field, which a thread does not store; drop it in the migration",
                    thread_id=thread_id,
                    found=found,
                    current=codec.version,
                )
            new[leaf.path] = item
    for path, value in new.items():
        if path not in old or old[path] != value:
            tx.write("state", path, value, source=MIGRATE_SOURCE, replace=True)
    for path in old:
        if path not in new:
            tx.delete("state", path, source=MIGRATE_SOURCE)
    turns = (parse_record(tx.value(RECORD_KIND, RECORD_PATH, None)) or ThreadRecord(
        version=found, turns=0)).turns  # fmt: skip
    tx.write(RECORD_KIND, RECORD_PATH, codec.record(turns), source=MIGRATE_SOURCE, replace=True)


def _is_record(event: Event) -> bool:
    return event.op == "write" and event.kind == RECORD_KIND and event.path == RECORD_PATH


class _Unreadable(Exception):
    def __init__(self, step: int) -> None:
        self.step = step


def _walk(backend: Backend, thread_id: str) -> Iterator[Event]:
    """The thread's stored events in step order, read in chunks; an event the backend
    cannot decode raises ``_Unreadable`` with its step once the ones before it are out."""
    info = backend.thread(thread_id)
    if info is None:
        return
    after, last = info.first_step, info.last_step
    while after < last:
        upto = min(after + 512, last)
        try:
            chunk = [logged.event for logged in backend.history(thread_id, after=after, upto=upto)]
        except UNREADABLE:
            for step in range(after + 1, upto + 1):
                try:
                    one = backend.history(thread_id, after=step - 1, upto=step)
                except UNREADABLE:
                    raise _Unreadable(step) from None
                yield from (logged.event for logged in one)
            return
        yield from chunk
        after = upto


def locate_bad_record(backend: Backend, thread_id: str) -> tuple[int | None, int]:
    """(step, turn) of the first record of the thread that cannot be read: an event the
    backend cannot decode, or a runtime record that is not one. ``turn`` counts the
    turns completed before it, plus one (an error path: it reads the log)."""
    turns = 0
    try:
        for event in _walk(backend, thread_id):
            if _is_record(event):
                if parse_record(event.value) is None:
                    return event.seq, turns + 1
                if event.source != MIGRATE_SOURCE:
                    turns += 1
    except _Unreadable as bad:
        return bad.step, turns + 1
    return None, turns + 1


def turn_step(backend: Backend, thread_id: str, turn: int) -> int | None:
    """The step at which turn ``turn`` of the thread ended (its record), or None. Reads
    the log up to that turn only, so a bad record after it does not matter."""
    try:
        for event in _walk(backend, thread_id):
            if _is_record(event) and event.source != MIGRATE_SOURCE:
                parsed = parse_record(event.value)
                if parsed is not None and parsed.turns == turn:
                    return event.seq
    except _Unreadable:
        return None
    return None
