"""Each pass-down mode, with one predecessor (the seed's rule), sync and async alike."""

from __future__ import annotations

from typing import Any

import pytest
from graph_helpers import Mode

from weft.errors import NodeError
from weft.graph import ResultPassDownMode, WorkGraph, WorkGraphNode

R = ResultPassDownMode


def pair(mode: Mode, first: Any, pass_down: Any, second: Any) -> WorkGraph:
    a = WorkGraphNode(mode.fn(first), pass_down, id="a")
    a.add_next(WorkGraphNode(mode.fn(second), id="b"))
    return WorkGraph(start_nodes=[a])


def echo(*args: Any, **kwargs: Any) -> tuple[tuple[Any, ...], dict[str, Any]]:
    return args, kwargs


def test_no_pass_down_hands_on_the_arguments_the_node_got(mode: Mode) -> None:
    graph = pair(mode, lambda *a, **k: "ignored", R.NoPassDown, echo)
    assert mode.run(graph, 1, 2, k=3) == ((1, 2), {"k": 3})


def test_default_mode_is_no_pass_down() -> None:
    assert WorkGraphNode(len).result_pass_down_mode is R.NoPassDown


def test_result_as_first_arg_replaces_the_first_argument(mode: Mode) -> None:
    graph = pair(mode, lambda *a, **k: "r", R.ResultAsFirstArg, echo)
    assert mode.run(graph, 1, 2, k=3) == (("r", 2), {"k": 3})


def test_result_as_first_arg_with_no_arguments_gives_one(mode: Mode) -> None:
    graph = pair(mode, lambda: "r", R.ResultAsFirstArg, echo)
    assert mode.run(graph) == (("r",), {})


def test_result_as_leading_args_puts_the_result_first(mode: Mode) -> None:
    graph = pair(mode, lambda *a: ["r"], R.ResultAsLeadingArgs, echo)
    assert mode.run(graph, 1) == ((["r"], 1), {})


def test_result_as_leading_args_spreads_a_tuple(mode: Mode) -> None:
    graph = pair(mode, lambda *a: ("r", "s"), R.ResultAsLeadingArgs, echo)
    assert mode.run(graph, 1) == (("r", "s", 1), {})


def test_keyword_mode_passes_the_result_as_that_keyword(mode: Mode) -> None:
    graph = pair(mode, lambda **k: "r", "previous_agent_results", echo)
    assert mode.run(graph, task_input="t") == (
        (),
        {"task_input": "t", "previous_agent_results": "r"},
    )


def test_callable_mode_returning_none_keeps_the_arguments(mode: Mode) -> None:
    seen: list[Any] = []

    def collect(result: Any, *args: Any, **kwargs: Any) -> None:
        seen.append((result, args, kwargs))

    graph = pair(mode, lambda *a, **k: "r", collect, echo)
    assert mode.run(graph, 1, k=2) == ((1,), {"k": 2})
    assert seen == [("r", (1,), {"k": 2})]


def test_callable_mode_returns_new_arguments(mode: Mode) -> None:
    def merge(result: Any, *args: Any, **kwargs: Any) -> tuple[list[Any], dict[str, Any]]:
        return [result, *args], {**kwargs, "extra": True}

    graph = pair(mode, lambda *a, **k: "r", merge, echo)
    assert mode.run(graph, 1) == (("r", 1), {"extra": True})


def test_callable_mode_with_a_bad_return_is_an_error_naming_the_edge(mode: Mode) -> None:
    graph = pair(mode, lambda: "r", lambda result: "oops", echo)
    with pytest.raises(NodeError, match=r"pass-down of a#0 into b#1") as info:
        mode.run(graph)
    assert isinstance(info.value.__cause__, TypeError)


def test_seed_shared_list_accumulation(mode: Mode) -> None:
    """Pattern 2 of the seed: a callable mode appends each result to a shared list."""
    shared: list[Any] = ["init"]

    def merge_action_results(result: Any, *args: Any, **kwargs: Any) -> None:
        shared.append(result["action_results"])

    def action(name: str) -> Any:
        return lambda **k: {"user_input": None, "action_results": name}

    nodes = [WorkGraphNode(mode.fn(action(n)), merge_action_results) for n in ("A1", "C1")]
    nodes[0].add_next(nodes[1])
    mode.run(WorkGraph(start_nodes=[nodes[0]]), task_input={})
    assert shared == ["init", "A1", "C1"]  # the last node's result is appended too


def test_run_passes_its_arguments_to_every_start_node(mode: Mode) -> None:
    a = WorkGraphNode(mode.fn(echo), id="a")
    x = WorkGraphNode(mode.fn(echo), id="x")
    assert mode.run(WorkGraph(start_nodes=[a, x]), 1, task_input="t") == [
        ((1,), {"task_input": "t"}),
        ((1,), {"task_input": "t"}),
    ]


def test_graph_is_callable_like_the_seed_next_actions() -> None:
    graph = WorkGraph([[lambda task_input: task_input["user_input"]]])
    assert graph(task_input={"user_input": "hi"}) == "hi"
