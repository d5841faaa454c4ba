"""Wide graphs: a node fanning out to thousands of nodes and back is built and run in time
linear in its width, and gives every branch's result in edge order."""

from __future__ import annotations

import contextvars
import gc
import weakref
from functools import partial
from typing import Any

from weft.graph import ResultPassDownMode, RunContext, WorkGraph, WorkGraphNode
from weft.store import Store, reducers

WIDE = 20_000


def value(i: int) -> int:
    return i


def gather(*results: int) -> list[int]:
    return list(results)


def test_a_fan_out_to_20000_nodes_and_back_gives_every_result_in_edge_order() -> None:
    start = WorkGraphNode(lambda: None, id="start")
    join = WorkGraphNode(gather, id="join")
    for i in range(WIDE):
        start.add_next(WorkGraphNode(partial(value, i), ResultPassDownMode.ResultAsFirstArg))
        start.next[-1].add_next(join)
    assert WorkGraph(start_nodes=[start]).run() == list(range(WIDE))


def test_20000_state_branches_appending_to_one_field_reach_the_join_in_branch_order() -> None:
    def branch(view: Any, i: int) -> dict[str, int]:
        return {"items": i}

    def join(view: Any) -> dict[str, int]:
        return {"total": sum(view["items"]), "first": view["items"][0], "last": view["items"][-1]}

    start = WorkGraphNode(lambda view: None, state=True)
    last = WorkGraphNode(join, state=True)
    for i in range(WIDE):
        start.add_next(WorkGraphNode(partial(branch, i=i), state=True)).add_next(last)
    store = Store(reducers={"state:items": reducers.append})
    WorkGraph(start_nodes=[start]).run(store=store)
    assert store.value("state", "items") == list(range(WIDE))
    assert (store.value("state", "first"), store.value("state", "last")) == (0, WIDE - 1)
    assert store.value("state", "total") == WIDE * (WIDE - 1) // 2


def test_a_join_that_is_not_last_sees_each_of_5000_branches_own_field_and_no_sibling() -> None:
    """Branches writing fields of their own (each replaced, no reducer), joined by a node
    that a sibling branch does not lead to: the join's view is built from the branches'
    changes, in one merge."""
    n = 5000

    def branch(view: Any, i: int) -> dict[str, int]:
        return {f"b{i}": i}

    def join(view: Any) -> dict[str, Any]:
        return {"seen": sum(view[f"b{i}"] for i in range(n)), "saw_side": "side" in view}

    start = WorkGraphNode(lambda view: None, state=True)
    last = WorkGraphNode(join, state=True)
    for i in range(n):
        start.add_next(WorkGraphNode(partial(branch, i=i), state=True)).add_next(last)
    start.add_next(WorkGraphNode(lambda view: {"side": 1}, state=True, id="side"))
    store = Store()
    WorkGraph(start_nodes=[start]).run(store=store)
    assert store.value("state", "seen") == n * (n - 1) // 2
    assert store.value("state", "saw_side") is False  # a sibling's write: not in its view
    assert store.has("state", "side")


def test_a_fan_out_and_back_built_from_20000_paths_runs() -> None:
    def first() -> int:
        return 1

    def branch(i: int, given: int) -> int:
        return i * given

    def last(*results: int) -> int:
        return sum(results)

    graph = WorkGraph(
        [[first, partial(branch, i), last] for i in range(WIDE)],
        node_cls=partial(WorkGraphNode, result_pass_down_mode=ResultPassDownMode.ResultAsFirstArg),
    )
    assert len(graph.nodes) == WIDE + 2
    assert graph.run() == WIDE * (WIDE - 1) // 2


class CountingNode(WorkGraphNode):
    """A node that counts how often it is compared: wiring checks for an existing edge by
    comparing nodes, and that must not cost a comparison per sibling."""

    compared = 0
    __hash__ = WorkGraphNode.__hash__

    def __eq__(self, other: object) -> bool:
        CountingNode.compared += 1
        return self is other


def test_wiring_a_fan_out_and_fan_in_does_not_compare_each_node_with_its_siblings() -> None:
    n = 2000
    CountingNode.compared = 0
    start, join = CountingNode(value, id="start"), CountingNode(gather, id="join")
    for i in range(n):
        start.add_next(CountingNode(partial(value, i))).add_next(join)
    assert CountingNode.compared <= n  # it was n * (n - 1): each new edge against every sibling
    assert len(start.next) == len(join.previous) == n


def test_a_finished_node_s_fork_is_not_kept_by_the_run() -> None:
    """A run over many nodes that work on forks (nodes taking ``ctx``) holds a fork only
    while a node or a later view needs it, not one per node to the end of the run."""
    refs: list[weakref.ref[Store]] = []

    def step(ctx: RunContext[None]) -> None:
        refs.append(weakref.ref(ctx.store))
        ctx.store.write("state", f"k{len(refs)}", len(refs))

    def last(ctx: RunContext[None]) -> list[bool]:
        gc.collect()
        return [ref() is None for ref in refs]

    first = node = WorkGraphNode(step)
    for _ in range(4):
        node = node.add_next(WorkGraphNode(step))
    node.add_next(WorkGraphNode(last))
    store = Store()
    assert WorkGraph(start_nodes=[first]).run(store=store) == [True] * 5
    assert store.value("state", "k5") == 5


tag: contextvars.ContextVar[str] = contextvars.ContextVar("tag", default="-")


def test_a_queued_fan_out_holds_no_context_or_arguments_per_node() -> None:
    """The sync nodes of a fan-out wait in one queue for a thread: each gets its copy of
    the context and its arguments as it starts, not as it is queued."""
    counts: list[int] = []

    def branch(i: int) -> int:
        if not counts:
            counts.append(sum(type(o) is contextvars.Context for o in gc.get_objects()))
        return i

    start = WorkGraphNode(lambda: None)
    join = WorkGraphNode(gather)
    for i in range(2000):
        start.add_next(WorkGraphNode(partial(branch, i), ResultPassDownMode.ResultAsFirstArg))
        start.next[-1].add_next(join)
    assert WorkGraph(start_nodes=[start]).run() == list(range(2000))
    assert counts[0] < 100  # it was one per queued node


def test_each_sync_node_on_a_thread_runs_in_a_copy_of_the_context_as_it_was_dispatched() -> None:
    def first() -> None:
        tag.set("set by the first node")  # runs on the calling thread, before the fan-out

    def branch(i: int) -> str:
        seen = tag.get()
        tag.set(f"set by {i}")  # in its own copy: no sibling sees it
        return seen

    start = WorkGraphNode(first)
    join = WorkGraphNode(gather)
    for i in range(50):
        start.add_next(WorkGraphNode(partial(branch, i), ResultPassDownMode.ResultAsFirstArg))
        start.next[-1].add_next(join)
    graph = WorkGraph(start_nodes=[start], max_concurrency=1)  # one thread, one at a time
    # (in a context of its own: a node run on the calling thread sets the caller's vars)
    assert contextvars.copy_context().run(graph.run) == ["set by the first node"] * 50
    assert tag.get() == "-"


def test_20000_state_branches_each_writing_a_field_of_its_own_reach_the_join() -> None:
    """Each branch's delta replaces a field no other writes: committed at the join in one
    merge, each checked against the writes before it by key."""

    def branch(view: Any, i: int) -> dict[str, int]:
        return {f"b{i}": i}

    def join(view: Any) -> dict[str, int]:
        return {"total": sum(view[f"b{i}"] for i in range(WIDE))}

    start = WorkGraphNode(lambda view: None, state=True)
    last = WorkGraphNode(join, state=True)
    for i in range(WIDE):
        start.add_next(WorkGraphNode(partial(branch, i=i), state=True)).add_next(last)
    store = Store()
    WorkGraph(start_nodes=[start]).run(store=store)
    assert store.value("state", "total") == WIDE * (WIDE - 1) // 2
    assert store.value("state", f"b{WIDE - 1}") == WIDE - 1
