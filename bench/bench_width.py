"""Width and length: whether the cost per node stays flat from 1,000 to 100,000 nodes.

G1 fan-out, results: one node fanning out to N nodes and back; each branch returns its
   number (``ResultAsFirstArg``) and the join gets all N results as its arguments, in
   edge order. Floor: N distinct functions called in a loop, their results passed to one
   function.
G2 fan-out, state: the same shape with state nodes; each branch appends one item to a
   field with the ``append`` reducer, and the join reads the list. Floor: N distinct
   functions appending to a list in a loop.
G3 fan-out and back, own fields: the same with each branch writing a field of its own
   (no reducer: each is replaced), and the join summing them. Floor: N distinct functions
   writing into a dict in a loop.
P1 plan chain: a plan of N tool calls, each reading the previous call's result through a
   reference and writing its own through ``_outputPath``. Floor: the same function
   called N times in a loop.
P3 plan fan-out: one global call, then one call per instance (``_instance: "*"``) over N
   instances, each reading its own input and the global value. Floor: a loop over the
   instances' inputs.

Each (workload, width) runs in a process of its own, one after another: ``build`` is
wiring the nodes and ``WorkGraph(...)`` (for a plan, ``Plan(calls)``: the calls parsed), ``run`` is
``graph.run(...)`` (for a plan, ``plan.run(...)``: validation, the graph built from the
data flow, and the run). Times are medians over the samples, with the garbage collector
on as in a real program (``gc`` is the share of the run spent in its collections).
``peak`` is the growth of the process's peak resident memory (``ru_maxrss``) over what
it was after a warm-up: the graph or plan and everything its first run held at once,
divided by N for ``per node``. ``vs 1,000`` divides the run's time per node by that at
1,000 wide: flat (near 1.0x) is linear; ``without gc`` leaves out the collector's time,
whose full collections walk every live object (the graph's included) and so take a
growing share of a run as the heap grows.

Run: ``python bench/bench_width.py [--quick]`` (``--quick``: 1,000 and 10,000 wide only).
"""

from __future__ import annotations

import argparse
import gc
import json
import resource
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from functools import partial
from typing import Any

from harness import block, machine, us

WIDTHS = (1_000, 10_000, 100_000)
WORKLOADS = {
    "G1": "G1 fan-out and back, results",
    "G2": "G2 fan-out and back, state",
    "G3": "G3 fan-out and back, own fields",
    "P1": "P1 plan, chain of calls",
    "P3": "P3 plan, fan-out over instances",
}


# ------------------------------------------------------------------------- workloads


def number(i: int) -> int:
    return i


def gather(*results: int) -> int:
    return len(results)


def inc(x: int) -> int:
    return x + 1


def scale(n: int, factor: int) -> int:
    return n * factor


def g1(n: int) -> tuple[Callable[[], Any], Callable[[Any], None]]:
    from weft.graph import ResultPassDownMode, WorkGraph, WorkGraphNode

    def build() -> Any:
        start = WorkGraphNode(lambda: None, id="start")
        join = WorkGraphNode(gather, id="join")
        for i in range(n):
            branch = WorkGraphNode(partial(number, i), ResultPassDownMode.ResultAsFirstArg)
            start.add_next(branch).add_next(join)
        return WorkGraph(start_nodes=[start])

    def run(graph: Any) -> None:
        assert graph.run() == n

    return build, run


def g2(n: int) -> tuple[Callable[[], Any], Callable[[Any], None]]:
    from weft.graph import WorkGraph, WorkGraphNode
    from weft.store import Store, reducers

    def branch(view: Any, i: int) -> dict[str, int]:
        return {"items": i}

    def join(view: Any) -> dict[str, int]:
        return {"total": len(view["items"])}

    def build() -> Any:
        start = WorkGraphNode(lambda view: None, state=True)
        last = WorkGraphNode(join, state=True)
        for i in range(n):
            start.add_next(WorkGraphNode(partial(branch, i=i), state=True)).add_next(last)
        return WorkGraph(start_nodes=[start])

    def run(graph: Any) -> None:
        store = Store(reducers={"state:items": reducers.append})
        graph.run(store=store)
        assert store.value("state", "total") == n

    return build, run


def g3(n: int) -> tuple[Callable[[], Any], Callable[[Any], None]]:
    from weft.graph import WorkGraph, WorkGraphNode
    from weft.store import Store

    def branch(view: Any, i: int) -> dict[str, int]:
        return {f"b{i}": i}

    def join(view: Any) -> dict[str, int]:
        return {"total": sum(view[f"b{i}"] for i in range(n))}

    def build() -> Any:
        start = WorkGraphNode(lambda view: None, state=True)
        last = WorkGraphNode(join, state=True)
        for i in range(n):
            start.add_next(WorkGraphNode(partial(branch, i=i), state=True)).add_next(last)
        return WorkGraph(start_nodes=[start])

    def run(graph: Any) -> None:
        store = Store()
        graph.run(store=store)
        assert store.value("state", "total") == n * (n - 1) // 2

    return build, run


def plan_tools() -> list[Any]:
    from weft.calls import Tool

    return [Tool(name="inc", fn=inc), Tool(name="scale", fn=scale)]


def p1(n: int) -> tuple[Callable[[], Any], Callable[[Any], None]]:
    from weft.calls import Plan

    tools = plan_tools()

    def build() -> Any:
        calls: list[dict[str, Any]] = [{"_tool": "inc", "x": 0, "_outputPath": "†state.v0"}]
        calls += [
            {"_tool": "inc", "x": f"†state.v{i}", "_outputPath": f"†state.v{i + 1}"}
            for i in range(n - 1)
        ]
        return Plan(calls)

    def run(plan: Any) -> None:
        assert plan.run(tools).store.value("state", f"v{n - 1}") == n

    return build, run


def p3(n: int) -> tuple[Callable[[], Any], Callable[[Any], None]]:
    from weft.calls import Plan

    tools = plan_tools()
    instances = {f"i{k}": {"n": k} for k in range(n)}

    def build() -> Any:
        return Plan(
            [
                {"_tool": "inc", "x": 1, "_outputPath": "†state.factor"},
                {
                    "_tool": "scale",
                    "n": "†input.n",
                    "factor": "†state.factor",
                    "_outputPath": "†state.scaled",
                    "_instance": "*",
                },
            ]
        )

    def run(plan: Any) -> None:
        result = plan.run(tools, instances=instances)
        assert result.instances[f"i{n - 1}"].value("state", "scaled") == 2 * (n - 1)

    return build, run


def floor(workload: str, n: int) -> Callable[[], None]:
    """The plain-Python floor of ``workload`` at width ``n`` (its setup not timed)."""
    if workload == "G1":
        fns = [partial(number, i) for i in range(n)]

        def fan_in() -> None:
            assert gather(*[fn() for fn in fns]) == n

        return fan_in
    if workload == "G2":
        adds = [partial(number, i) for i in range(n)]

        def appends() -> None:
            items: list[int] = []
            for fn in adds:
                items.append(fn())
            assert len(items) == n

        return appends
    if workload == "G3":
        writes = [partial(number, i) for i in range(n)]
        names = [f"b{i}" for i in range(n)]

        def fields() -> None:
            state: dict[str, int] = {}
            for name, fn in zip(names, writes, strict=True):
                state[name] = fn()
            assert sum(state[name] for name in names) == n * (n - 1) // 2

        return fields
    if workload == "P1":

        def chain() -> None:
            value = 0
            for _ in range(n):
                value = inc(value)
            assert value == n

        return chain
    inputs = {f"i{k}": {"n": k} for k in range(n)}

    def fan() -> None:
        factor = inc(1)
        out = {name: scale(given["n"], factor) for name, given in inputs.items()}
        assert out[f"i{n - 1}"] == 2 * (n - 1)

    return fan


MAKERS = {"G1": g1, "G2": g2, "G3": g3, "P1": p1, "P3": p3}


# ------------------------------------------------------------------ one measurement


class GcClock:
    """Seconds spent in the cyclic garbage collector while ``on``."""

    def __init__(self) -> None:
        self.on = False
        self.spent = 0.0
        self._began = 0.0
        gc.callbacks.append(self._tick)

    def _tick(self, phase: str, info: dict[str, Any]) -> None:
        if not self.on:
            return
        if phase == "start":
            self._began = time.perf_counter()
        else:
            self.spent += time.perf_counter() - self._began


def one(workload: str, n: int, samples: int) -> dict[str, Any]:
    """Measure ``workload`` at width ``n`` in this process (see the module docstring)."""
    make = MAKERS[workload]
    build, run = make(100)
    run(build())  # warm-up: every module imported, every code path taken once
    gc.collect()
    base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    build, run = make(n)
    clock = GcClock()
    builds, runs, gcs, peak = [], [], [], 0
    for _ in range(samples):
        gc.collect()
        start = time.perf_counter()
        graph = build()
        built = time.perf_counter()
        clock.spent, clock.on = 0.0, True
        began = time.perf_counter()
        run(graph)
        ended = time.perf_counter()
        clock.on = False
        builds.append(built - start)
        runs.append(ended - began)
        gcs.append(clock.spent / (ended - began))
        del graph
        if not peak:  # the first sample's (later ones may find memory freed but not returned)
            peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - base  # KiB on Linux
    plain = floor(workload, n)
    plain()
    gc.collect()
    floors = []
    for _ in range(max(samples, 5)):
        start = time.perf_counter()
        plain()
        floors.append(time.perf_counter() - start)
    return {
        "build": statistics.median(builds),
        "run": statistics.median(runs),
        "gc": statistics.median(gcs),
        "floor": statistics.median(floors),
        "peak_kib": peak,
    }


def measure(workload: str, n: int, samples: int) -> dict[str, Any]:
    """``one`` in a fresh process, so that no width's heap or peak memory affects another."""
    command = [sys.executable, __file__, "--one", workload, str(n), str(samples)]
    done = subprocess.run(command, stdout=subprocess.PIPE, text=True, check=False)
    if done.returncode != 0:
        sys.exit(f"{workload} at {n:,} failed (exit {done.returncode})")
    result: dict[str, Any] = json.loads(done.stdout)
    return result


# -------------------------------------------------------------------------- table


def table(rows: list[tuple[str, int, dict[str, Any]]]) -> str:
    lines = [
        "| workload | width | build per node | run per node | vs 1,000 | gc | vs 1,000 "
        "without gc | floor per node | run / floor | peak | peak per node |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    first: dict[str, tuple[float, float]] = {}
    for workload, n, got in rows:
        per_node = got["run"] / n * 1e6
        own = per_node * (1 - got["gc"])
        base, base_own = first.setdefault(workload, (per_node, own))
        floor_node = got["floor"] / n * 1e6
        cells = [
            WORKLOADS[workload],
            f"{n:,}",
            us(got["build"] / n * 1e6),
            us(per_node),
            f"{per_node / base:.2f}x",
            f"{got['gc']:.0%}",
            f"{own / base_own:.2f}x",
            us(floor_node),
            f"{got['run'] / got['floor']:,.0f}x",
            f"{got['peak_kib'] / 1024:,.1f} MB",
            f"{got['peak_kib'] * 1024 / n / 1000:,.2f} KB",
        ]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="1,000 and 10,000 wide only")
    parser.add_argument(
        "--one", nargs=3, metavar=("WORKLOAD", "N", "SAMPLES"), help=argparse.SUPPRESS
    )
    args = parser.parse_args()
    if args.one:
        workload, n, samples = args.one
        print(json.dumps(one(workload, int(n), int(samples))))
        return
    print(f"machine: {machine()}\n")
    widths = WIDTHS[:2] if args.quick else WIDTHS
    rows = []
    for workload in WORKLOADS:
        for n in widths:
            samples = 5 if n <= 10_000 else 3
            if args.quick:
                samples = 3
            print(f"{workload} at {n:,} ...", file=sys.stderr, flush=True)
            rows.append((workload, n, measure(workload, n, samples)))
    block(
        "width",
        table(rows)
        + "\n\nbuild: wiring the nodes and `WorkGraph(...)`, or `Plan(calls)` (a plan's "
        "graph is built inside `plan.run`); run: `graph.run(...)` or `plan.run(...)` "
        "(validation, graph and run); vs 1,000: the run's time per node against the same "
        "workload at 1,000 wide (flat is linear); gc: the share of the run spent in "
        "Python's cyclic garbage collector, whose full collections walk every object alive "
        "(the graph's own included), so its share grows with the heap; vs 1,000 without "
        "gc: the same ratio for the rest of the run; peak: growth of the process's peak resident "
        "memory over a warm-up, for the graph or plan and its first run. Each width in a "
        "process of its own; medians of 5 samples (3 at 100,000).",
    )


if __name__ == "__main__":
    main()
