"""Save and resume: step records as nodes finish, and runs that continue from them."""

from __future__ import annotations

import collections
import itertools
from dataclasses import dataclass
from typing import Any

import pytest
from graph_helpers import Mode

from weft.errors import GraphError, NodeError
from weft.graph import ResultPassDownMode, WorkGraph, WorkGraphNode
from weft.store import StepRecord, Store, reducers

R = ResultPassDownMode


class Flaky:
    """Counts calls per node; ``fail`` names the nodes that raise on this pass."""

    def __init__(self) -> None:
        self.calls: collections.Counter[str] = collections.Counter()
        self.fail: set[str] = set()

    def node(self, mode: Mode, name: str, value: Any = None, **options: Any) -> WorkGraphNode:
        def call(*args: Any, **kwargs: Any) -> Any:
            self.calls[name] += 1
            if name in self.fail:
                raise RuntimeError(f"{name} is down")
            return value(*args) if callable(value) else f"{name}({', '.join(map(str, args))})"

        return WorkGraphNode(mode.fn(call), R.ResultAsFirstArg, id=name, **options)


def chain(*nodes: WorkGraphNode) -> WorkGraph:
    for a, b in itertools.pairwise(nodes):
        a.add_next(b)
    return WorkGraph(start_nodes=[nodes[0]])


def test_each_finished_node_is_recorded_under_run_id_and_key(mode: Mode) -> None:
    flaky = Flaky()
    graph = chain(flaky.node(mode, "a"), flaky.node(mode, "b"))
    store = Store()
    mode.run(graph, "x", run_id="r1", store=store)
    assert store.value("step", "r1/a#0") == StepRecord(
        kind="node",
        result="a(x)",
        started_at=store.value("step", "r1/a#0").started_at,
        duration_ms=store.value("step", "r1/a#0").duration_ms,
    )
    assert store.value("step", "r1/b#1").result == "b(a(x))"
    run = store.value("step", "r1")
    assert (run.kind, run.status, run.units) == ("graph", "completed", ("a#0", "b#1"))
    assert run.output is None  # a graph's output is rebuilt from its nodes' records


def test_records_are_written_as_nodes_finish_not_at_the_end(mode: Mode) -> None:
    store = Store()
    seen: list[bool] = []
    first = WorkGraphNode(mode.fn(lambda: "one"), R.ResultAsFirstArg, id="first")
    first.add_next(
        WorkGraphNode(mode.fn(lambda x: seen.append(store.has("step", "r1/first#0"))), id="then")
    )
    mode.run(WorkGraph(start_nodes=[first]), run_id="r1", store=store)
    assert seen == [True]


def test_resume_after_a_failure_skips_finished_nodes(mode: Mode) -> None:
    flaky = Flaky()
    graph = chain(flaky.node(mode, "a"), flaky.node(mode, "b"), flaky.node(mode, "c"))
    store = Store()
    flaky.fail = {"c"}
    with pytest.raises(NodeError, match="run_id='r1'"):
        mode.run(graph, "x", run_id="r1", store=store)
    assert flaky.calls == {"a": 1, "b": 1, "c": 1}
    flaky.fail = set()
    assert mode.run(graph, "x", run_id="r1", store=store) == "c(b(a(x)))"
    assert flaky.calls == {"a": 1, "b": 1, "c": 2}  # a and b were not called again


def test_resume_in_a_fan_out_reruns_only_what_did_not_finish(mode: Mode) -> None:
    flaky = Flaky()
    start = flaky.node(mode, "start")
    join = WorkGraphNode(mode.fn(lambda *r: list(r)), id="join")
    for name in ("b0", "b1", "b2"):
        node = flaky.node(mode, name)
        start.add_next(node)
        node.add_next(join)
    graph, store = WorkGraph(start_nodes=[start]), Store()
    flaky.fail = {"b1"}
    with pytest.raises(NodeError):
        mode.run(graph, run_id="r", store=store)
    flaky.fail = set()
    assert mode.run(graph, run_id="r", store=store) == [
        "b0(start())",
        "b1(start())",
        "b2(start())",
    ]
    assert flaky.calls["start"] == 1 and flaky.calls["b1"] == 2
    assert flaky.calls["b0"] == 1 and flaky.calls["b2"] == 1


def test_a_completed_run_returns_its_record_and_calls_nothing(mode: Mode) -> None:
    flaky = Flaky()
    graph, store = chain(flaky.node(mode, "a"), flaky.node(mode, "b")), Store()
    first = mode.run(graph, "x", run_id="r1", store=store)
    assert mode.run(graph, "x", run_id="r1", store=store) == first
    assert flaky.calls == {"a": 1, "b": 1}


def test_one_graph_under_two_run_ids_never_mixes_results(mode: Mode) -> None:
    flaky = Flaky()
    graph, store = chain(flaky.node(mode, "a"), flaky.node(mode, "b")), Store()
    assert mode.run(graph, "x", run_id="r1", store=store) == "b(a(x))"
    assert mode.run(graph, "y", run_id="r2", store=store) == "b(a(y))"
    assert flaky.calls == {"a": 2, "b": 2}


def test_a_run_id_recorded_for_another_graph_is_refused(mode: Mode) -> None:
    flaky = Flaky()
    store = Store()
    mode.run(chain(flaky.node(mode, "a")), run_id="r1", store=store)
    with pytest.raises(GraphError, match=r"recorded for a graph \(units \[a#0\]\), not"):
        mode.run(chain(flaky.node(mode, "other")), run_id="r1", store=store)


def test_a_result_that_is_not_json_is_a_clear_error(mode: Mode) -> None:
    @dataclass
    class Report:
        text: str

    graph = WorkGraph(start_nodes=[WorkGraphNode(mode.fn(lambda: Report("hi")), id="write")])
    with pytest.raises(NodeError) as info:
        mode.run(graph, run_id="r1", store=Store())
    message = str(info.value)
    assert "write#0" in message and "Report" in message and "register_type" in message


def test_a_tuple_result_comes_back_a_tuple(mode: Mode) -> None:
    flaky = Flaky()
    store = Store()
    head = WorkGraphNode(mode.fn(lambda: ("a", "b")), R.ResultAsLeadingArgs, id="head")
    tail = flaky.node(mode, "tail", value=lambda *args: list(args))
    head.add_next(tail)
    graph = WorkGraph(start_nodes=[head])
    flaky.fail = {"tail"}
    with pytest.raises(NodeError):
        mode.run(graph, run_id="r", store=store)
    flaky.fail = set()
    assert mode.run(graph, run_id="r", store=store) == ["a", "b"]  # spread again


def test_resumed_state_deltas_are_committed_once(mode: Mode) -> None:
    flaky = Flaky()
    store = Store(reducers={"state:log": reducers.append})
    first = WorkGraphNode(mode.fn(lambda view: {"log": "first"}), id="first", state=True)
    second = flaky.node(mode, "second", value=lambda view: {"log": f"second saw {view['log']}"})
    second.state = True
    first.add_next(second)
    graph = WorkGraph(start_nodes=[first])
    flaky.fail = {"second"}
    with pytest.raises(NodeError):
        mode.run(graph, run_id="r", store=store)
    assert store.value("state", "log") == ["first"]  # what finished before the failure stays
    flaky.fail = set()
    mode.run(graph, run_id="r", store=store)
    assert store.value("state", "log") == ["first", "second saw ['first']"]


def test_a_state_node_record_holds_its_delta_and_resumes_from_it(mode: Mode) -> None:
    flaky = Flaky()
    store = Store(reducers={"state:log": reducers.append})
    first = flaky.node(mode, "first", value=lambda view: {"log": "first"}, state=True)
    passed = WorkGraphNode(mode.fn(lambda view: None), id="nothing", state=True)
    last = flaky.node(mode, "last", value=lambda view, *parts: {"log": f"last got {list(parts)}"})
    last.state = True
    last.result_pass_down_mode = R.ResultAsLeadingArgs
    first.result_pass_down_mode = R.ResultAsFirstArg
    passed.result_pass_down_mode = R.ResultAsFirstArg
    first.add_next(last)
    passed.add_next(last)
    graph = WorkGraph(start_nodes=[first, passed])
    flaky.fail = {"last"}
    with pytest.raises(NodeError):
        mode.run(graph, run_id="r", store=store)
    record = store.value("step", "r/first#0")
    assert record.result == {"log": "first"} and record.committed
    assert store.value("step", "r/nothing#1").result is None
    flaky.fail = set()
    mode.run(graph, run_id="r", store=store)
    assert store.value("state", "log") == ["first", "last got [{'log': 'first'}, None]"]
    assert flaky.calls == {"first": 1, "last": 2}  # first's result came from its record


def test_a_resumed_node_reads_the_view_it_would_have_had(mode: Mode) -> None:
    """``a`` depends on ``s`` only: resumed, it reads ``s``'s write once and not ``x``'s,
    exactly as in a run that never stopped."""
    flaky = Flaky()
    x = flaky.node(mode, "x", value=lambda view: {"log": "x"}, state=True)
    s = flaky.node(mode, "s", value=lambda view: {"log": "s"}, state=True)
    a = flaky.node(mode, "a", value=lambda view, _: {"seen": list(view["log"])}, state=True)
    s.add_next(a)
    graph = WorkGraph(start_nodes=[x, s])
    reference = Store(reducers={"state:log": reducers.append})
    mode.run(graph, run_id="r", store=reference)
    assert reference.value("state", "seen") == ["s"]
    store = Store(reducers={"state:log": reducers.append})
    flaky.fail = {"a"}
    with pytest.raises(NodeError):
        mode.run(graph, run_id="r", store=store)
    flaky.fail = set()
    mode.run(graph, run_id="r", store=store)
    assert store.value("state", "seen") == ["s"]  # resumed: ['x', 's', 's']


def test_a_resumed_node_may_replace_a_field_written_meanwhile(mode: Mode) -> None:
    """The caller fixes ``shared:x`` between the failure and the resume; the node that
    runs again replaces it: that is its own write on top of what it read, no conflict."""
    flaky = Flaky()
    a = flaky.node(mode, "a", value=lambda view: {"a": 1}, state=True)
    failing = [True]

    def write_x(ctx: Any) -> None:
        if failing[0]:
            raise RuntimeError("b is down")
        ctx.store.write("shared", "x", "b")

    b = WorkGraphNode(mode.fn(write_x), id="b")
    graph = WorkGraph(start_nodes=[a, b])
    store = Store()
    with pytest.raises(NodeError):
        mode.run(graph, run_id="r", store=store)
    store.write("shared", "x", "fixed by the caller")
    failing[0] = False
    mode.run(graph, run_id="r", store=store)
    assert store.value("shared", "x") == "b"
    assert flaky.calls["a"] == 1


def test_run_id_needs_a_store() -> None:
    with pytest.raises(GraphError, match="needs a store"):
        WorkGraph([[len]]).run("x", run_id="r1")


def test_run_id_with_a_slash_is_refused() -> None:
    with pytest.raises(GraphError, match="without '/'"):
        WorkGraph([[len]]).run("x", run_id="a/b", store=Store())
