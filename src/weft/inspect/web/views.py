"""What the web inspector's page shows, as JSON-ready dicts, read through the ``Reader``:
threads, a run's graph, the timeline of events, the state at a step and its diff, memory,
pauses and forks.

The app (``weft.inspect.web.app``) only routes; each function here reads one ``Reader``
(any process may be writing the same database meanwhile). Records go out through
``weft.inspect.to_json``. Two small queries are the page's own: the thread list reads the
backend's thread table only (the page asks for it at every change the live feed reports,
so it must not replay every thread), and a run's graph lays the Reader's timeline out as
nodes, adding the units the run has not reached yet.
"""

from __future__ import annotations

import json
from dataclasses import asdict
from typing import Any, Final

from weft.errors import PersistError, StepError
from weft.inspect.reader import Reader
from weft.inspect.records import TimelineItem, to_json
from weft.persist.base import ThreadInfo
from weft.store import RunRecord
from weft.store.records import PAUSES, RECORDS

PREVIEW: Final = 160
"""Characters of a value's JSON a timeline row or a node shows."""
TIMELINE_LIMIT: Final = 500
"""The most events one timeline request returns by default (the page asks for more)."""


def require_thread(reader: Reader, thread_id: str) -> ThreadInfo:
    """The thread's info, or a ``StepError`` (404) listing some threads that do exist."""
    info = reader.backend.thread(thread_id)
    if info is None:
        known = ", ".join(repr(t.thread_id) for t in reader.backend.threads()[:10]) or "none"
        raise StepError(f"thread {thread_id!r} is not in {reader.location}; threads there: {known}")
    return info


def preview(value: Any) -> str:
    """A value's JSON on one line, cut at ``PREVIEW`` characters."""
    text = json.dumps(to_json(value), ensure_ascii=False, separators=(",", ":"))
    return text if len(text) <= PREVIEW else text[: PREVIEW - 1] + "…"


def threads(reader: Reader) -> list[dict[str, Any]]:
    """Every thread, most recently written first, with the forks made from it."""
    infos = reader.backend.threads()
    forks: dict[str, list[dict[str, Any]]] = {}
    for info in infos:
        if info.parent_thread is not None:
            forks.setdefault(info.parent_thread, []).append(
                {"thread_id": info.thread_id, "step": info.parent_step}
            )
    infos = sorted(infos, key=lambda info: info.updated_at, reverse=True)
    return [{**asdict(info), "forks": forks.get(info.thread_id, [])} for info in infos]


def runs(reader: Reader, thread_id: str) -> dict[str, Any]:
    """The thread's runs, newest first, each with its units as the nodes of a graph: a
    unit's status (``finished``, ``waiting`` for an answer, ``answered``, ``pending``: not
    reached yet) and timing."""
    info = require_thread(reader, thread_id)
    groups: dict[str, list[TimelineItem]] = {}
    for item in reader.timeline(thread_id):
        groups.setdefault(item.run_id, []).append(item)
    out = [_run(run_id, items) for run_id, items in groups.items()]
    out.sort(key=lambda run: run["started_at"] or 0.0, reverse=True)
    return {"thread_id": thread_id, "last_step": info.last_step, "runs": out}


def _run(run_id: str, items: list[TimelineItem]) -> dict[str, Any]:
    head = next((item for item in items if not item.unit), None)
    record = head.record if head is not None else None
    nodes: dict[str, dict[str, Any]] = {}
    for item in items:
        if not item.unit:
            continue
        unit, sep, _ = item.unit.partition(f"/{PAUSES}/")
        node = nodes.setdefault(unit, _node(unit, item.label, depth=item.depth - 1))
        if sep:  # a question: its unit waits (or was answered) unless it finished since
            if node["status"] in ("pending", "answered"):
                node["status"] = item.status
            node["question_step"] = item.step
            continue
        node.update(
            kind=item.kind,
            label=item.label or node["label"],
            status=item.status,
            started_at=item.started_at,
            duration_ms=item.duration_ms,
            step=item.step,
            result=preview(getattr(item.record, "result", None)),
        )
    # a graph's units are its node keys, known up front: those not reached yet are pending
    graph = isinstance(record, RunRecord) and record.kind == "graph"
    ordered = list(record.units) if graph and isinstance(record, RunRecord) else []
    for unit in ordered:
        nodes.setdefault(unit, _node(unit, None, depth=0))
    names = ordered + [unit for unit in nodes if unit not in ordered]
    whole = not run_id  # keyed calls of a durable run as a whole, outside any run
    return {
        "run_id": run_id or "(the thread's own keyed calls)",
        "kind": head.kind if head is not None else "calls" if whole else None,
        "status": head.status if head is not None else "recorded" if whole else "running",
        "started_at": head.started_at if head is not None else None,
        "duration_ms": head.duration_ms if head is not None else None,
        "step": head.step if head is not None else None,
        "output": (
            preview(record.output)
            if isinstance(record, RunRecord) and record.output is not None
            else None
        ),
        "nodes": [nodes[name] for name in names],
    }


def _node(unit: str, label: str | None, *, depth: int) -> dict[str, Any]:
    return {
        "unit": unit,
        "label": label or _name(unit),
        "kind": None,
        "status": "pending",
        "started_at": None,
        "duration_ms": None,
        "step": None,
        "result": None,
        "depth": max(depth, 0),
    }


def _name(unit: str) -> str:
    """A unit's name to show: its last segment without the ``#n`` that keeps keys unique."""
    last = unit.rsplit("/", 1)[-1]
    head, sep, tail = last.rpartition("#")
    return head if sep and tail.isdigit() else last


def timeline(
    reader: Reader, thread_id: str, *, since: int = 0, limit: int = TIMELINE_LIMIT
) -> dict[str, Any]:
    """The thread's stored events after step ``since`` (at most ``limit``), oldest first."""
    info = require_thread(reader, thread_id)
    since = max(since, info.first_step)
    until = max(min(info.last_step, since + limit), since)
    rows = [_event(event) for event in reader.events(thread_id, since=since, until=until)]
    return {"thread_id": thread_id, "last_step": info.last_step, "events": rows}


def _event(event: Any) -> dict[str, Any]:
    row: dict[str, Any] = to_json(event)
    del row["value"]  # a preview is enough for a list; the state tab shows values whole
    row["record"] = type(event.value).__name__ if isinstance(event.value, RECORDS) else None
    row["preview"] = preview(event.value)
    return row


def state(
    reader: Reader, thread_id: str, *, at: int | None = None, prefix: str = ""
) -> dict[str, Any]:
    """The thread's entries as of step ``at`` (default: its last) under ``prefix``."""
    require_thread(reader, thread_id)
    found = reader.state(thread_id, at=at, prefix=prefix or None)
    return {
        "thread_id": thread_id,
        "step": found.step,
        "prefix": prefix,
        "entries": to_json(found.entries),
    }


def diff(reader: Reader, thread_id: str, *, at: int) -> dict[str, Any]:
    """What step ``at`` changed from the step before, key by key, and its events."""
    info = require_thread(reader, thread_id)
    if at <= info.first_step:
        raise StepError(
            f"thread {thread_id!r}: step {at} has no step before it here to compare with; "
            f"pick a step from {info.first_step + 1} to {info.last_step}"
        )
    found = reader.diff(thread_id, at - 1, at)
    events = [_event(event) for event in reader.events(thread_id, since=at - 1, until=at)]
    return {
        "thread_id": thread_id,
        "step": at,
        "changes": to_json(found.changes),
        "events": events,
    }


def memory(reader: Reader, thread_id: str) -> dict[str, Any]:
    """The thread's memory now, grouped by memory kind, the most recent write first."""
    info = require_thread(reader, thread_id)
    groups: dict[str, list[Any]] = {
        kind: [] for kind in ("input", "step_result", "task_result", "shared")
    }
    for item in reader.memory(thread_id):
        groups.setdefault(item.kind, []).append(to_json(item))
    return {"thread_id": thread_id, "step": info.last_step, "kinds": groups}


def pauses(reader: Reader, thread_id: str) -> dict[str, Any]:
    """The questions the thread's runs asked a person, those waiting first."""
    require_thread(reader, thread_id)
    rows = to_json(reader.pauses(thread_id))
    rows.sort(key=lambda row: row["answered"])
    return {"thread_id": thread_id, "pauses": rows}


def answer(reader: Reader, thread_id: str, pause_id: str, value: Any) -> dict[str, Any]:
    """Record ``value`` as the answer to the question ``pause_id`` of the thread; the paused
    run takes it when its process runs it again with its run id."""
    require_thread(reader, thread_id)
    (answered,) = reader.answer(thread_id, {pause_id: value})
    return {"thread_id": thread_id, "answered": answered.id}


def fork(reader: Reader, thread_id: str, *, step: Any) -> dict[str, Any]:
    """A new thread from ``thread_id`` at ``step``; the thread itself is unchanged."""
    require_thread(reader, thread_id)
    if isinstance(step, bool) or not isinstance(step, int):
        raise PersistError(f"step={step!r}: expected a step number, e.g. 3")
    made = reader.fork(thread_id, step)
    return to_json(made)  # type: ignore[no-any-return]
