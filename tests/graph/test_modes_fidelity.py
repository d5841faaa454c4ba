"""A callable pass-down mode runs once per finished node: it computes the arguments the
node hands down, and every successor gets them (none, or several, alike)."""

from __future__ import annotations

from typing import Any

import pytest
from graph_helpers import Mode

from weft.errors import NodeError
from weft.graph import ResultPassDownMode, WorkGraph, WorkGraphNode, WorkGraphStopFlags


def echo(*args: Any, **kwargs: Any) -> tuple[tuple[Any, ...], dict[str, Any]]:
    return args, kwargs


def test_a_callable_mode_runs_once_for_three_successors(mode: Mode) -> None:
    shared: list[Any] = ["init"]

    def merge(result: Any, *args: Any, **kwargs: Any) -> None:
        shared.append(result)

    head = WorkGraphNode(mode.fn(lambda *a, **k: "A"), merge, id="head")
    for name in ("x", "y", "z"):
        head.add_next(WorkGraphNode(mode.fn(echo), id=name))
    out = mode.run(WorkGraph(start_nodes=[head]), 1, k=2)
    assert shared == ["init", "A"]
    assert out == [((1,), {"k": 2})] * 3  # None kept the arguments, for every successor


def test_every_successor_gets_the_arguments_computed_once(mode: Mode) -> None:
    calls: list[Any] = []

    def merge(result: Any, *args: Any, **kwargs: Any) -> Any:
        calls.append(result)
        return (result, len(calls)), {}

    head = WorkGraphNode(mode.fn(lambda: "r"), merge, id="head")
    head.add_next(WorkGraphNode(mode.fn(echo), id="x"))
    head.add_next(WorkGraphNode(mode.fn(echo), id="y"))
    assert mode.run(WorkGraph(start_nodes=[head])) == [(("r", 1), {}), (("r", 1), {})]
    assert calls == ["r"]


def test_the_last_node_of_a_sequence_hands_its_result_to_the_shared_list(mode: Mode) -> None:
    shared: list[Any] = ["init"]

    def merge_action_results(result: Any, *args: Any, **kwargs: Any) -> None:
        shared.append(result["action_results"])

    def action(name: str) -> Any:
        return lambda **k: {"user_input": None, "action_results": name}

    nodes = [WorkGraphNode(mode.fn(action(n)), merge_action_results) for n in ("A", "B", "C")]
    nodes[0].add_next(nodes[1]).add_next(nodes[2])
    mode.run(WorkGraph(start_nodes=[nodes[0]]), task_input={})
    assert shared == ["init", "A", "B", "C"]


def test_an_aborted_node_hands_nothing_down(mode: Mode) -> None:
    seen: list[Any] = []

    def merge(result: Any, *args: Any, **kwargs: Any) -> None:
        seen.append(result)

    stop = WorkGraphNode(mode.fn(lambda: (WorkGraphStopFlags.AbortBranch, "r")), merge)
    stop.add_next(WorkGraphNode(mode.fn(echo)))
    mode.run(WorkGraph(start_nodes=[stop]))
    assert seen == []


def test_a_callable_of_a_node_without_successor_that_raises_names_the_node(mode: Mode) -> None:
    def broken(result: Any, *args: Any, **kwargs: Any) -> None:
        raise KeyError("action_results")

    graph = WorkGraph(start_nodes=[WorkGraphNode(mode.fn(lambda: "r"), broken, id="last")])
    with pytest.raises(NodeError, match=r"pass-down of last#0 .*raised KeyError") as info:
        mode.run(graph)
    assert isinstance(info.value.__cause__, KeyError)


def test_a_fan_in_takes_its_base_from_the_callable_that_handed_arguments_down(
    mode: Mode,
) -> None:
    def tag(result: Any, *args: Any, **kwargs: Any) -> Any:
        return (f"tag:{result}", len(args)), kwargs  # on its own node's arguments

    appended: list[Any] = []
    start = WorkGraphNode(mode.fn(lambda *a: "s"), id="start")
    join = WorkGraphNode(mode.fn(echo), id="join")
    branches = [
        (lambda *a: 1, lambda result, *a, **k: appended.append(result)),
        (lambda *a: 2, ResultPassDownMode.ResultAsLeadingArgs),
        (lambda *a: 3, tag),
    ]
    for value, pass_down in branches:
        start.add_next(WorkGraphNode(mode.fn(value), pass_down)).add_next(join)
    assert mode.run(WorkGraph(start_nodes=[start]), "arg0") == ((2, "tag:3", 1), {})
    assert appended == [1]


def test_two_callables_handing_arguments_to_one_fan_in_is_an_error(mode: Mode) -> None:
    def tag(result: Any, *args: Any, **kwargs: Any) -> Any:
        return (*args, result), kwargs

    start = WorkGraphNode(mode.fn(lambda: "s"), id="start")
    join = WorkGraphNode(mode.fn(echo), id="join")
    for i in range(2):
        start.add_next(WorkGraphNode(mode.fn(lambda i=i: i), tag, id=f"b{i}")).add_next(join)
    with pytest.raises(NodeError, match=r"into join#3 .*b0#1 and b1#2") as info:
        mode.run(WorkGraph(start_nodes=[start]))
    assert "return None" in str(info.value)
