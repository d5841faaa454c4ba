"""Building graphs: the seed's wirings, paths, keys, and every wiring check."""

from __future__ import annotations

from functools import partial
from typing import Any

import pytest

import weft.graph
from weft.errors import GraphBuildError
from weft.graph import (
    ResultPassDownMode,
    WorkGraph,
    WorkGraphNode,
    build_nodes_from_paths,
)

FIRST = ResultPassDownMode.ResultAsFirstArg


def test_public_names_are_pinned() -> None:
    assert weft.graph.__all__ == [
        "Interrupt",
        "PassDown",
        "Paused",
        "ResultPassDownMode",
        "RetryPolicy",
        "RunContext",
        "StateView",
        "WorkGraph",
        "WorkGraphNode",
        "WorkGraphStopFlags",
        "build_nodes_from_paths",
        "interrupt",
    ]
    for name in weft.graph.__all__:
        assert getattr(weft.graph, name) is not None


def seed_action_graph(summarizer: Any = None) -> tuple[list[WorkGraphNode], dict[str, Any]]:
    """[[A], [B, C, D], [E]] wired as the seed's Agent.__call__ wires it."""

    def act(name: str, *args: Any, **kwargs: Any) -> dict[str, Any]:
        return {"user_input": None, "action_results": name}

    def agent(result: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        return result  # the seed's agent takes task_input too; it flows through

    def summarize(*results: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        return {"action_results": [r["action_results"] for r in results]}

    a = WorkGraphNode(partial(act, "A"), FIRST, id="$class-Actioner")
    start_nodes = [a]
    last = a
    summary = WorkGraphNode(summarizer or summarize, FIRST, id="$class-Summarizer")
    for name in "BCD":
        action = WorkGraphNode(partial(act, name), FIRST, id="$class-Actioner")
        branched = WorkGraphNode(agent, FIRST, id="$class-Agent")
        action.add_next(branched)
        branched.add_next(summary)
        last.add_next(action)
    e = WorkGraphNode(partial(act, "E"), id="$class-Actioner")
    summary.add_next(e)
    return start_nodes, {"a": a, "summary": summary, "e": e}


def test_seed_wiring_of_action_groups() -> None:
    start_nodes, named = seed_action_graph()
    graph = WorkGraph(start_nodes=start_nodes)
    a, summary, e = named["a"], named["summary"], named["e"]
    assert [n.id for n in a.next] == ["$class-Actioner"] * 3
    assert [n.id for n in summary.previous] == ["$class-Agent"] * 3
    assert summary.next == [e] and e.previous == [summary]
    assert graph.keys == (
        "$class-Actioner#0",
        "$class-Actioner#1",
        "$class-Actioner#2",
        "$class-Actioner#3",
        "$class-Agent#4",
        "$class-Agent#5",
        "$class-Agent#6",
        "$class-Summarizer#7",
        "$class-Actioner#8",
    )


def test_seed_summarizer_receives_every_branch_in_action_order() -> None:
    seen: list[Any] = []

    def summarize(*results: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        seen.append([r["action_results"] for r in results])
        return {"action_results": seen[-1]}

    start_nodes, _ = seed_action_graph(summarize)
    WorkGraph(start_nodes=start_nodes).run(task_input={"user_input": "go"})
    assert seen == [["B", "C", "D"]]


def test_paths_merge_common_prefixes() -> None:
    starts = build_nodes_from_paths([["A", "B", "C"], ["A", "B", "D"], ["X", "Y"]])
    assert [n.id for n in starts] == ["A", "X"]
    a, x = starts
    assert [n.id for n in a.next] == ["B"]
    assert [n.id for n in a.next[0].next] == ["C", "D"]
    assert [n.id for n in x.next] == ["Y"]
    assert a.next[0].previous == [a]


def test_paths_with_the_same_function_share_one_node() -> None:
    def fetch() -> None: ...
    def parse() -> None: ...
    def store() -> None: ...

    starts = build_nodes_from_paths([[fetch, parse], [fetch, store]])
    assert len(starts) == 1
    assert [n.value for n in starts[0].next] == [parse, store]


def test_workgraph_from_paths_uses_node_cls() -> None:
    def a(*, task_input: int) -> int:
        return task_input + 1

    def b(*, task_input: int, previous_agent_results: int) -> int:
        return previous_agent_results * 10 + task_input

    graph = WorkGraph(
        [[a, b]],
        node_cls=partial(WorkGraphNode, result_pass_down_mode="previous_agent_results"),
    )
    assert graph.run(task_input=1) == 21


def test_paths_accept_existing_nodes() -> None:
    b = WorkGraphNode(len, id="B")
    starts = build_nodes_from_paths([["A", b], ["X", b]])
    assert [n.id for n in starts] == ["A", "X"]
    assert [n.id for n in b.previous] == ["A", "X"]


def test_unhashable_path_value_is_refused() -> None:
    with pytest.raises(GraphBuildError, match="not hashable"):
        build_nodes_from_paths([[["a", "list"]]])


def test_cycle_names_the_nodes_on_it_in_order() -> None:
    a, b, c = (WorkGraphNode(len, id=name) for name in "ABC")
    a.add_next(b)
    b.add_next(c)
    c.add_next(b)
    with pytest.raises(GraphBuildError, match="cycle: B -> C -> B"):
        WorkGraph(start_nodes=[a])


def test_cycle_in_paths_is_refused_not_left_without_start_nodes() -> None:
    with pytest.raises(GraphBuildError, match="cycle: A -> B -> A"):
        WorkGraph([["A", "B"], ["B", "A"]])


def test_self_loop_is_a_cycle() -> None:
    a = WorkGraphNode(len, id="A")
    a.add_next(a)
    with pytest.raises(GraphBuildError, match="cycle: A -> A"):
        WorkGraph(start_nodes=[a])


@pytest.mark.parametrize(
    "build",
    [
        lambda: WorkGraph(start_nodes=[]),
        lambda: WorkGraph([]),
        lambda: WorkGraph(),
        lambda: WorkGraph([[]]),
    ],
    ids=["no-start-nodes", "no-paths", "nothing", "empty-path"],
)
def test_empty_graph_is_refused(build: Any) -> None:
    with pytest.raises(GraphBuildError, match="empty"):
        build()


def test_keyword_pass_down_the_next_node_cannot_take_is_refused() -> None:
    def produce() -> int:
        return 1

    def consume(x: int) -> int:
        return x

    a = WorkGraphNode(produce, "results")
    a.add_next(WorkGraphNode(consume))
    with pytest.raises(GraphBuildError) as info:
        WorkGraph(start_nodes=[a])
    message = str(info.value)
    assert "produce#0" in message and "consume#1" in message and "'results'" in message


def test_keyword_pass_down_into_var_keyword_is_accepted() -> None:
    def consume(**kwargs: Any) -> Any:
        return kwargs

    a = WorkGraphNode(lambda: 1, "results")
    a.add_next(WorkGraphNode(consume))
    assert WorkGraph(start_nodes=[a]).run() == {"results": 1}


def test_keyword_check_trusts_callables_without_a_signature() -> None:
    a = WorkGraphNode(lambda: [3, 1], "key")
    a.add_next(WorkGraphNode(max))  # inspect.signature(max) fails: nothing to check
    WorkGraph(start_nodes=[a])


def test_pass_down_mode_of_wrong_type_is_refused() -> None:
    with pytest.raises(GraphBuildError, match="result_pass_down_mode 5"):
        WorkGraphNode(len, result_pass_down_mode=5)  # type: ignore[arg-type]


def test_keyword_mode_must_be_an_identifier() -> None:
    with pytest.raises(GraphBuildError, match="identifier"):
        WorkGraphNode(len, result_pass_down_mode="not a name")


def test_value_that_cannot_be_called_is_refused_before_anything_runs() -> None:
    graph = WorkGraph([["A", "B"]])  # fine to build and draw
    with pytest.raises(GraphBuildError, match="not callable"):
        graph.run()


def test_second_edge_between_the_same_nodes_is_refused() -> None:
    a, b = WorkGraphNode(len, id="A"), WorkGraphNode(len, id="B")
    a.add_next(b)
    with pytest.raises(GraphBuildError, match="already leads to"):
        a.add_next(b)


def test_start_node_with_a_predecessor_is_refused() -> None:
    a, b = WorkGraphNode(len, id="A"), WorkGraphNode(len, id="B")
    a.add_next(b)
    with pytest.raises(GraphBuildError, match="'B' is a start node but 'A' leads to it"):
        WorkGraph(start_nodes=[a, b])


def test_predecessor_no_start_node_reaches_is_refused() -> None:
    a, b, x = (WorkGraphNode(len, id=name) for name in "ABX")
    a.add_next(b)
    x.add_next(b)
    with pytest.raises(GraphBuildError, match="'B' waits for 'X'"):
        WorkGraph(start_nodes=[a])


def test_repeated_ids_get_unique_keys_stable_across_builds() -> None:
    def build() -> WorkGraph:
        a = WorkGraphNode(len, id="$class-Actioner")
        for _ in range(2):
            a.add_next(WorkGraphNode(len, id="$class-Actioner"))
        return WorkGraph(start_nodes=[a])

    first, second = build(), build()
    assert first.keys == ("$class-Actioner#0", "$class-Actioner#1", "$class-Actioner#2")
    assert second.keys == first.keys
    assert first.key_of(first.nodes[2]) == "$class-Actioner#2"


def test_node_label_defaults_to_the_value_name() -> None:
    def fetch() -> None: ...

    assert WorkGraphNode(fetch).id == "fetch"
    assert WorkGraphNode(partial(fetch)).id == "fetch"
    assert WorkGraphNode("A").id == "A"


def test_rewiring_after_build_is_seen_by_the_next_run() -> None:
    a = WorkGraphNode(lambda: 1, FIRST, id="A")
    graph = WorkGraph(start_nodes=[a])
    assert graph.run() == 1
    a.add_next(WorkGraphNode(lambda x: x + 1, id="B"))
    assert graph.run() == 2
    assert graph.keys == ("A#0", "B#1")


def test_mermaid_draws_one_line_per_node_and_edge() -> None:
    graph = WorkGraph([["A", "B", "C"], ["A", "B", "D"], ["X", 'Y "quoted"']])
    assert graph.to_mermaid() == "\n".join(
        [
            "flowchart TD",
            '    n0["A"]',
            '    n1["X"]',
            '    n2["B"]',
            '    n3["Y #quot;quoted#quot;"]',
            '    n4["C"]',
            '    n5["D"]',
            "    n0 --> n2",
            "    n1 --> n3",
            "    n2 --> n4",
            "    n2 --> n5",
        ]
    )


def test_max_concurrency_must_be_positive() -> None:
    with pytest.raises(GraphBuildError, match="max_concurrency"):
        WorkGraph([[len]], max_concurrency=0)


def test_a_ctx_parameter_is_found_as_a_signature_would_find_it() -> None:
    import functools
    import inspect

    from weft.graph.build import _takes_ctx

    def by_signature(value: Any) -> bool:
        found = inspect.signature(value).parameters.get("ctx")
        return found is not None and found.kind in (
            inspect.Parameter.POSITIONAL_OR_KEYWORD,
            inspect.Parameter.KEYWORD_ONLY,
        )

    def plain(a: int, ctx: Any) -> None: ...
    def keyword_only(a: int, *, ctx: Any) -> None: ...
    def positional_only(ctx: Any, /, a: int) -> None: ...
    def first(ctx: Any, a: int) -> None: ...
    def none(a: int, **kwargs: Any) -> None: ...

    class Holder:
        def method(self, ctx: Any) -> None: ...
        def other(self, a: int) -> None: ...

    @functools.wraps(plain)
    def wrapped(*args: Any, **kwargs: Any) -> None: ...

    values = [
        plain,
        keyword_only,
        positional_only,
        first,
        none,
        functools.partial(first, 1),  # ctx taken by the partial's argument
        functools.partial(plain, 1),
        functools.partial(plain, ctx=2),
        Holder().method,
        Holder().other,
        functools.partial(Holder().method),
        functools.partial(functools.partial(plain), 1),
        wrapped,
    ]
    for value in values:
        assert _takes_ctx(value) == by_signature(value), value
