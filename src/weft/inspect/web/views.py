"""What the web inspector's page shows, as JSON-ready dicts: threads, a run's graph, the
timeline, the state at a step and its diff, memory, pauses and forks.

Every function reads one backend (any process may be writing the same database meanwhile)
and returns plain data; the app (``weft.inspect.web.app``) only routes. Values are shown in
the store's JSON form (``weft.store.codec.to_jsonable``), so a record reads as its fields
beside a ``__weft__`` tag, and ``size`` is the UTF-8 length of a value's JSON.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Final

from weft.errors import ConflictError, PauseError, PersistError, StepError
from weft.persist import Backend, DurableRun
from weft.persist.base import ThreadInfo
from weft.persist.runs import fork_thread, load_store, new_id
from weft.store import Entry, Event, RunLog, Store
from weft.store.codec import to_jsonable, value_bytes
from weft.store.events import KINDS
from weft.store.records import CALLS, KIND, PAUSES, RECORDS, Pause, RunRecord, StepRecord

MEMORY_KINDS: Final = ("input", "step", "task", "shared")
"""The store kinds memory lists (``weft.memory.memory_keys``)."""
PREVIEW: Final = 160
"""Characters of a value's JSON a timeline row shows."""
_ATTEMPTS: Final = 3
"""Tries of an answer that loses the append race to the run's own process."""
TIMELINE_LIMIT: Final = 500
"""The most events one timeline request returns (the page asks again from the last one)."""


def thread_info(info: ThreadInfo) -> dict[str, Any]:
    return {
        "thread_id": info.thread_id,
        "last_step": info.last_step,
        "first_step": info.first_step,
        "created_at": info.created_at,
        "updated_at": info.updated_at,
        "parent_thread": info.parent_thread,
        "parent_step": info.parent_step,
    }


def threads(backend: Backend) -> list[dict[str, Any]]:
    """Every thread, most recently written first, with the forks each has."""
    infos = backend.threads()
    forks: dict[str, list[dict[str, Any]]] = {}
    for info in infos:
        if info.parent_thread is not None:
            forks.setdefault(info.parent_thread, []).append(
                {"thread_id": info.thread_id, "step": info.parent_step}
            )
    out = [{**thread_info(info), "forks": forks.get(info.thread_id, [])} for info in infos]
    out.sort(key=lambda row: row["updated_at"], reverse=True)
    return out


def require_thread(backend: Backend, thread_id: str) -> ThreadInfo:
    """The thread's info, or a ``StepError`` listing some threads that do exist."""
    info = backend.thread(thread_id)
    if info is None:
        known = ", ".join(repr(t.thread_id) for t in backend.threads()[:10]) or "none"
        raise StepError(
            f"thread {thread_id!r} is not in {backend.location}; threads there: {known}"
        )
    return info


def _store(backend: Backend, thread_id: str, step: int | None = None) -> Store:
    return load_store(backend, thread_id, step=step)


def preview(value: Any) -> str:
    text = _json_text(value)
    return text if len(text) <= PREVIEW else text[: PREVIEW - 1] + "…"


def _json_text(value: Any) -> str:
    import json

    return json.dumps(to_jsonable(value), ensure_ascii=False, separators=(",", ":"))


def event_row(step: int, run_id: str, event: Event) -> dict[str, Any]:
    value = event.value
    record = type(value).__name__ if isinstance(value, RECORDS) else None
    return {
        "step": step,
        "run_id": run_id,
        "op": event.op,
        "kind": event.kind,
        "path": event.path,
        "key": event.key,
        "source": event.source,
        "reducer": event.reducer,
        "time": event.time,
        "record": record,
        "preview": preview(value),
    }


def timeline(
    backend: Backend, thread_id: str, *, since: int = 0, limit: int = TIMELINE_LIMIT
) -> dict[str, Any]:
    """The thread's stored events after step ``since`` (at most ``limit``), oldest first."""
    info = require_thread(backend, thread_id)
    since = max(since, info.first_step)
    upto = min(info.last_step, since + limit)
    rows = [
        event_row(logged.event.seq, logged.run_id, logged.event)
        for logged in backend.history(thread_id, after=since, upto=upto)
    ]
    return {"thread_id": thread_id, "last_step": info.last_step, "events": rows}


def entry_row(entry: Entry) -> dict[str, Any]:
    meta = entry.meta or {}
    title, description = meta.get("title"), meta.get("description")
    return {
        "key": entry.key,
        "kind": entry.kind,
        "path": entry.path,
        "value": to_jsonable(entry.value),
        "source": entry.source,
        "title": title if isinstance(title, str) else None,
        "description": description if isinstance(description, str) else None,
        "size": value_bytes(entry.value),
        "created_at": entry.created_at,
        "updated_at": entry.updated_at,
        "step": entry.seq,
    }


def state(
    backend: Backend, thread_id: str, *, at: int | None = None, prefix: str = ""
) -> dict[str, Any]:
    """The thread's entries as they were at step ``at`` (default: its last), whose
    ``kind:path`` key starts with ``prefix``."""
    info = require_thread(backend, thread_id)
    step = info.last_step if at is None else at
    store = _store(backend, thread_id, step)
    rows = [entry_row(e) for e in store.entries() if e.key.startswith(prefix)]
    return {"thread_id": thread_id, "step": step, "prefix": prefix, "entries": rows}


def diff(backend: Backend, thread_id: str, *, at: int) -> dict[str, Any]:
    """What step ``at`` changed: the entries added, changed and removed since the step
    before, with their values before and after, and the events of the step."""
    info = require_thread(backend, thread_id)
    if at <= info.first_step:
        raise StepError(
            f"thread {thread_id!r}: step {at} has no step before it to compare with here; "
            f"pick a step from {info.first_step + 1} to {info.last_step}"
        )
    after = _store(backend, thread_id, at)
    before = _store(backend, thread_id, at - 1)
    old = {e.key: e for e in before.entries()}
    new = {e.key: e for e in after.entries()}
    changes: list[dict[str, Any]] = []
    for key in sorted(old.keys() | new.keys()):
        was, now = old.get(key), new.get(key)
        if was is not None and now is not None and was.seq == now.seq:
            continue
        change = "added" if was is None else "removed" if now is None else "changed"
        changes.append(
            {
                "key": key,
                "change": change,
                "before": None if was is None else to_jsonable(was.value),
                "after": None if now is None else to_jsonable(now.value),
                "source": (now or was).source if (now or was) is not None else None,
            }
        )
    events = [
        event_row(logged.event.seq, logged.run_id, logged.event)
        for logged in backend.history(thread_id, after=at - 1, upto=at)
    ]
    return {"thread_id": thread_id, "step": at, "changes": changes, "events": events}


def memory(backend: Backend, thread_id: str) -> dict[str, Any]:
    """The thread's memory now: entries of the memory kinds (a run's own records left
    out), grouped by kind, newest write first."""
    info = require_thread(backend, thread_id)
    store = _store(backend, thread_id)
    groups: dict[str, list[dict[str, Any]]] = {kind: [] for kind in MEMORY_KINDS}
    for entry in store.entries(kind=MEMORY_KINDS):
        if isinstance(entry.value, RECORDS):
            continue
        groups[entry.kind].append(entry_row(entry))
    for rows in groups.values():
        rows.sort(key=lambda row: row["step"], reverse=True)
    return {"thread_id": thread_id, "step": info.last_step, "kinds": groups}


def _records(store: Store) -> Iterable[tuple[str, Any]]:
    for entry in store.entries(kind=KIND):
        if isinstance(entry.value, RECORDS):
            yield entry.path, entry.value


def runs(backend: Backend, thread_id: str) -> dict[str, Any]:
    """The thread's runs, each with its units (a graph's nodes): status and timing."""
    info = require_thread(backend, thread_id)
    store = _store(backend, thread_id)
    found: dict[str, RunRecord] = {}
    units: dict[str, dict[str, StepRecord]] = {}
    asked: dict[str, dict[str, list[Pause]]] = {}
    for path, record in _records(store):
        if isinstance(record, RunRecord) and "/" not in path:
            found[path] = record
        elif isinstance(record, StepRecord):
            run_id, _, unit = path.partition("/")
            segments = unit.split("/")
            if unit and CALLS not in segments and PAUSES not in segments:
                units.setdefault(run_id, {})[unit] = record
        elif isinstance(record, Pause):
            asked.setdefault(record.run_id, {}).setdefault(record.unit, []).append(record)
    appended = {r.run_id: r for r in backend.runs(thread_id)}
    out = []
    for run_id, record in found.items():
        out.append(_run_row(run_id, record, units.get(run_id, {}), asked.get(run_id, {}), appended))
    out.sort(key=lambda row: row["started_at"] or 0.0, reverse=True)
    return {"thread_id": thread_id, "last_step": info.last_step, "runs": out}


def _run_row(
    run_id: str,
    record: RunRecord,
    done: Mapping[str, StepRecord],
    asked: Mapping[str, list[Pause]],
    appended: Mapping[str, Any],
) -> dict[str, Any]:
    names = list(record.units)
    names += [u for u in done if u not in record.units]
    names += [u for u in asked if u not in names]
    nodes = []
    for unit in names:
        step = done.get(unit)
        waiting = [p for p in asked.get(unit, []) if not p.answered]
        if step is not None:
            status = "done" if step.flag is None else f"done ({step.flag})"
        elif waiting:
            status = "paused"
        elif asked.get(unit):
            status = "answered"
        else:
            status = "pending" if record.status != "completed" else "not run"
        nodes.append(
            {
                "unit": unit,
                "label": (step.label if step is not None else None) or _name(unit),
                "kind": step.kind if step is not None else None,
                "status": status,
                "started_at": step.started_at if step is not None else None,
                "duration_ms": step.duration_ms if step is not None else None,
                "result": preview(step.result) if step is not None else None,
                "depth": unit.count("/"),
            }
        )
    info = appended.get(run_id)
    return {
        "run_id": run_id,
        "kind": record.kind,
        "status": record.status,
        "started_at": record.started_at or None,
        "duration_ms": record.duration_ms,
        "output": preview(record.output) if record.output is not None else None,
        "first_step": info.first_step if info is not None else None,
        "last_step": info.last_step if info is not None else None,
        "nodes": nodes,
    }


def _name(unit: str) -> str:
    """A unit's name to show: its last segment without the ``#n`` that keeps keys unique."""
    last = unit.rsplit("/", 1)[-1]
    head, sep, tail = last.rpartition("#")
    return head if sep and tail.isdigit() else last


def pause_row(pause: Pause) -> dict[str, Any]:
    return {
        "id": pause.id,
        "run_id": pause.run_id,
        "unit": pause.unit,
        "label": pause.label,
        "index": pause.index,
        "question": to_jsonable(pause.question),
        "answered": pause.answered,
        "answer": to_jsonable(pause.answer),
        "asked_at": pause.asked_at,
        "answered_at": pause.answered_at,
    }


def pauses(backend: Backend, thread_id: str) -> dict[str, Any]:
    """The questions the thread's runs asked a person, those waiting first."""
    require_thread(backend, thread_id)
    store = _store(backend, thread_id)
    rows = [
        pause_row(record)
        for path, record in _records(store)
        if isinstance(record, Pause) and f"/{PAUSES}/" in path
    ]
    rows.sort(key=lambda row: (row["answered"], row["asked_at"]))
    return {"thread_id": thread_id, "pauses": rows}


def answer(backend: Backend, thread_id: str, pause_id: str, value: Any) -> dict[str, Any]:
    """Record ``value`` as the answer to the question ``pause_id`` of the thread (one commit,
    by a run of its own); the paused run takes it when its process runs it again."""
    require_thread(backend, thread_id)
    for attempt in range(_ATTEMPTS):
        run = DurableRun.open(backend, thread_id, run_id=new_id("inspect"), name="weft.inspect")
        try:
            found = run.store.value(KIND, pause_id, None) if isinstance(pause_id, str) else None
            if not isinstance(found, Pause):
                waiting = [
                    p["id"] for p in pauses(backend, thread_id)["pauses"] if not p["answered"]
                ]
                raise PauseError(
                    f"thread {thread_id!r} has no question {pause_id!r}; the questions waiting "
                    f"are: {', '.join(map(repr, waiting)) or 'none'}"
                )
            try:
                RunLog(run.store, found.run_id).answer({pause_id: value}, error=PauseError)
            except ConflictError:
                if attempt + 1 == _ATTEMPTS:
                    raise
                continue
            return {"thread_id": thread_id, "answered": pause_row(found)["id"], "step": run.step}
        finally:
            run.close()
    raise AssertionError("unreachable")  # pragma: no cover


def fork(
    backend: Backend, thread_id: str, *, step: int, values: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """A new thread from ``thread_id`` at ``step`` with ``values`` (``{"kind:path": value}``)
    written over it; the source thread is unchanged."""
    info = require_thread(backend, thread_id)
    check_step(step)
    if values is not None and not isinstance(values, Mapping):
        raise PersistError(
            f"values={values!r:.80}: expected an object of 'kind:path' to value, e.g. "
            '{"state:plan": "B"}'
        )
    for key in values or {}:
        kind, sep, path = str(key).partition(":")
        if not sep or kind not in KINDS or not path:
            raise PersistError(
                f"values key {key!r}: expected 'kind:path' with kind one of {', '.join(KINDS)}"
            )
    run = fork_thread(backend, thread_id, step=step, values=values)
    try:
        return {"thread_id": run.thread_id, "parent_thread": info.thread_id, "parent_step": step}
    finally:
        run.close()


def check_step(value: Any, what: str = "step") -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise PersistError(f"{what}={value!r}: expected a step number (an int >= 0)")
    return value
