"""How the ``Reader`` builds its records from a replayed store: timeline lines from the run
records, events, state entries, and answers recorded on the questions waiting."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import replace
from typing import Any

from weft.errors import PauseError, WeftError
from weft.inspect.records import StateEntry, ThreadEvent, TimelineItem, TimelineStatus
from weft.store import (
    CallIntent,
    Entry,
    Event,
    Pause,
    RunLog,
    RunRecord,
    StepRecord,
    Store,
    value_bytes,
)
from weft.store.records import CALLS, KIND, RECORDS


def timeline(store: Store, earlier: Iterable[Event] = ()) -> list[TimelineItem]:
    """Every run of the store's records, in the order they began, each followed by its
    units as a tree (see ``tree_order``). ``earlier`` are writes of unit records that a
    later record at the same path replaced (a turn runtime records each turn at one path):
    each is a line too."""
    groups: dict[str, list[TimelineItem]] = {}
    logged: list[Entry | Event] = [*store.entries(kind=KIND), *earlier]
    for e in logged:
        item = timeline_item(e.path, e.value, e.source, e.seq, store)
        if item is not None:
            groups.setdefault(item.run_id, []).append(item)
    ordered = [tree_order(group) for group in groups.values()]
    ordered.sort(key=group_start)
    return [item for group in ordered for item in group]


def replaced(store: Store, events: Iterable[Event]) -> list[Event]:
    """The writes among ``events`` of a unit's ``StepRecord`` that a later write at the same
    path replaced with another ``StepRecord``: units recorded again at one path."""
    out = []
    for event in events:
        if event.op != "write" or event.kind != KIND or event.value.__class__ is not StepRecord:
            continue
        entry = store.get(KIND, event.path)
        if entry is not None and entry.seq != event.seq and entry.value.__class__ is StepRecord:
            out.append(event)
    return out


def timeline_item(
    path: str, value: Any, source: str | None, step: int, store: Store
) -> TimelineItem | None:
    """The timeline line of a record at ``path`` of kind ``step`` (None for any other
    value)."""
    if not isinstance(value, RECORDS):
        return None
    run_id, _, unit = path.partition("/")
    if run_id == CALLS and not isinstance(store.value(KIND, CALLS, None), RunRecord):
        run_id, unit = "", path  # a keyed call of a durable run as a whole
    status: TimelineStatus
    started: float | None
    duration: float | None
    label: str | None
    if isinstance(value, RunRecord):
        kind, label, status = value.kind, None, value.status
        started, duration = value.started_at, value.duration_ms
    elif isinstance(value, StepRecord):
        kind, label, status = value.kind, value.label, "finished"
        started, duration = value.started_at, value.duration_ms
    elif isinstance(value, Pause):
        kind, label = "pause", value.label
        status = "answered" if value.answered else "waiting"
        started = value.asked_at
        answered = value.answered_at
        duration = None if answered is None else round((answered - started) * 1000, 3)
    else:
        assert isinstance(value, CallIntent)
        kind, label = "call", value.label
        status = "failed" if value.failed is not None else "pending"
        started, duration = value.started_at, None
    return TimelineItem(
        run_id=run_id,
        unit=unit,
        depth=0,  # set by tree_order
        kind=kind,
        label=label,
        status=status,
        started_at=started or None,
        duration_ms=duration,
        source=source,
        step=step,
        record=value,
    )


def tree_order(items: list[TimelineItem]) -> list[TimelineItem]:
    """A run's lines as a tree: the run first, then each unit before the units recorded
    inside it (``depth``: how many of them enclose it, plus one), siblings in the order
    they began. A unit is recorded when it finishes, after what ran inside it, so it begins
    at the first step recorded in its subtree."""
    units = {item.unit for item in items if item.unit}
    first: dict[str, int] = {}
    for item in items:
        parts = item.unit.split("/") if item.unit else []
        for end in range(len(parts) + 1):
            prefix = "/".join(parts[:end])
            known = first.get(prefix)
            if known is None or item.step < known:
                first[prefix] = item.step
    placed = []
    for item in items:
        parts = item.unit.split("/") if item.unit else []
        enclosing = sum("/".join(parts[:end]) in units for end in range(1, len(parts)))
        placed.append(replace(item, depth=enclosing + 1 if item.unit else 0))
    return sorted(placed, key=lambda i: (0 if not i.unit else 1, first[i.unit], i.depth, i.step))


def group_start(items: list[TimelineItem]) -> tuple[float, int]:
    starts = [i.started_at for i in items if i.started_at is not None]
    return (min(starts) if starts else float("inf"), min(i.step for i in items))


def record_answers(store: Store, thread_id: str, answers: Mapping[str, Any]) -> list[Pause]:
    by_run: dict[str, dict[str, Any]] = {}
    for key, value in answers.items():
        found = store.value(KIND, key, None) if isinstance(key, str) else None
        if not isinstance(found, Pause) or found.answered:
            waiting = [
                p.id
                for e in store.entries(kind=KIND)
                if isinstance(p := e.value, Pause) and not p.answered
            ]
            listed = ", ".join(repr(w) for w in waiting) or "none"
            what = "was answered already" if isinstance(found, Pause) else "is no question"
            raise PauseError(
                f"{key!r} {what} in thread {thread_id!r}; the questions waiting for an answer "
                f"are: {listed}"
            )
        by_run.setdefault(found.run_id, {})[key] = value
    for run_id, given in by_run.items():
        RunLog(store, run_id).answer(given, error=PauseError)
    return [store.value(KIND, key) for key in answers]


def thread_event(run_id: str, event: Event) -> ThreadEvent:
    return ThreadEvent(
        step=event.seq,
        run_id=run_id,
        op=event.op,
        kind=event.kind,
        path=event.path,
        value=event.value,
        source=event.source,
        reducer=event.reducer,
        time=event.time,
    )


def state_entry(entry: Entry) -> StateEntry:
    value = entry.value
    return StateEntry(
        key=entry.key,
        kind=entry.kind,
        path=entry.path,
        value=value,
        source=entry.source,
        created_at=entry.created_at,
        updated_at=entry.updated_at,
        step=entry.seq,
        size_bytes=size_of(value),
    )


def values(store: Store) -> dict[str, Any]:
    return {entry.key: entry.value for entry in store.entries() if not a_record(entry)}


def a_record(entry: Entry) -> bool:
    return entry.kind == KIND and isinstance(entry.value, RECORDS)


def size_of(value: Any) -> int:
    try:
        return value_bytes(value)
    except WeftError:  # a type registered in another process's registry only
        return len(repr(value).encode("utf-8"))
