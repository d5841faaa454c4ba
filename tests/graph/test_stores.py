"""The commits of a recorded run: a chain's node committed as it finishes (``RunStores.
eager``) makes the same commits, with the same events, as the path that holds it until its
successor starts."""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Sequence
from typing import Any

import pytest
from graph_helpers import Mode

from weft.graph import WorkGraph, WorkGraphNode, engine
from weft.graph.state import Writes
from weft.store import Event, RunRecord, StepRecord, Store, reducers


class Commits:
    """A journal that keeps each commit's events, with the records' clock readings and
    the notes left out."""

    def __init__(self) -> None:
        self.commits: list[list[tuple[Any, ...]]] = []

    def commit(self, store: Store, events: Sequence[Event]) -> None:
        kept = [_timeless(e) for e in events if e.op != "note"]
        if kept:
            self.commits.append(kept)

    def state_at(self, seq: int) -> Store | None:
        return None


def _timeless(event: Event) -> tuple[Any, ...]:
    value = event.value
    if isinstance(value, StepRecord) and value.changes:
        changes = tuple(e._replace(time=0.0) for e in value.changes)
        value = dataclasses.replace(value, changes=changes)
    if isinstance(value, StepRecord | RunRecord):
        value = dataclasses.replace(value, started_at=0.0, duration_ms=None)
    return (event.op, event.kind, event.path, value, event.source, event.reducer)


def _graph(mode: Mode) -> WorkGraph:
    def step(name: str, out: Any, sleep: float = 0.0) -> WorkGraphNode:
        return WorkGraphNode(mode.fn(lambda view: out(view), sleep=sleep), state=True, id=name)

    nodes = [
        step("a", lambda view: {"x": view["x"] + 1, "tag": "\u00e9t\u00e9"}),  # checked text
        step("b", lambda view: {"items": ["b"]}),  # not a plain value
        step("c", lambda view: Writes([("state", "x", view["x"] * 10, False)])),
        step("d", lambda view: None),
        step("e", lambda view: {"x": view["x"] + 1}),
    ]
    for a, b in itertools.pairwise(nodes):
        a.add_next(b)
    # a fan-out: the left branch, at the frontier, waits for its sibling (the slower one,
    # so that the commits do not depend on which thread finishes first)
    left, right = step("l", lambda view: {"l": 1}), step("r", lambda view: {"r": 2}, 0.05)
    join = step("j", lambda view: {"x": view["x"] + view["l"] + view["r"]})
    nodes[-1].add_next(left)
    nodes[-1].add_next(right)
    left.add_next(join)
    right.add_next(join)
    return WorkGraph(start_nodes=[nodes[0]])


def test_a_chain_commits_the_same_events_committed_at_once_or_held(
    mode: Mode, monkeypatch: pytest.MonkeyPatch
) -> None:
    def run() -> list[list[tuple[Any, ...]]]:
        store = Store(reducers={"state:items": reducers.append})
        store.write("state", "x", 1)
        journal = Commits()
        store.set_journal(journal)
        mode.run(_graph(mode), run_id="r1", store=store)
        assert store.value("state", "x") == 24
        return journal.commits

    eager = run()
    init = engine.Run.__init__

    def held(self: engine.Run, *args: Any, **kwargs: Any) -> None:
        init(self, *args, **kwargs)
        assert self.stores is not None and self.stores.eager
        self.stores.eager = False

    monkeypatch.setattr(engine.Run, "__init__", held)
    assert run() == eager
    # a commit per node, the last with the run's record
    assert [len(commit) for commit in eager] == [3, 2, 2, 1, 2, 2, 2, 3]
