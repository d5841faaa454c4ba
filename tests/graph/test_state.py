"""State nodes: views of ancestors' deltas, reducer merges at joins, canonical order."""

from __future__ import annotations

import itertools
from functools import partial
from typing import Any

import pytest
from graph_helpers import Mode

from weft.errors import (
    GraphBuildError,
    MergeConflictError,
    MissingEntryError,
    NodeError,
    ReducerError,
    ValueTypeError,
)
from weft.graph import (
    ResultPassDownMode,
    StateView,
    WorkGraph,
    WorkGraphNode,
    WorkGraphStopFlags,
)
from weft.graph.state import Writes
from weft.store import DELETE, FrozenList, RunLog, Store, reducers


def state_node(mode: Mode, fn: Any, *, id: str, sleep: float = 0.0) -> WorkGraphNode:
    return WorkGraphNode(mode.fn(fn, sleep=sleep), id=id, state=True)


def test_state_node_reads_the_store_and_its_delta_is_written(mode: Mode) -> None:
    store = Store()
    store.write("state", "topic", "tides")

    def plan(view: StateView) -> dict[str, Any]:
        return {"plan": f"research {view['topic']}"}

    graph = WorkGraph(start_nodes=[state_node(mode, plan, id="plan")])
    assert mode.run(graph, store=store) == {"plan": "research tides"}
    assert store.value("state", "plan") == "research tides"
    assert store.get("state", "plan").source == "plan#0"  # type: ignore[union-attr]


def fan_out(mode: Mode, sleeps: list[float], join: Any) -> WorkGraph:
    def start(view: StateView) -> None:
        return None

    def branch(view: StateView, name: str) -> dict[str, Any]:
        return {"items": name, f"seen_{name}": sorted(view.to_dict())}

    first = state_node(mode, start, id="start")
    last = state_node(mode, join, id="join")
    for i, sleep in enumerate(sleeps):
        node = state_node(mode, partial(branch, name=f"b{i}"), id=f"b{i}", sleep=sleep)
        first.add_next(node)
        node.add_next(last)
    return WorkGraph(start_nodes=[first])


def test_parallel_deltas_merge_in_graph_order_not_finish_order(mode: Mode) -> None:
    results = []
    for sleeps in ([0.0, 0.05, 0.1], [0.1, 0.05, 0.0]):  # the second run finishes backwards
        store = Store(reducers={"state:items": reducers.append})
        graph = fan_out(mode, sleeps, lambda view: {"joined": list(view["items"])})
        assert mode.run(graph, store=store) == {"joined": ["b0", "b1", "b2"]}
        results.append(store.to_dict(kind="state"))
    assert results[0] == results[1]
    assert results[0]["state:items"] == ["b0", "b1", "b2"]


def test_a_node_sees_its_ancestors_deltas_never_a_siblings(mode: Mode) -> None:
    store = Store(reducers={"state:items": reducers.append})
    store.write("state", "initial", True)
    graph = fan_out(mode, [0.0, 0.05], lambda view: {"at_join": sorted(view.to_dict())})
    mode.run(graph, store=store)
    assert store.value("state", "seen_b0") == ["initial"]
    assert store.value("state", "seen_b1") == ["initial"]  # b0 had finished: still unseen
    assert store.value("state", "at_join") == ["initial", "items", "seen_b0", "seen_b1"]


def test_the_store_log_keeps_one_write_per_delta() -> None:
    store = Store(reducers={"state:items": reducers.append})
    graph = fan_out(Mode("sync"), [0.0, 0.0, 0.0], lambda view: None)
    graph.run(store=store)
    writes = [e for e in store.events() if e.op == "write" and e.path == "items"]
    assert [(e.value, e.source) for e in writes] == [("b0", "b0#1"), ("b1", "b1#2"), ("b2", "b2#3")]


def test_parallel_writes_to_a_replace_field_conflict_naming_both_nodes(mode: Mode) -> None:
    def start(view: StateView) -> None:
        return None

    first = state_node(mode, start, id="start")
    join = state_node(mode, lambda view: None, id="join")
    for name in ("left", "right"):
        node = state_node(mode, lambda view: {"status": "mine"}, id=name)
        first.add_next(node)
        node.add_next(join)
    store = Store()
    with pytest.raises(MergeConflictError, match=r"state:status .*'left#1' and 'right#2'"):
        mode.run(WorkGraph(start_nodes=[first]), store=store)
    assert store.value("state", "status") == "mine"  # left was committed; right never was
    assert store.get("state", "status").source == "left#1"


def test_branch_deltas_gathered_in_one_merge_keep_each_write_and_its_writer(mode: Mode) -> None:
    """The plain deltas of a fan-out's branches go into the store as one Delta
    (``RunStores._gathered``): each write is still its own event, by its node, in graph
    order, and fields written once each are no conflict."""
    store = Store(reducers={"state:items": reducers.append})
    first = state_node(mode, lambda view: None, id="start")
    join = state_node(mode, lambda view: None, id="join")
    for i in range(4):
        delta = {"items": i, f"own{i}": i * 10}
        # b0 writes in place; b1 finishes last, so b1, b2 and b3 are committed together
        node = state_node(mode, lambda view, d=delta: d, id=f"b{i}", sleep=0.05 * (i == 1))
        first.add_next(node)
        node.add_next(join)
    mode.run(WorkGraph(start_nodes=[first]), store=store)
    writes = [(e.path, e.value, e.source, e.reducer) for e in store.events() if e.op == "write"]
    assert writes == [
        (path, value, f"b{i}#{i + 1}", reducer)
        for i in range(4)
        for path, value, reducer in (("items", i, "append"), (f"own{i}", i * 10, "replace"))
    ]
    assert store.value("state", "items") == [0, 1, 2, 3]


def test_gathered_branches_writing_one_replace_field_conflict_naming_both(mode: Mode) -> None:
    first = state_node(mode, lambda view: None, id="start")
    # b0 writes in place (every node before it is its ancestor); b1 finishes last, so
    # b1, b2 and b3 are committed together
    for i, delta in enumerate(({}, {"status": "a"}, {"other": 1}, {"status": "c"})):
        sleep = 0.05 if i == 1 else 0.0
        first.add_next(state_node(mode, lambda view, d=delta: d, id=f"b{i}", sleep=sleep))
    store = Store()
    with pytest.raises(MergeConflictError, match=r"state:status .*'b1#2' and 'b3#4'"):
        mode.run(WorkGraph(start_nodes=[first]), store=store)
    assert not store.has("state", "other")  # nothing of the conflicting merge was written


def test_gathered_branches_conflict_with_a_write_made_apart_from_their_view(mode: Mode) -> None:
    first = state_node(mode, lambda view: None, id="start")
    apart = state_node(mode, lambda view: {"status": "apart"}, id="apart")
    for i, delta in enumerate(({"other": 1}, {"status": "mine"})):
        sleep = 0.05 if i == 0 else 0.0  # b0 finishes last: the two are committed together
        first.add_next(state_node(mode, lambda view, d=delta: d, id=f"b{i}", sleep=sleep))
    with pytest.raises(MergeConflictError, match=r"state:status .*'apart#1' and 'b1#3'"):
        mode.run(WorkGraph(start_nodes=[first, apart]), store=Store())


def test_a_branch_delta_the_store_refuses_fails_that_branch_not_the_gathered_commit() -> None:
    """A delta ``Store.delta`` would refuse is checked as the branch finishes, never kept
    for the commit: the run fails on that node, and the branches before it are committed.
    (Sync branches: a failure lets running threads finish, where it cancels async ones.)"""
    mode = Mode("sync")
    first = state_node(mode, lambda view: None, id="start")
    deltas = ({}, {"items": 1}, {"items": 2}, {"bad": "x\ud800"}, {"items": 4})
    for i, delta in enumerate(deltas):
        sleep = 0.05 if i == 1 else 0.0  # b1 finishes last: b2 and b3 wait for it
        first.add_next(state_node(mode, lambda view, d=delta: d, id=f"b{i}", sleep=sleep))
    store = Store(reducers={"state:items": reducers.append})
    with pytest.raises(
        NodeError, match=r"node b3#4 .* state:bad in the delta of b3#4: the text"
    ) as err:
        mode.run(WorkGraph(start_nodes=[first]), store=store)
    assert isinstance(err.value.__cause__, ValueTypeError)
    assert store.value("state", "items") == [1, 2]


def test_branches_settled_in_one_step_end_as_the_general_path_ends_them(mode: Mode) -> None:
    """Unwatched, a branch with a plain delta is settled in one step (``Run._complete``'s
    fast path); a subscriber sends every node down the general path: same state, same
    writes in the same order, same output."""
    deltas: list[Any] = [
        {"items": 1, "n": 2},
        {"items": "two", "flag": True, "nothing": None},
        {"items": "tr\u00e9s"},  # not ASCII: the general path in both runs
        {"items": 1.5},
        {"items": [4], "big": 10**30},
        {},
        None,
        {"items": 7},
    ]
    outcomes = []
    for watched in (False, True):
        store = Store(reducers={"state:items": reducers.append})
        if watched:
            store.subscribe(lambda batch: None)
        first = state_node(mode, lambda view: None, id="start")
        join = state_node(mode, lambda view: {"seen": list(view["items"])}, id="join")
        for i, delta in enumerate(deltas):
            first.add_next(state_node(mode, lambda view, d=delta: d, id=f"b{i}")).add_next(join)
        output = mode.run(WorkGraph(start_nodes=[first]), store=store)
        writes = [(e.path, e.value, e.source) for e in store.events() if e.op == "write"]
        outcomes.append((output, store.to_dict(kind="state"), writes))
    assert outcomes[0] == outcomes[1]


def test_parallel_replace_writes_with_no_join_conflict_at_commit(mode: Mode) -> None:
    nodes = [state_node(mode, lambda view, i=i: {"status": i}, id=f"n{i}") for i in range(2)]
    with pytest.raises(MergeConflictError, match="'n0#0' and 'n1#1'"):
        mode.run(WorkGraph(start_nodes=nodes), store=Store())


def test_a_node_may_overwrite_what_an_ancestor_wrote(mode: Mode) -> None:
    first = state_node(mode, lambda view: {"status": "draft"}, id="draft")
    first.add_next(
        state_node(mode, lambda view: {"status": f"final, was {view['status']}"}, id="f")
    )
    store = Store()
    mode.run(WorkGraph(start_nodes=[first]), store=store)
    assert store.value("state", "status") == "final, was draft"


def test_join_overwriting_branches_is_no_conflict(mode: Mode) -> None:
    store = Store(reducers={"state:items": reducers.append})
    graph = fan_out(mode, [0.0, 0.0], lambda view: {"seen_b0": "overwritten by join"})
    mode.run(graph, store=store)
    assert store.value("state", "seen_b0") == "overwritten by join"


def test_merge_reducer_field_takes_deltas_with_delete(mode: Mode) -> None:
    store = Store(reducers={"state:notes": reducers.merge})
    store.write("state", "notes", {"stale": 1, "keep": 2})
    graph = WorkGraph(
        start_nodes=[state_node(mode, lambda view: {"notes": {"stale": DELETE, "new": 3}}, id="n")]
    )
    mode.run(graph, store=store)
    assert store.value("state", "notes") == {"keep": 2, "new": 3}


def test_a_failed_run_keeps_what_was_committed_before_the_failure(mode: Mode) -> None:
    def fails(view: StateView) -> None:
        raise ValueError("boom")

    first = state_node(mode, lambda view: {"done": 1}, id="first")
    first.add_next(state_node(mode, fails, id="fails"))
    store = Store()
    with pytest.raises(NodeError):
        mode.run(WorkGraph(start_nodes=[first]), store=store)
    assert store.to_dict(kind="state") == {"state:done": 1}


def test_a_run_inside_a_transaction_stores_nothing_when_it_fails(mode: Mode) -> None:
    def fails(view: StateView) -> None:
        raise ValueError("boom")

    first = state_node(mode, lambda view: {"done": 1}, id="first")
    first.add_next(state_node(mode, fails, id="fails"))
    store = Store()
    with pytest.raises(NodeError), store.transaction() as tx:
        mode.run(WorkGraph(start_nodes=[first]), store=tx)
    assert store.to_dict(kind="state") == {}


def no_twos(current: int, update: int) -> int:
    if update == 2:
        raise ValueError("no twos")
    return current + update


def test_a_user_reducer_refusing_a_delta_names_the_node(mode: Mode) -> None:
    store = Store(reducers={"state:total": no_twos})
    store.write("state", "total", 0)
    first = state_node(mode, lambda view: None, id="start")
    join = state_node(mode, lambda view: {"joined": True}, id="join")
    for i in (1, 2):
        first.add_next(state_node(mode, lambda view, i=i: {"total": i}, id=f"b{i}")).add_next(join)
    with pytest.raises(
        ReducerError, match=r"state:total failed .*'b2#2'\): no twos, while merging"
    ):
        mode.run(WorkGraph(start_nodes=[first]), store=store)
    assert store.to_dict(kind="state") == {"state:total": 1}  # b1's delta, never b2's


def test_a_delta_a_reducer_refuses_is_written_not_at_all(mode: Mode) -> None:
    store = Store(reducers={"state:total": no_twos, "state:items": reducers.append})
    store.write("state", "total", 0)
    nodes = [
        state_node(mode, lambda view, i=i: {"items": i, "total": i}, id=f"n{i}") for i in (1, 2)
    ]
    with pytest.raises(
        ReducerError, match=r"state:total failed .*'n2#1'\): no twos, while merging"
    ):
        mode.run(WorkGraph(start_nodes=nodes), store=store)
    # n1's delta is committed whole; of n2's, not even the append that came before
    assert store.to_dict(kind="state") == {"state:total": 1, "state:items": [1]}


def test_a_terminated_run_commits_what_finished(mode: Mode) -> None:
    first = state_node(mode, lambda view: (WorkGraphStopFlags.Terminate, {"done": 1}), id="a")
    first.add_next(state_node(mode, lambda view: {"never": 1}, id="b"))
    store = Store()
    assert mode.run(WorkGraph(start_nodes=[first]), store=store) == {"done": 1}
    assert store.to_dict(kind="state") == {"state:done": 1}


def test_an_aborted_node_delta_is_dropped(mode: Mode) -> None:
    node = state_node(mode, lambda view: (WorkGraphStopFlags.AbortBranch, {"x": 1}), id="a")
    store = Store()
    mode.run(WorkGraph(start_nodes=[node]), store=store)
    assert not store.has("state", "x")


def test_a_state_node_must_return_a_mapping(mode: Mode) -> None:
    graph = WorkGraph(start_nodes=[state_node(mode, lambda view: ["not", "a", "delta"], id="bad")])
    with pytest.raises(NodeError, match=r"bad#0 .*returned a list; a state node returns a delta"):
        mode.run(graph, store=Store())


def test_a_delta_the_store_cannot_keep_names_the_node(mode: Mode) -> None:
    graph = WorkGraph(start_nodes=[state_node(mode, lambda view: {"x": object()}, id="bad")])
    with pytest.raises(NodeError, match=r"state:x in the delta of bad#0"):
        mode.run(graph, store=Store())


def test_view_reads_other_kinds_and_has_no_way_to_write() -> None:
    store = Store()
    store.write("input", "question", "why?")

    def read(view: StateView) -> dict[str, Any]:
        return {"q": view.read("input", "question"), "missing": view.get("nothing", "default")}

    WorkGraph(start_nodes=[WorkGraphNode(read, state=True)]).run(store=store)
    assert store.value("state", "q") == "why?"
    assert store.value("state", "missing") == "default"
    assert not any(hasattr(StateView, name) for name in ("write", "set", "__setitem__"))


def test_a_view_read_of_a_missing_field_is_the_store_s_error_alone() -> None:
    """Reading a field nobody wrote names it, with no lookup of weft's own behind it."""
    store = Store()
    store.write("state", "there", 1)
    view = StateView(store)
    assert view["there"] == 1
    for path in ("never-written", 7, ("a", "tuple")):
        with pytest.raises(MissingEntryError, match="nothing is stored at state:") as err:
            view[path]  # type: ignore[index]
        assert err.value.__context__ is None and err.value.__cause__ is None


def test_state_nodes_run_without_a_store() -> None:
    first = WorkGraphNode(lambda view: {"x": 1}, state=True)
    first.add_next(WorkGraphNode(lambda view: {"y": view["x"] + 1}, state=True))
    assert WorkGraph(start_nodes=[first]).run() == {"y": 2}


def test_state_node_gets_pass_down_arguments_after_the_view(mode: Mode) -> None:
    first = WorkGraphNode(mode.fn(lambda: 41), "answer", id="a")
    first.add_next(state_node(mode, lambda view, answer: {"answer": answer + 1}, id="b"))
    store = Store()
    mode.run(WorkGraph(start_nodes=[first]), store=store)
    assert store.value("state", "answer") == 42


def woven(mode: Mode, write: Any) -> tuple[WorkGraph, dict[str, list[str]]]:
    """Three layers of three nodes, each joining two of the layer before, wrapping around
    (``c0`` waits for ``b0`` and ``b1``, which wait for ``a0, a1`` and ``a1, a2``): no
    predecessor's view plus the missing ancestors is in graph order, so a join's view is
    built from the run's start, or from one predecessor when the order cannot matter."""
    seen: dict[str, list[str]] = {}

    def node(view: StateView, name: str) -> dict[str, Any]:
        seen[name] = sorted(k for k in view.to_dict() if k != "log") + list(view.get("log") or [])
        return write(name)

    layers = [
        [state_node(mode, partial(node, name=f"{layer}{i}"), id=f"{layer}{i}") for i in range(3)]
        for layer in "abc"
    ]
    for before, after in itertools.pairwise(layers):
        for i, target in enumerate(after):
            before[i].add_next(target)
            before[(i + 1) % 3].add_next(target)
    return WorkGraph(start_nodes=layers[0]), seen


def test_a_join_sees_exactly_its_ancestors_writes(mode: Mode) -> None:
    graph, seen = woven(mode, lambda name: {f"by_{name}": True})
    mode.run(graph, store=Store())
    assert seen["c0"] == ["by_a0", "by_a1", "by_a2", "by_b0", "by_b1"]  # never b2's
    assert seen["c2"] == ["by_a0", "by_a1", "by_a2", "by_b0", "by_b2"]


def test_a_join_sees_appends_of_its_ancestors_in_graph_order(mode: Mode) -> None:
    graph, seen = woven(mode, lambda name: {"log": name})
    store = Store(reducers={"state:log": reducers.append})
    mode.run(graph, store=store)
    assert seen["c0"] == ["a0", "a1", "a2", "b0", "b1"]
    assert seen["c1"] == ["a0", "a1", "a2", "b1", "b2"]
    assert store.value("state", "log") == ["a0", "a1", "a2", "b0", "b1", "b2", "c0", "c1", "c2"]


def writer(mode: Mode, name: str, *, sleep: float = 0.0) -> WorkGraphNode:
    """A state node that appends its name to state:items, counts in shared:n, and returns
    what it saw of items."""

    def write(view: StateView) -> Writes:
        seen = list(view.get("items", []))
        n = view.read("shared", "n", 0)
        changes = (("state", "items", name, False), ("shared", "n", n + 1, False))
        return Writes(changes, result={"saw": seen})

    return state_node(mode, write, id=name, sleep=sleep)


def test_writes_of_any_kind_are_committed_and_their_result_is_the_nodes(mode: Mode) -> None:
    store = Store(reducers={"state:items": reducers.append})
    a, b = writer(mode, "a"), writer(mode, "b")
    a.add_next(b)
    assert mode.run(WorkGraph(start_nodes=[a]), store=store) == {"saw": ["a"]}
    assert store.value("state", "items") == ["a", "b"]
    assert store.value("shared", "n") == 2
    assert [e.source for e in store.events()] == ["a#0", "a#0", "b#1", "b#1"]


def test_parallel_writes_commit_in_graph_order_not_finish_order(mode: Mode) -> None:
    ends = []
    for sleeps in ([0.0, 0.05, 0.1], [0.1, 0.05, 0.0]):
        store = Store(reducers={"state:items": reducers.append, "shared:n": reducers.add})
        first = state_node(mode, lambda view: None, id="start")
        for i, sleep in enumerate(sleeps):
            first.add_next(writer(mode, f"b{i}", sleep=sleep))
        results = mode.run(WorkGraph(start_nodes=[first]), store=store)
        assert results == [{"saw": []}] * 3  # siblings never see each other
        ends.append((store.value("state", "items"), store.value("shared", "n")))
    assert ends == [(["b0", "b1", "b2"], 3)] * 2


def test_a_whole_write_replaces_a_reduced_field(mode: Mode) -> None:
    store = Store(reducers={"state:items": reducers.append})
    store.write("state", "items", "old")
    node = state_node(mode, lambda view: Writes((("state", "items", ["new"], True),), "r"), id="w")
    assert mode.run(WorkGraph(start_nodes=[node]), store=store) == "r"
    assert store.value("state", "items") == ["new"]


def test_a_recorded_run_keeps_the_result_of_writes_and_resumes_without_calling(
    mode: Mode,
) -> None:
    store = Store(reducers={"state:items": reducers.append})
    calls: list[str] = []

    def fails_once(view: StateView) -> Writes:
        calls.append("c")
        if len(calls) == 1:
            raise RuntimeError("down")
        return Writes((("state", "items", "c", False),), result="c done")

    a, b = writer(mode, "a"), writer(mode, "b")
    a.add_next(b).add_next(state_node(mode, fails_once, id="c"))
    graph = WorkGraph(start_nodes=[a])
    with pytest.raises(NodeError):
        mode.run(graph, store=store, run_id="r1")
    assert mode.run(graph, store=store, run_id="r1") == "c done"
    assert store.value("state", "items") == ["a", "b", "c"]
    assert store.value("shared", "n") == 2
    assert calls == ["c", "c"]
    recorded = RunLog(store, "r1").recorded()
    assert recorded["b#1"].result == {"saw": ["a"]}


def test_writes_may_name_their_writer(mode: Mode) -> None:
    store = Store()
    node = state_node(
        mode, lambda view: Writes((("state", "x", 1, False),), source="call-7"), id="w"
    )
    mode.run(WorkGraph(start_nodes=[node]), store=store)
    assert store.get("state", "x").source == "call-7"  # type: ignore[union-attr]


def test_shared_views_read_the_run_store_once_the_ancestors_are_committed(mode: Mode) -> None:
    store = Store(reducers={"state:items": reducers.append})
    first = state_node(mode, lambda view: {"base": 1}, id="start")
    for i, sleep in enumerate([0.0, 0.1]):  # b1 starts late on a thread, or after b0 inline
        first.add_next(writer(mode, f"b{i}", sleep=sleep))
    graph = WorkGraph(start_nodes=[first], isolated=False, max_concurrency=1)
    assert mode.run(graph, store=store) == [{"saw": []}, {"saw": ["b0"]}]
    assert store.value("state", "items") == ["b0", "b1"]
    assert store.value("state", "base") == 1


def test_a_recorded_run_with_shared_views_commits_each_node_with_its_record(mode: Mode) -> None:
    store = Store(reducers={"state:items": reducers.append})
    calls: list[str] = []

    def fails_once(view: StateView) -> Writes:
        calls.append("c")
        if len(calls) == 1:
            raise RuntimeError("down")
        return Writes((("state", "items", "c", False),), result=list(view["items"]))

    a, b = writer(mode, "a"), writer(mode, "b")
    a.add_next(b).add_next(state_node(mode, fails_once, id="c"))
    graph = WorkGraph(start_nodes=[a], isolated=False)
    with pytest.raises(NodeError):
        mode.run(graph, store=store, run_id="r1")
    assert store.value("state", "items") == ["a", "b"]  # committed before c failed
    assert mode.run(graph, store=store, run_id="r1") == ["a", "b"]
    assert store.value("state", "items") == ["a", "b", "c"]
    assert calls == ["c", "c"]
    assert RunLog(store, "r1").recorded()["b#1"].result == {"saw": ["a"]}


def test_isolated_must_be_a_bool() -> None:
    with pytest.raises(GraphBuildError, match="isolated"):
        WorkGraph(start_nodes=[WorkGraphNode(len)], isolated="no")  # type: ignore[arg-type]


def test_shared_views_commit_in_graph_order_whichever_node_finishes_first(mode: Mode) -> None:
    store = Store()

    def put(name: str, sleep: float) -> WorkGraphNode:
        return state_node(mode, lambda view: {name: 1}, id=name, sleep=sleep)

    first = state_node(mode, lambda view: {"base": 1}, id="start")
    first.add_next(put("slow", 0.2))
    first.add_next(put("quick", 0.0))
    mode.run(WorkGraph(start_nodes=[first], isolated=False), store=store)
    written = [e.path for e in store.events() if e.kind == "state"]
    assert written == ["base", "slow", "quick"]  # the order of the graph, not of finishing


def _keep(seen: list[Any], view: StateView, given: Any) -> None:
    seen.append(given)


@pytest.mark.parametrize(
    "delta",
    [{"items": [1, {"a": 2}]}, {"note": "tr\u00e9s"}, {"x": 1.5}, {"x": 3, "items": [4]}],
)
def test_a_chain_hands_down_what_the_store_kept_as_the_general_path_does(delta: Any) -> None:
    """A state chain run in place (nobody watching) and the same chain watched (the general
    path) hand the next node the same delta, its containers the frozen copies the store
    holds (not the node's own mutable objects), and leave the same state."""
    got = []
    for watched in (False, True):
        first = WorkGraphNode(
            lambda view, d=delta: d, ResultPassDownMode.ResultAsFirstArg, id="a", state=True
        )
        seen: list[Any] = []
        first.add_next(WorkGraphNode(partial(_keep, seen), id="b", state=True))
        store = Store()
        if watched:
            store.subscribe(lambda event: None)
        WorkGraph(start_nodes=[first]).run(store=store)
        (given,) = seen
        assert given == delta
        for path, value in given.items():
            if isinstance(value, list):
                assert type(value) is FrozenList and value is not delta[path]
                with pytest.raises(TypeError):
                    value[0] = 0
        got.append((given, store.to_dict(kind="state")))
    assert got[0] == got[1]


@pytest.mark.parametrize("watched", [False, True])
def test_a_value_the_store_refuses_fails_its_node_in_a_chain(watched: bool) -> None:
    """An int past the store's digits fails the node that returned it, named, whether the
    chain runs in place or watched; the node before it is committed."""
    ok = WorkGraphNode(lambda view: {"x": 1}, id="ok", state=True)
    ok.add_next(WorkGraphNode(lambda view: {"x": 10**5000}, id="huge", state=True))
    store = Store()
    if watched:
        store.subscribe(lambda event: None)
    with pytest.raises(
        NodeError, match=r"node huge#1 .* state:x in the delta of huge#1: an int"
    ) as err:
        WorkGraph(start_nodes=[ok]).run(store=store)
    assert isinstance(err.value.__cause__, ValueTypeError)
    assert store.value("state", "x") == 1


def test_branches_beside_one_that_takes_ctx_each_read_only_their_parents_writes(
    mode: Mode,
) -> None:
    store = Store(reducers={"state:items": reducers.append})
    seen: dict[str, list[str]] = {}

    def branch(name: str) -> Any:
        def fn(view: Any) -> dict[str, str]:
            seen[name] = sorted(view.to_dict())
            return {"items": name, f"by_{name}": name}

        return fn

    def with_ctx(view: Any, ctx: Any) -> dict[str, str]:
        seen["c"] = sorted(view.to_dict())
        assert ctx.node == "c#3"
        return {"items": "c", "by_c": "c"}

    first = state_node(mode, lambda view: {"x": 1}, id="start")
    join = state_node(mode, lambda view: {"total": len(view["items"])}, id="join")
    for name in ("a", "b"):
        first.add_next(state_node(mode, branch(name), id=name)).add_next(join)
    first.add_next(state_node(mode, with_ctx, id="c")).add_next(join)
    first.add_next(state_node(mode, branch("d"), id="d")).add_next(join)
    mode.run(WorkGraph(start_nodes=[first]), store=store)
    assert seen == {name: ["x"] for name in ("a", "b", "c", "d")}
    assert store.value("state", "items") == ["a", "b", "c", "d"]
    assert store.value("state", "total") == 4
    assert [store.value("state", f"by_{name}") for name in "abcd"] == list("abcd")


@pytest.mark.parametrize("watched", [False, True])
def test_a_fan_out_branch_is_retried_and_may_return_a_coroutine_watched_or_not(
    watched: bool,
) -> None:
    """A branch nobody watches takes a quicker first attempt on its thread: its retries,
    a coroutine it returns and a failure past its retries end as in a watched run."""
    calls: list[str] = []

    def flaky(view: Any) -> dict[str, str]:
        calls.append("flaky")
        if calls.count("flaky") == 1:
            raise ConnectionError("once")
        return {"items": "flaky"}

    async def later() -> dict[str, str]:
        return {"items": "coroutine"}

    def gives_coroutine(view: Any) -> Any:
        return later()

    def run(broken: bool) -> tuple[Any, Store]:
        calls.clear()
        store = Store(reducers={"state:items": reducers.append})
        if watched:
            store.subscribe(lambda batch: None)
        first = WorkGraphNode(lambda view: None, id="start", state=True)
        join = WorkGraphNode(lambda view: {"seen": list(view["items"])}, id="join", state=True)
        branches = [
            WorkGraphNode(flaky, id="flaky", state=True, retry=2),
            WorkGraphNode(gives_coroutine, id="co", state=True),
            WorkGraphNode(lambda view: {"items": "plain"}, id="plain", state=True),
        ]
        if broken:
            branches.append(WorkGraphNode(lambda view: 1 / 0, id="broken", state=True))
        for branch in branches:
            first.add_next(branch).add_next(join)
        return WorkGraph(start_nodes=[first]).run(store=store), store

    output, store = run(broken=False)
    assert calls == ["flaky", "flaky"]
    assert store.value("state", "seen") == ["flaky", "coroutine", "plain"]
    assert output == {"seen": ["flaky", "coroutine", "plain"]}
    with pytest.raises(NodeError, match="broken") as err:
        run(broken=True)
    assert isinstance(err.value.__cause__, ZeroDivisionError)
