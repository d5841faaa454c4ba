"""Node-lifecycle events through the store's subscription feed."""

from __future__ import annotations

import dataclasses
import itertools
from typing import Any

import pytest
from graph_helpers import Mode

from weft.errors import NodeError
from weft.graph import ResultPassDownMode, WorkGraph, WorkGraphNode, WorkGraphStopFlags
from weft.store import Event, Note, Store

R = ResultPassDownMode


def listen(store: Store) -> list[dict[str, Any]]:
    """The typed notes the store's subscribers hear, as dicts with the note's path."""
    seen: list[dict[str, Any]] = []

    def on(event: Event) -> None:
        if event.op == "note" and isinstance(event.value, Note):
            fields = {k: v for k, v in dataclasses.asdict(event.value).items() if v is not None}
            seen.append({"path": event.path, **fields})

    store.subscribe(on)
    return seen


def test_started_and_finished_with_durations(mode: Mode) -> None:
    first = WorkGraphNode(mode.fn(lambda: 1), R.ResultAsFirstArg, id="plan")
    first.add_next(WorkGraphNode(mode.fn(lambda x: x), id="act"))
    store = Store()
    seen = listen(store)
    mode.run(WorkGraph(start_nodes=[first]), run_id="r1", store=store)
    assert [(e["event"], e["unit"], e["label"], e["path"]) for e in seen] == [
        ("started", "plan#0", "plan", "r1/plan#0"),
        ("finished", "plan#0", "plan", "r1/plan#0"),
        ("started", "act#1", "act", "r1/act#1"),
        ("finished", "act#1", "act", "r1/act#1"),
    ]
    assert all(e["duration_ms"] >= 0 for e in seen if e["event"] == "finished")
    assert all(e["run_id"] == "r1" for e in seen)


def test_failed_event_carries_the_error(mode: Mode) -> None:
    def boom() -> None:
        raise ValueError("bad input")

    store = Store()
    seen = listen(store)
    with pytest.raises(NodeError):
        mode.run(WorkGraph(start_nodes=[WorkGraphNode(mode.fn(boom), id="x")]), store=store)
    assert seen[-1]["event"] == "failed"
    assert seen[-1]["error"] == "ValueError: bad input"


def test_skipped_event_for_a_node_below_an_aborted_branch(mode: Mode) -> None:
    first = WorkGraphNode(mode.fn(lambda: (WorkGraphStopFlags.AbortBranch, None)), id="a")
    first.add_next(WorkGraphNode(mode.fn(lambda: None), id="b"))
    store = Store()
    seen = listen(store)
    mode.run(WorkGraph(start_nodes=[first]), store=store)
    finished = next(e for e in seen if e["event"] == "finished")
    assert finished["flag"] == "AbortBranch"
    assert seen[-1] == {
        "path": seen[-1]["path"],
        "event": "skipped",
        "reason": "aborted",
        "unit": "b#1",
        "kind": "node",
        "label": "b",
        "run_id": seen[-1]["run_id"],
    }


def test_resumed_nodes_are_reported_skipped_as_recorded(mode: Mode) -> None:
    calls: list[int] = []

    def second() -> str:
        calls.append(1)
        if len(calls) == 1:
            raise RuntimeError("down")
        return "ok"

    first = WorkGraphNode(mode.fn(lambda: "one"), id="first")
    first.add_next(WorkGraphNode(mode.fn(second), id="second"))
    graph, store = WorkGraph(start_nodes=[first]), Store()
    with pytest.raises(NodeError):
        mode.run(graph, run_id="r", store=store)
    seen = listen(store)
    mode.run(graph, run_id="r", store=store)
    assert [(e["event"], e["unit"]) for e in seen] == [
        ("skipped", "first#0"),
        ("started", "second#1"),
        ("finished", "second#1"),
    ]
    assert seen[0]["reason"] == "recorded"


def test_runs_without_a_run_id_get_distinct_generated_ids() -> None:
    store = Store()
    seen = listen(store)
    graph = WorkGraph([[lambda: 1]])
    graph.run(store=store)
    graph.run(store=store)
    run_ids = {e["run_id"] for e in seen}
    assert len(run_ids) == 2
    assert all(e["path"].startswith(f"{e['run_id']}/") for e in seen)


def test_events_false_writes_no_notes() -> None:
    store = Store()
    seen = listen(store)
    WorkGraph([[lambda: 1]]).run(store=store, events=False)
    assert seen == []
    assert store.events() == []


def test_no_notes_when_nobody_observes_the_store() -> None:
    store = Store()
    WorkGraph([[lambda: 1]]).run(store=store, run_id="quiet")
    assert [e.op for e in store.events()] == ["write", "write"]  # the node's, the run's


def test_notes_start_when_a_subscriber_arrives() -> None:
    store = Store()
    graph = WorkGraph([[lambda: 1]])
    graph.run(store=store, run_id="before")
    seen = listen(store)
    graph.run(store=store, run_id="after")
    assert {e["run_id"] for e in seen} == {"after"}
    assert [e["event"] for e in seen] == ["started", "finished"]


def test_the_log_keeps_the_order_things_happened_in_a_fan_out(mode: Mode) -> None:
    """Notes are logged in batches, but never after what followed them: a node's started
    note comes before its own writes, its finished note after them and before its step
    record's successor starts, whatever the parallel branches do."""
    store = Store()

    def branch(name: str) -> Any:
        def write() -> str:
            store.write("shared", f"by/{name}", name, source=name)
            return name

        return mode.fn(write, sleep=0.01 if name == "b1" else 0.0)

    first = WorkGraphNode(mode.fn(lambda: None), id="start")
    join = WorkGraphNode(mode.fn(lambda *parts: len(parts)), R.ResultAsLeadingArgs, id="join")
    for name in ("b0", "b1", "b2"):
        first.add_next(WorkGraphNode(branch(name), R.ResultAsFirstArg, id=name)).add_next(join)
    listen(store)  # an observer, so the notes are built
    mode.run(WorkGraph(start_nodes=[first]), run_id="r1", store=store)
    log = [(e.op, e.path, e.value.event if e.op == "note" else None) for e in store.events()]

    def at(op: str, path: str, event: str | None = None) -> int:
        return log.index((op, path, event))

    for key, name in (("b0#1", "b0"), ("b1#2", "b1"), ("b2#3", "b2")):
        started = at("note", f"r1/{key}", "started")
        finished = at("note", f"r1/{key}", "finished")
        record = at("write", f"r1/{key}")
        assert started < at("write", f"by/{name}") < record < finished
        assert at("note", "r1/start#0", "finished") < started
        assert finished < at("note", "r1/join#4", "started")
    assert [e for e in log if e[0] == "note"].count(("note", "r1/join#4", "finished")) == 1


def _chain(*fns: Any) -> WorkGraph:
    nodes = [WorkGraphNode(fn, state=True, id=name) for name, fn in fns]
    for a, b in itertools.pairwise(nodes):
        a.add_next(b)
    return WorkGraph(start_nodes=[nodes[0]])


def _log(store: Store) -> list[tuple[str, ...]]:
    """The store's log as (op, what): a write's path, a node note's event and unit."""
    return [
        ("note", e.value.event, e.value.unit) if e.op == "note" else (e.op, e.path)
        for e in store.events()
        if e.op != "note" or isinstance(e.value, Note)
    ]


def test_a_watched_chain_of_state_nodes_logs_each_write_between_its_nodes_notes(
    mode: Mode,
) -> None:
    store = Store()
    store.write("state", "x", 0)
    seen = listen(store)

    def step(view: Any) -> dict[str, int]:
        return {"x": view["x"] + 1}

    mode.run(_chain(("a", step), ("b", step), ("c", step)), store=store)
    assert store.value("state", "x") == 3
    assert _log(store) == [
        ("write", "x"),
        *[
            entry
            for unit in ("a#0", "b#1", "c#2")
            for entry in (("note", "started", unit), ("write", "x"), ("note", "finished", unit))
        ],
    ]
    finished = [e for e in seen if e["event"] == "finished"]
    assert len(finished) == 3 and all(0 <= e["duration_ms"] < 60_000 for e in finished)
    assert {e["label"] for e in seen} == {"a", "b", "c"} and len({e["run_id"] for e in seen}) == 1


@pytest.mark.parametrize(
    ("second", "error"),
    [
        (lambda view: 1 / 0, "ZeroDivisionError"),
        (lambda view: {"x": object()}, "object"),  # a delta the store cannot keep
    ],
)
def test_a_node_that_fails_in_a_watched_chain_of_state_nodes_is_noted_failed(
    mode: Mode, second: Any, error: str
) -> None:
    store = Store()
    seen = listen(store)
    with pytest.raises(NodeError):
        mode.run(_chain(("a", lambda view: {"x": 1}), ("b", second)), store=store)
    assert [(e["event"], e["unit"]) for e in seen] == [
        ("started", "a#0"),
        ("finished", "a#0"),
        ("started", "b#1"),
        ("failed", "b#1"),
    ]
    assert error in seen[-1]["error"] and 0 <= seen[-1]["duration_ms"] < 60_000
    assert store.value("state", "x") == 1


@pytest.mark.parametrize("run_id", [None, "ünï"])
def test_nodes_named_in_any_script_are_noted_under_their_names(run_id: str | None) -> None:
    store = Store()
    seen = listen(store)
    _chain(("résumé", lambda view: {"x": 1}), ("要約", lambda view: {"y": 2})).run(
        store=store, run_id=run_id
    )
    run = seen[0]["run_id"]
    assert run_id is None or run == run_id
    assert [(e["event"], e["label"], e["path"]) for e in seen] == [
        ("started", "résumé", f"{run}/résumé#0"),
        ("finished", "résumé", f"{run}/résumé#0"),
        ("started", "要約", f"{run}/要約#1"),
        ("finished", "要約", f"{run}/要約#1"),
    ]
