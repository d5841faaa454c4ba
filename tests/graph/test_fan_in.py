"""Fan-in: a node with several predecessors runs once and gets every contribution."""

from __future__ import annotations

from typing import Any

from graph_helpers import Mode

from weft.graph import ResultPassDownMode, WorkGraph, WorkGraphNode, WorkGraphStopFlags

R = ResultPassDownMode


def echo(*args: Any, **kwargs: Any) -> tuple[tuple[Any, ...], dict[str, Any]]:
    return args, kwargs


def fan_in(
    mode: Mode,
    branches: list[tuple[Any, Any, float]],
    join: Any = echo,
) -> tuple[WorkGraph, WorkGraphNode]:
    """start -> each (value, pass_down, sleep) branch -> join, edges added in list order."""
    start = WorkGraphNode(mode.fn(lambda *a, **k: "s"), id="start")
    last = WorkGraphNode(mode.fn(join), id="join")
    for i, (value, pass_down, sleep) in enumerate(branches):
        node = WorkGraphNode(mode.fn(value, sleep=sleep), pass_down, id=f"b{i}")
        start.add_next(node)
        node.add_next(last)
    return WorkGraph(start_nodes=[start]), last


def const(value: Any) -> Any:
    return lambda *a, **k: value


def test_positional_results_come_in_edge_order_not_finish_order(mode: Mode) -> None:
    graph, _ = fan_in(
        mode,
        [(const("slow"), R.ResultAsFirstArg, 0.15), (const("fast"), R.ResultAsFirstArg, 0.0)],
    )
    assert mode.run(graph, "arg0", "arg1") == (("slow", "fast", "arg1"), {})


def test_join_runs_once(mode: Mode) -> None:
    calls: list[Any] = []

    def join(*args: Any) -> int:
        calls.append(args)
        return len(calls)

    graph, _ = fan_in(mode, [(const(i), R.ResultAsFirstArg, 0.0) for i in range(5)], join)
    assert mode.run(graph, None) == 1
    assert calls == [(0, 1, 2, 3, 4)]


def test_leading_args_of_several_predecessors_are_concatenated(mode: Mode) -> None:
    graph, _ = fan_in(
        mode,
        [(const(("a", "b")), R.ResultAsLeadingArgs, 0.0), (const("c"), R.ResultAsLeadingArgs, 0.0)],
    )
    assert mode.run(graph, 1) == (("a", "b", "c", 1), {})


def test_keyword_written_by_several_predecessors_is_a_list_in_edge_order(mode: Mode) -> None:
    graph, _ = fan_in(
        mode,
        [
            (const("one"), "results", 0.1),
            (const("two"), "results", 0.0),
            (const("x"), "other", 0.0),
        ],
    )
    assert mode.run(graph, task_input="t") == (
        (),
        {"task_input": "t", "results": ["one", "two"], "other": "x"},
    )


def test_keyword_list_keeps_its_shape_when_a_writer_aborted(mode: Mode) -> None:
    graph, _ = fan_in(
        mode,
        [
            (const((WorkGraphStopFlags.AbortBranch, "dropped")), "results", 0.0),
            (const("kept"), "results", 0.0),
        ],
    )
    assert mode.run(graph) == ((), {"results": ["kept"]})


def test_no_pass_down_predecessor_contributes_nothing(mode: Mode) -> None:
    graph, _ = fan_in(
        mode, [(const("quiet"), R.NoPassDown, 0.0), (const("loud"), R.ResultAsFirstArg, 0.0)]
    )
    assert mode.run(graph, "arg0") == (("loud",), {})


def test_mixed_modes_shape(mode: Mode) -> None:
    graph, _ = fan_in(
        mode,
        [
            (const("first"), R.ResultAsFirstArg, 0.05),
            (const(("l1", "l2")), R.ResultAsLeadingArgs, 0.0),
            (const("kw"), "named", 0.0),
            (const("silent"), R.NoPassDown, 0.0),
        ],
    )
    assert mode.run(graph, "arg0", "arg1", k=1) == (
        ("first", "l1", "l2", "arg1"),
        {"k": 1, "named": "kw"},
    )


def test_aborted_predecessor_contributes_nothing_and_positions_close_up(mode: Mode) -> None:
    graph, _ = fan_in(
        mode,
        [
            (const("a"), R.ResultAsFirstArg, 0.0),
            (const((WorkGraphStopFlags.AbortBranch, "b")), R.ResultAsFirstArg, 0.0),
            (const("c"), R.ResultAsFirstArg, 0.0),
        ],
    )
    assert mode.run(graph, "arg0") == (("a", "c"), {})


def test_base_arguments_come_from_the_first_predecessor(mode: Mode) -> None:
    """A -> B and A -> C -> D, B -> D: D's base is what B (its first edge) got."""
    a = WorkGraphNode(mode.fn(const("a")), R.ResultAsFirstArg, id="A")
    b = WorkGraphNode(mode.fn(const("b")), R.NoPassDown, id="B")
    c = WorkGraphNode(mode.fn(const("c")), R.ResultAsFirstArg, id="C")
    d = WorkGraphNode(mode.fn(echo), id="D")
    a.add_next(b)
    a.add_next(c)
    b.add_next(d)
    c.add_next(d)
    assert mode.run(WorkGraph(start_nodes=[a]), "arg0", "arg1") == (("c", "arg1"), {})


def test_a_join_of_quiet_predecessors_gets_the_arguments_of_the_first_that_finished(
    mode: Mode,
) -> None:
    """A join whose predecessors all pass nothing down is called as its first contributing
    predecessor was (the engine skips building their contributions: pass_many's rule)."""
    for abort in (False, True):
        start = WorkGraphNode(mode.fn(const("s")), R.ResultAsFirstArg, id="start")
        mid = WorkGraphNode(mode.fn(const("m")), R.ResultAsFirstArg, id="mid")
        first_value = (WorkGraphStopFlags.AbortBranch, 1) if abort else 1
        first = WorkGraphNode(mode.fn(const(first_value)), R.NoPassDown, id="first")
        second = WorkGraphNode(mode.fn(const(2)), R.NoPassDown, id="second")
        join = WorkGraphNode(mode.fn(echo), id="join")
        start.add_next(first)
        start.add_next(mid)
        mid.add_next(second)
        first.add_next(join)
        second.add_next(join)
        expected = ("m" if abort else "s", "arg1")
        assert mode.run(WorkGraph(start_nodes=[start]), "arg0", "arg1") == (expected, {})
