"""Stop flags: Continue, Terminate, AbortBranch, and what a run returns."""

from __future__ import annotations

import itertools
import threading
from typing import Any

from graph_helpers import Mode

from weft.graph import ResultPassDownMode, WorkGraph, WorkGraphNode, WorkGraphStopFlags

R = ResultPassDownMode
F = WorkGraphStopFlags


def chain(mode: Mode, *values: Any, pass_down: Any = R.ResultAsFirstArg) -> WorkGraph:
    nodes = [WorkGraphNode(mode.fn(v), pass_down, id=f"n{i}") for i, v in enumerate(values)]
    for a, b in itertools.pairwise(nodes):
        a.add_next(b)
    return WorkGraph(start_nodes=[nodes[0]])


def test_the_flag_is_never_handed_downstream(mode: Mode) -> None:
    graph = chain(mode, lambda: (F.Continue, {"user_input": None}), lambda r: r)
    assert mode.run(graph) == {"user_input": None}


def test_a_pair_that_only_looks_like_a_flag_is_a_result(mode: Mode) -> None:
    graph = chain(mode, lambda: ("Terminate", 1), lambda r: r)
    assert mode.run(graph) == ("Terminate", 1)


def test_a_flag_alone_is_a_result(mode: Mode) -> None:
    graph = chain(mode, lambda: F.Terminate, lambda r: ("got", r))
    assert mode.run(graph) == ("got", F.Terminate)


def test_terminate_returns_the_terminating_result_and_runs_nothing_after(mode: Mode) -> None:
    after: list[Any] = []
    graph = chain(mode, lambda: (F.Terminate, "stop here"), lambda r: after.append(r))
    assert mode.run(graph) == "stop here"
    assert after == []


def test_terminate_lets_running_nodes_finish(mode: Mode) -> None:
    finished: list[str] = []

    def slow() -> str:
        finished.append("slow")
        return "slow"

    start = WorkGraphNode(mode.fn(lambda: None), id="start")
    stop = WorkGraphNode(mode.fn(lambda: (F.Terminate, "stopped")), id="stop")
    running = WorkGraphNode(mode.fn(slow, sleep=0.1), id="running")
    later = WorkGraphNode(mode.fn(lambda: finished.append("later")), id="later")
    start.add_next(stop)
    start.add_next(running)
    running.add_next(later)
    result = mode.run(WorkGraph(start_nodes=[start]))
    assert finished == ["slow"]  # it was running: it finished; its successor never started
    assert result == ["stopped"]  # two sinks (stop, later): the ends that finished


def test_abort_branch_skips_what_depends_only_on_the_aborted_node(mode: Mode) -> None:
    ran: list[str] = []

    def mark(name: str) -> Any:
        return lambda *a: ran.append(name) or name

    start = WorkGraphNode(mode.fn(lambda: "s"), id="start")
    abort = WorkGraphNode(mode.fn(lambda: (F.AbortBranch, "no")), R.ResultAsFirstArg, id="x")
    under = WorkGraphNode(mode.fn(mark("under")), R.ResultAsFirstArg, id="under")
    deeper = WorkGraphNode(mode.fn(mark("deeper")), id="deeper")
    other = WorkGraphNode(mode.fn(mark("other")), id="other")
    start.add_next(abort)
    abort.add_next(under)
    under.add_next(deeper)
    start.add_next(other)
    assert mode.run(WorkGraph(start_nodes=[start])) == ["other"]  # skipped sinks left out
    assert ran == ["other"]


def test_join_whose_predecessors_all_aborted_is_skipped(mode: Mode) -> None:
    ran: list[str] = []
    start = WorkGraphNode(mode.fn(lambda: None), id="start")
    join = WorkGraphNode(mode.fn(lambda *a: ran.append("join")), id="join")
    for i in range(2):
        node = WorkGraphNode(mode.fn(lambda: (F.AbortBranch, None)), id=f"b{i}")
        start.add_next(node)
        node.add_next(join)
    assert mode.run(WorkGraph(start_nodes=[start])) is None  # the one sink was skipped
    assert ran == []


def test_several_sinks_give_a_list_in_start_order(mode: Mode) -> None:
    def named(name: str, sleep: float = 0.0) -> Any:
        def value() -> str:
            return name

        value.__name__ = name
        return mode.fn(value, sleep=sleep)

    graph = WorkGraph([[named("a"), named("c")], [named("x", 0.05)]])
    assert graph.keys == ("a#0", "x#1", "c#2")  # canonical order is breadth-first
    assert mode.run(graph) == ["c", "x"]  # results follow the start nodes


def test_path_example_sinks_come_in_path_order() -> None:
    values = {name: (lambda n=name: n) for name in "ABCDXY"}
    graph = WorkGraph([[values[n] for n in path] for path in ("ABC", "ABD", "XY")])
    assert graph.run() == ["C", "D", "Y"]


def test_independent_sync_nodes_run_at_the_same_time() -> None:
    barrier = threading.Barrier(3, timeout=5)
    start = WorkGraphNode(lambda: None, id="start")
    for i in range(3):
        start.add_next(WorkGraphNode(lambda: barrier.wait() >= 0, id=f"b{i}"))
    assert WorkGraph(start_nodes=[start]).run() == [True, True, True]
