"""Graph engines doing the same work: weft's WorkGraph, LangGraph, Burr and pydantic-graph
against the plain-Python floor, side by side in one run.

W1  state chain (the headline): 200 nodes, each reads ``x`` from the state and returns
    ``{"x": x + 1}``, which goes into the state through the engine's update path. weft
    runs state nodes on a ``Store`` (the delta goes through the field's reducer and is an
    event in the store's log); LangGraph a ``StateGraph`` (``invoke``); Burr an
    application of 200 actions reading and writing ``x`` (no tracker, no persister);
    pydantic-graph 200 ``BaseNode`` classes that update a dataclass state. The floor is a
    loop over 200 distinct functions whose dict results are merged into a dict.
W1b pass-down chain: the same 200 nodes passing their return value to the next node, with
    no state at all (weft only: the peers have no such mode), against a loop of calls.
W2  fan-out: a start node, N branches (100 and 1,000) that each append one item to a list
    field with an append reducer, and one join that reads the list (weft state nodes
    against a LangGraph ``Annotated[list, operator.add]`` field); the observed rows add a
    live observer (a store subscriber against ``stream_mode="tasks"``).

Every cell is the median of samples taken in turn with the other columns of its table
(``harness.interleaved``). Overhead is (time - floor) per node or per branch.

Run: ``python bench/bench_graph.py [--quick]`` (needs ``pip install -e '.[bench]'``).
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import itertools
import operator
import sys
from collections.abc import Callable, Mapping
from functools import partial
from typing import Annotated, Any, TypedDict

from harness import Cell, block, fraction, interleaved, machine, timed, us, verdict

from weft.graph import ResultPassDownMode, WorkGraph, WorkGraphNode
from weft.store import Store, reducers

CHAIN = 200
FANS = (100, 1000)


def state_step(i: int) -> Callable[[Mapping[str, Any]], dict[str, int]]:
    """Node ``i`` of the state chain: a new function object for every node."""

    def step(state: Mapping[str, Any]) -> dict[str, int]:
        return {"x": state["x"] + 1}

    step.__name__ = step.__qualname__ = f"n{i}"
    return step


def pass_step(i: int) -> Callable[[int], int]:
    """Node ``i`` of the pass-down chain: a new function object for every node."""

    def step(x: int) -> int:
        return x + 1

    step.__name__ = step.__qualname__ = f"n{i}"
    return step


# ------------------------------------------------------------------ W1: state chain


def w1_floor() -> Callable[[], Any]:
    steps = [state_step(i) for i in range(CHAIN)]

    def run() -> None:
        state = {"x": 0}
        for step in steps:
            state.update(step(state))
        assert state["x"] == CHAIN

    return run


def w1_weft() -> Callable[[], Any]:
    nodes = [WorkGraphNode(state_step(i), state=True, id=f"n{i}") for i in range(CHAIN)]
    for a, b in itertools.pairwise(nodes):
        a.add_next(b)
    graph = WorkGraph(start_nodes=[nodes[0]])

    def run() -> None:
        store = Store()
        store.write("state", "x", 0)
        graph.run(store=store)
        assert store.value("state", "x") == CHAIN

    return run


class ChainState(TypedDict):
    x: int


def langgraph_chain() -> Any:
    """The chain as a LangGraph ``StateGraph`` builder (compile it with or without a saver)."""
    from langgraph.graph import END, START, StateGraph

    builder = StateGraph(ChainState)
    previous = START
    for i in range(CHAIN):
        builder.add_node(f"n{i}", state_step(i))
        builder.add_edge(previous, f"n{i}")
        previous = f"n{i}"
    builder.add_edge(previous, END)
    return builder


def w1_langgraph() -> Callable[[], Any]:
    app = langgraph_chain().compile()
    config = {"recursion_limit": CHAIN + 10}

    def run() -> None:
        assert app.invoke({"x": 0}, config)["x"] == CHAIN

    return run


def burr_chain() -> Any:
    """The chain as a Burr graph: 200 actions, each reading and writing ``x``."""
    from burr.core import State, action
    from burr.core.graph import GraphBuilder

    def act(i: int) -> Any:
        step = state_step(i)

        @action(reads=["x"], writes=["x"])
        def node(state: State) -> State:
            return state.update(**step(state))

        return node

    return (
        GraphBuilder()
        .with_actions(**{f"n{i}": act(i) for i in range(CHAIN)})
        .with_transitions(*[(f"n{i}", f"n{i + 1}") for i in range(CHAIN - 1)])
        .build()
    )


def w1_burr() -> Callable[[], Any]:
    from burr.core import ApplicationBuilder, State

    # One application, reset to x=0 before each run: the per-run cost is the 200 steps,
    # never building the application again (which re-validates the graph, ~2-4 ms).
    app = ApplicationBuilder().with_graph(burr_chain()).with_state(x=0).with_entrypoint("n0")
    app = app.build()
    last = f"n{CHAIN - 1}"

    def run() -> None:
        app.update_state(State({"x": 0}))
        _, _, state = app.run(halt_after=[last])
        assert state["x"] == CHAIN

    return run


@dataclasses.dataclass
class PydanticState:
    x: int


def w1_pydantic_graph() -> Callable[[], Any]:
    from pydantic_graph import BaseNode, End, GraphBuilder, GraphRunContext

    # 200 node classes, built last to first: each ``run`` names the next class in its
    # return annotation, from which pydantic-graph infers the edges.
    classes: list[type[Any]] = []
    following: type[Any] | None = None
    for i in reversed(range(CHAIN)):
        step = state_step(i)

        def make(step: Callable[..., dict[str, int]], following: type[Any] | None) -> Any:
            async def run(self: Any, ctx: Any) -> Any:
                ctx.state.x = step({"x": ctx.state.x})["x"]
                return End(ctx.state.x) if following is None else following()

            run.__annotations__ = {
                "ctx": GraphRunContext[PydanticState, None],
                "return": End[int] if following is None else following,
            }
            return run

        node = dataclasses.dataclass(type(f"N{i}", (BaseNode,), {"run": make(step, following)}))
        classes.append(node)
        following = node
    classes.reverse()
    builder = GraphBuilder(state_type=PydanticState, output_type=int, auto_instrument=False)
    builder.add(builder.edge_from(builder.start_node).to(classes[0]))
    for node in classes:
        builder.add(builder.node(node))
    graph = builder.build()
    loop = asyncio.new_event_loop()  # pydantic-graph is async: one loop for every run
    first = classes[0]

    def run() -> None:
        state = PydanticState(x=0)
        assert loop.run_until_complete(graph.run(state=state, inputs=first())) == CHAIN
        assert state.x == CHAIN

    return run


# --------------------------------------------------------------- W1b: pass-down chain


def w1b_floor() -> Callable[[], Any]:
    steps = [pass_step(i) for i in range(CHAIN)]

    def run() -> None:
        x = 0
        for step in steps:
            x = step(x)
        assert x == CHAIN

    return run


def w1b_weft() -> Callable[[], Any]:
    nodes = [
        WorkGraphNode(pass_step(i), ResultPassDownMode.ResultAsFirstArg, id=f"n{i}")
        for i in range(CHAIN)
    ]
    for a, b in itertools.pairwise(nodes):
        a.add_next(b)
    graph = WorkGraph(start_nodes=[nodes[0]])

    def run() -> None:
        assert graph.run(0) == CHAIN

    return run


# ------------------------------------------------------------------------ W2: fan-out


def item(i: int) -> int:
    return i


def w2_floor(n: int) -> Callable[[], Any]:
    fns = [partial(item, i) for i in range(n)]

    def run() -> None:
        items: list[int] = []
        for fn in fns:
            items.append(fn())
        assert len(items) == n

    return run


def w2_weft(n: int, observed: bool = False) -> Callable[[], Any]:
    def start(view: Any) -> None:
        return None

    def branch(view: Any, i: int) -> dict[str, int]:
        return {"items": i}

    def join(view: Any) -> dict[str, int]:
        return {"total": len(view["items"])}

    first = WorkGraphNode(start, state=True)
    last = WorkGraphNode(join, state=True)
    for i in range(n):
        first.add_next(WorkGraphNode(partial(branch, i=i), state=True)).add_next(last)
    graph = WorkGraph(start_nodes=[first])

    def run() -> None:
        store = Store(reducers={"state:items": reducers.append})
        if observed:  # a live observer: every node's started/finished notes reach it
            seen: list[Any] = []
            store.subscribe(seen.append)
        graph.run(store=store)
        assert store.value("state", "total") == n

    return run


def w2_langgraph(n: int, observed: bool = False) -> Callable[[], Any]:
    from langgraph.graph import END, START, StateGraph

    class State(TypedDict, total=False):
        items: Annotated[list[int], operator.add]
        total: int

    def start(state: State) -> dict[str, Any]:
        return {}

    def branch(state: State, i: int) -> dict[str, list[int]]:
        return {"items": [i]}

    def join(state: State) -> dict[str, int]:
        return {"total": len(state["items"])}

    builder = StateGraph(State)
    builder.add_node("start", start)
    builder.add_node("join", join)
    builder.add_edge(START, "start")
    names = []
    for i in range(n):
        builder.add_node(f"b{i}", partial(branch, i=i))
        builder.add_edge("start", f"b{i}")
        names.append(f"b{i}")
    builder.add_edge(names, "join")
    builder.add_edge("join", END)
    app = builder.compile()

    def run() -> None:
        if observed:  # every task's start and result, as weft's observer sees its nodes
            seen = list(app.stream({"items": []}, stream_mode="tasks"))
            assert len(seen) == 2 * (n + 2)
            total = next(
                e["result"]["total"] for e in seen if e["name"] == "join" and "result" in e
            )
        else:
            total = app.invoke({"items": []})["total"]
        assert total == n

    return run


# -------------------------------------------------------------------------- tables


W1_DOES = {
    "floor": "a loop over 200 distinct functions; each returns `{'x': x + 1}`, merged with `dict.update`",
    "weft": "state node: reads `x` from its view, returns the delta; the delta goes through the field's reducer into the `Store` and is one event in its log",
    "LangGraph": "`StateGraph` node, `invoke`: the update goes through the field's channel (last value)",
    "Burr": "action with `reads=['x'], writes=['x']`, returns `state.update(...)`; one application reset to x=0 per run (no tracker, no persister)",
    "pydantic-graph": "`BaseNode` class: sets `ctx.state.x` on a dataclass state, returns the next node; `Graph.run` on one event loop, `auto_instrument=False`",
}


def w1_table(got: dict[str, float], lb: dict[str, float]) -> tuple[str, list[str]]:
    floor = got["floor"]
    weft_ovh = (got["weft"] - floor) / CHAIN
    lines = [
        "| W1: 200-node state chain | what a node does | run | per node | overhead per node | / floor | weft's overhead vs this one's |",
        "|---|---|---:|---:|---:|---:|---:|",
    ]
    for name in ("floor", "weft", "LangGraph", "Burr", "pydantic-graph"):
        total = got[name]
        ovh = (total - floor) / CHAIN
        label = "plain Python (floor)" if name == "floor" else name
        cells = [
            label,
            W1_DOES[name],
            us(total),
            us(total / CHAIN),
            "" if name == "floor" else us(ovh),
            "" if name == "floor" else f"{total / floor:,.1f}x",
            fraction(weft_ovh, ovh) if name not in ("floor", "weft") else "",
        ]
        lines.append("| " + " | ".join(cells) + " |")
    lines.append("")
    lines.append(
        "| W1b: 200-node pass-down chain | what a node does | run | per node | overhead per node | / floor |"
    )
    lines.append("|---|---|---:|---:|---:|---:|")
    lines.append(
        f"| plain Python (floor) | `x = f(x)` over 200 distinct functions | {us(lb['floor'])} "
        f"| {us(lb['floor'] / CHAIN)} | | |"
    )
    lines.append(
        f"| weft | `ResultAsFirstArg`: the return value is the next node's argument; no store, "
        f"no delta, no event | {us(lb['weft'])} | {us(lb['weft'] / CHAIN)} "
        f"| {us((lb['weft'] - lb['floor']) / CHAIN)} | {lb['weft'] / lb['floor']:,.1f}x |"
    )
    floor_node = floor / CHAIN
    targets = []
    for what, ok, got_text in (
        (
            "weft's overhead per node within 10x the floor's time per node",
            weft_ovh <= 10 * floor_node,
            f"{us(weft_ovh)} against {us(10 * floor_node)}",
        ),
        *(
            (
                f"weft's overhead at most 1/{limit} of {peer}'s",
                weft_ovh * limit <= (got[peer] - floor) / CHAIN,
                fraction(weft_ovh, (got[peer] - floor) / CHAIN),
            )
            for peer, limit in (("LangGraph", 100), ("Burr", 20))
        ),
    ):
        targets.append(f"- {what}: {got_text}, {verdict(ok)}")
    return "\n".join(lines), targets


def w2_table(rows: list[tuple[str, int, dict[str, float]]]) -> tuple[str, list[str]]:
    lines = [
        "| W2: fan-out and join | floor | weft | LangGraph | weft overhead per branch | LangGraph overhead per branch | weft's overhead vs LangGraph's |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    targets = []
    for label, n, got in rows:
        ovh = (got["weft"] - got["floor"]) / n
        lg_ovh = (got["LangGraph"] - got["floor"]) / n
        lines.append(
            f"| {label} | {us(got['floor'])} | {us(got['weft'])} | {us(got['LangGraph'])} "
            f"| {us(ovh)} | {us(lg_ovh)} | {fraction(ovh, lg_ovh)} |"
        )
        if "observed" not in label:
            targets.append(
                f"- {n:,} branches, weft's overhead per branch at most 1/50 of LangGraph's: "
                f"{fraction(ovh, lg_ovh)}, {verdict(ovh * 50 <= lg_ovh)}"
            )
    return "\n".join(lines), targets


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer rounds")
    args = parser.parse_args()
    try:
        import burr  # noqa: F401
        import langgraph  # noqa: F401
        import pydantic_graph  # noqa: F401
    except ImportError as exc:
        sys.exit(f"needs the bench extra: pip install -e '.[bench]' ({exc})")
    print(f"machine: {machine()}\n")

    cells: dict[str, Cell] = {
        "floor": timed(w1_floor(), 200),
        "weft": timed(w1_weft(), 10),
        "LangGraph": timed(w1_langgraph()),
        "Burr": timed(w1_burr(), 2),
        "pydantic-graph": timed(w1_pydantic_graph(), 2),
    }
    w1 = interleaved(cells, 5 if args.quick else 15)
    w1b = interleaved(
        {"floor": timed(w1b_floor(), 500), "weft": timed(w1b_weft(), 50)},
        5 if args.quick else 15,
    )
    table, targets = w1_table(w1, w1b)
    block(
        "w1",
        table
        + "\n\nrun: median time of one run of the whole chain; overhead: (run - floor) / 200. "
        "Targets:\n" + "\n".join(targets),
    )

    rows: list[tuple[str, int, dict[str, float]]] = []
    for n in FANS:
        small = n < 1000
        got = interleaved(
            {
                "floor": timed(w2_floor(n), 100 if small else 20),
                "weft": timed(w2_weft(n), 5 if small else 2),
                "weft observed": timed(w2_weft(n, observed=True), 5 if small else 2),
                "LangGraph": timed(w2_langgraph(n)),
                "LangGraph observed": timed(w2_langgraph(n, observed=True)),
            },
            5 if args.quick else (11 if small else 7),
        )
        rows.append((f"{n:,} branches, append reducer", n, got))
        observed = {
            "floor": got["floor"],
            "weft": got["weft observed"],
            "LangGraph": got["LangGraph observed"],
        }
        rows.append((f"{n:,} branches, observed", n, observed))
    table, targets = w2_table(rows)
    block(
        "w2",
        table + "\n\nEach branch appends one item to `items` and the join reads the list: "
        "weft with state nodes and the store's `append` reducer (sync branches drained by "
        "the calling thread as it waits for the join, which, the branches having been "
        "quick in the runs before, wakes no worker thread for them, observed or not; "
        "their deltas committed to the store in one batch, one event each), LangGraph with "
        "an `Annotated[list, operator.add]` field; the floor appends to a list in a loop. "
        "Nobody is subscribed in the plain rows (LangGraph's `invoke` emits no events "
        "either); the observed rows add a store subscriber, so every node's started and "
        "finished notes are built and delivered, against LangGraph's "
        '`stream(stream_mode="tasks")`, which yields every task\'s start and result; they '
        "are no target. Targets:\n" + "\n".join(targets),
    )


if __name__ == "__main__":
    main()
