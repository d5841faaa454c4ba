"""WorkGraph against the plain-Python floor and against LangGraph, side by side in one run.

W1: a chain of 200 nodes, each adds one to a number (the calls in a loop are the floor).
W2: a start node fans out to N branches (100 and 1,000), each appends one item to a list
    field with an append reducer, and one join node reads the list: weft with state
    nodes and the store's ``append`` reducer, LangGraph with an
    ``Annotated[list, operator.add]`` field, the floor with ``list.append`` in a loop.

Each cell is the median of several samples (``time.perf_counter_ns``) after a warm-up,
each sample starting after ``gc.collect()`` with the warm-up's objects frozen out of later
collections (the same for every column);
the columns of a row are sampled in turn, round after round, so that a machine whose speed
drifts during the run (a shared VM) slows them alike and the ratios stay meaningful. A
sample of a quick cell averages a few back-to-back runs, as one LangGraph run of the
same workload is long enough to be warm inside.
Overhead is (time - floor) per node (W1) or per branch (W2). LangGraph is optional: the
``bench`` extra installs it (``pip install weft[bench]``); without it that column is
skipped with a note.

Run: ``python bench/bench_graph.py [--quick]``
"""

from __future__ import annotations

import gc
import itertools
import operator
import os
import platform
import statistics
import sys
import time
from collections.abc import Callable
from functools import partial
from typing import Annotated, Any, TypedDict

from weft.graph import ResultPassDownMode, WorkGraph, WorkGraphNode
from weft.store import Store, reducers

CHAIN = 200
FANS = (100, 1000)


def sample_us(fn: Callable[[], Any], inner: int) -> float:
    """Microseconds per call, averaged over ``inner`` back-to-back calls."""
    start = time.perf_counter_ns()
    for _ in range(inner):
        fn()
    return (time.perf_counter_ns() - start) / inner / 1000


def interleaved(cells: dict[str, tuple[Callable[[], Any], int]], rounds: int) -> dict[str, float]:
    """Median of ``rounds`` samples of each cell, taken in turn (one of each per round),
    so that a machine whose speed drifts during the run slows every column alike."""
    for fn, _ in cells.values():
        fn()  # warm-up
    # The same garbage-collector conditions for every column: what the warm-up built
    # (the graphs of both frameworks) is frozen out of later full collections, and each
    # sample starts after a collection, so a full pass over the other framework's heap
    # does not land inside one sample and not another.
    gc.collect()
    gc.freeze()
    samples: dict[str, list[float]] = {name: [] for name in cells}
    for _ in range(rounds):
        for name, (fn, inner) in cells.items():
            gc.collect()
            samples[name].append(sample_us(fn, inner))
    gc.unfreeze()
    return {name: statistics.median(values) for name, values in samples.items()}


# ------------------------------------------------------------------------ W1: chain


def add_one(x: int) -> int:
    return x + 1


def w1_floor() -> Callable[[], Any]:
    fns = [add_one] * CHAIN

    def run() -> int:
        x = 0
        for fn in fns:
            x = fn(x)
        assert x == CHAIN
        return x

    return run


def w1_weft() -> Callable[[], Any]:
    nodes = [WorkGraphNode(add_one, ResultPassDownMode.ResultAsFirstArg) for _ in range(CHAIN)]
    for a, b in itertools.pairwise(nodes):
        a.add_next(b)
    graph = WorkGraph(start_nodes=[nodes[0]])

    def run() -> int:
        x: int = graph.run(0)
        assert x == CHAIN
        return x

    return run


def w1_langgraph() -> Callable[[], Any]:
    from langgraph.graph import END, START, StateGraph

    class State(TypedDict):
        x: int

    def node(state: State) -> dict[str, int]:
        return {"x": state["x"] + 1}

    builder = StateGraph(State)
    previous = START
    for i in range(CHAIN):
        builder.add_node(f"n{i}", node)
        builder.add_edge(previous, f"n{i}")
        previous = f"n{i}"
    builder.add_edge(previous, END)
    app = builder.compile()
    config = {"recursion_limit": CHAIN + 10}

    def run() -> int:
        x: int = app.invoke({"x": 0}, config)["x"]
        assert x == CHAIN
        return x

    return run


# ---------------------------------------------------------------------- W2: fan-out


def item(i: int) -> int:
    return i


def w2_floor(n: int) -> Callable[[], Any]:
    fns = [partial(item, i) for i in range(n)]

    def run() -> int:
        items: list[int] = []
        for fn in fns:
            items.append(fn())
        total = len(items)
        assert total == n
        return total

    return run


def w2_weft(n: int, watched: bool = False) -> Callable[[], Any]:
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

    def run() -> int:
        store = Store(reducers={"state:items": reducers.append})
        if watched:  # a live observer: every node's started/finished notes reach it
            seen: list[Any] = []
            store.subscribe(seen.append)
        result = graph.run(store=store)
        assert result["total"] == n and store.value("state", "total") == n
        return n

    return run


def w2_langgraph(n: int, watched: bool = False) -> Callable[[], Any]:
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
        name = f"b{i}"
        builder.add_node(name, partial(branch, i=i))
        builder.add_edge("start", name)
        names.append(name)
    builder.add_edge(names, "join")
    builder.add_edge("join", END)
    app = builder.compile()

    def run() -> int:
        if watched:  # every task's start and result, as weft's observer sees its nodes
            seen = list(app.stream({"items": []}, stream_mode="tasks"))
            assert len(seen) == 2 * (n + 2)
            total: int = next(
                e["result"]["total"] for e in seen if e.get("name") == "join" and "result" in e
            )
        else:
            total = app.invoke({"items": []})["total"]
        assert total == n
        return total

    return run


# --------------------------------------------------------------------------- table


def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as info:
            for line in info:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def main() -> None:
    quick = "--quick" in sys.argv
    try:
        from importlib.metadata import version

        import langgraph  # noqa: F401

        lg_version: str | None = version("langgraph")
    except ImportError:
        lg_version = None
    print(
        f"machine: {cpu_model()}, {os.cpu_count()} CPUs, "
        f"Python {platform.python_version()}, {platform.system()} {platform.release()}"
    )
    print(
        f"LangGraph: {lg_version}"
        if lg_version
        else "LangGraph: not installed (pip install weft[bench]); its columns are skipped"
    )
    rows = []
    lg_columns = lg_version is not None
    cells: dict[str, tuple[Callable[[], Any], int]] = {
        "floor": (w1_floor(), 100),
        "weft": (w1_weft(), 20),
    }
    if lg_columns:
        cells["lg"] = (w1_langgraph(), 1)
    got = interleaved(cells, 5 if quick else 15)
    rows.append(("W1 chain 200", CHAIN, got["floor"], got["weft"], got.get("lg")))
    for n in FANS:
        cells = {
            "floor": (w2_floor(n), 100 if n < 1000 else 20),
            "weft": (w2_weft(n), 5 if n < 1000 else 3),
            "watched": (w2_weft(n, watched=True), 5 if n < 1000 else 3),
        }
        if lg_columns:
            cells["lg"] = (w2_langgraph(n), 1)
            cells["lg_watched"] = (w2_langgraph(n, watched=True), 1)
        got = interleaved(cells, 5 if quick else (11 if n < 1000 else 7))
        rows.append((f"W2 fan-out {n}", n, got["floor"], got["weft"], got.get("lg")))
        rows.append(("  + observer", n, got["floor"], got["watched"], got.get("lg_watched")))
    header = (
        f"{'workload':<16} {'floor us':>10} {'weft us':>10} {'LangGraph us':>13} "
        f"{'weft ovh/unit':>14} {'LG ovh/unit':>12} {'weft/floor':>11} {'weft ovh/LG ovh':>16}"
    )
    print()
    print(header)
    print("-" * len(header))
    for name, size, floor, weft, lg in rows:
        ovh = (weft - floor) / size
        lg_ovh = (lg - floor) / size if lg is not None else None
        print(
            f"{name:<16} {floor:>10.1f} {weft:>10.1f} "
            f"{(f'{lg:.1f}' if lg is not None else 'n/a'):>13} "
            f"{ovh:>11.2f} us {(f'{lg_ovh:.1f} us' if lg_ovh is not None else 'n/a'):>12} "
            f"{weft / floor:>10.1f}x "
            f"{(f'1/{lg_ovh / ovh:.0f}' if lg_ovh is not None and ovh > 0 else 'n/a'):>16}"
        )
    print()
    print("ovh/unit: (time - floor) per node (W1) or per branch (W2). W2 runs on a store with")
    print("an append reducer and nobody subscribed (LangGraph's invoke emits no events either);")
    print("'+ observer': the same run with a subscriber, so every node's started/finished")
    print("notes are built and delivered, against LangGraph's stream(stream_mode='tasks'),")
    print("which yields every task's start and result.")
    print(
        "Targets: W1 weft/floor <= 15x and overhead <= 1/50 of LangGraph's; "
        "W2 overhead <= 1/20 of LangGraph's (the observer rows are for information)."
    )
    for name, size, floor, weft, lg in rows:
        ovh = (weft - floor) / size
        checks = []
        if name.startswith("W1"):
            checks.append(("weft/floor <= 15x", weft / floor <= 15))
            if lg is not None:
                checks.append(("overhead <= 1/50 LangGraph", ovh * 50 <= (lg - floor) / size))
        elif lg is not None and name.startswith("W2"):  # the observer rows are no target
            checks.append(("overhead <= 1/20 LangGraph", ovh * 20 <= (lg - floor) / size))
        for what, ok in checks:
            print(f"  {name:<16} {what:<28} {'met' if ok else 'NOT met'}")


if __name__ == "__main__":
    main()
