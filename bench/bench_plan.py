"""Plans of tool calls against plain Python doing the same calls with the values in hand.

P1: a chain of 1,000 calls, each reading the previous call's result through a reference
    (``"x": "†state.v41"``) and writing its own through ``_outputPath``; the floor calls
    the same function 1,000 times in a loop, passing the value directly.
P2: a layered plan of 1,000 calls (10 layers of 100), each reading two results of the
    layer before it; the floor is the same nested loops over a list.
P3: a fan-out over 1,000 instances: one global call writes a setting, and one call per
    instance (``_instance: "*"``) reads its own input and the global setting and writes
    its own state (a fork each); the floor is a loop over the instances' inputs.

The weft column is the whole ``plan.run(...)``: validation (every reference and path
checked), the WorkGraph built from the data flow, and the run. "validate" rows time
``plan.validate`` alone; "run_id" rows record the run (each call committed with its
record, so it can resume). Rows marked ``blocking=False`` declare the tool a quick pure
function that may run on the event loop's thread instead of a worker thread.

Each cell is the median of several samples (``time.perf_counter``) after a warm-up; the
columns of a row are sampled in turn, so a machine whose speed drifts slows them alike.
"weft cpu" is the process's CPU time for the same samples (``time.process_time``, every
thread): on a machine that other work keeps busy, the wall time of the rows that use
worker threads depends on how the OS shares the cores out, the CPU time much less.
Overhead is (weft - floor) per call (per instance for P3).

Run: ``python bench/bench_plan.py [--quick]``
"""

from __future__ import annotations

import itertools
import os
import platform
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

from weft.calls import Plan, Tool
from weft.store import Store

N = 1000
LAYERS, WIDTH = 10, 100


def inc(x: int) -> int:
    return x + 1


def add(a: int, b: int) -> int:
    return a + b


def scale(n: int, factor: int) -> int:
    return n * factor


def chain_plan() -> Plan:
    calls: list[dict[str, Any]] = [{"_tool": "inc", "x": 0, "_outputPath": "†state.v0"}]
    calls += [
        {"_tool": "inc", "x": f"†state.v{i}", "_outputPath": f"†state.v{i + 1}"}
        for i in range(N - 1)
    ]
    return Plan(calls)


def chain_floor() -> int:
    value = 0
    for _ in range(N):
        value = inc(value)
    return value


def layered_plan() -> Plan:
    calls: list[dict[str, Any]] = [
        {"_tool": "add", "a": i, "b": 1, "_outputPath": f"†state.l0n{i}"} for i in range(WIDTH)
    ]
    for layer in range(1, LAYERS):
        for i in range(WIDTH):
            calls.append(
                {
                    "_tool": "add",
                    "a": f"†state.l{layer - 1}n{i}",
                    "b": f"†state.l{layer - 1}n{(i + 1) % WIDTH}",
                    "_outputPath": f"†state.l{layer}n{i}",
                }
            )
    return Plan(calls)


def layered_floor() -> list[int]:
    row = [add(i, 1) for i in range(WIDTH)]
    for _ in range(1, LAYERS):
        row = [add(row[i], row[(i + 1) % WIDTH]) for i in range(WIDTH)]
    return row


FAN_PLAN = Plan(
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
INSTANCES = {f"i{k}": {"n": k} for k in range(N)}


def fan_floor() -> dict[str, int]:
    factor = inc(1)
    return {name: scale(inputs["n"], factor) for name, inputs in INSTANCES.items()}


def tools(*, blocking: bool) -> list[Tool]:
    return [
        Tool(name="inc", fn=inc, blocking=blocking),
        Tool(name="add", fn=add, blocking=blocking),
        Tool(name="scale", fn=scale, blocking=blocking),
    ]


def sample_ms(fn: Callable[[], Any]) -> tuple[float, float]:
    """Wall and CPU milliseconds of one call of ``fn``."""
    start, cpu = time.perf_counter(), time.process_time()
    fn()
    return (time.perf_counter() - start) * 1000, (time.process_time() - cpu) * 1000


def interleaved(cells: dict[str, Callable[[], Any]], rounds: int) -> dict[str, tuple[float, float]]:
    for fn in cells.values():
        fn()  # warm-up
    samples: dict[str, list[tuple[float, float]]] = {name: [] for name in cells}
    for _ in range(rounds):
        for name, fn in cells.items():
            samples[name].append(sample_ms(fn))
    return {
        name: (statistics.median(w for w, _ in values), statistics.median(c for _, c in values))
        for name, values in samples.items()
    }


def recorded(plan: Plan, tools: list[Tool], **options: Any) -> Callable[[], Any]:
    """A run of ``plan`` recorded under a new run id, on a new store each time."""
    runs = itertools.count()
    return lambda: plan.run(tools, store=Store(), run_id=f"bench-{next(runs)}", **options)


def main() -> None:
    quick = "--quick" in sys.argv
    rounds = 5 if quick else 15
    chain, layered = chain_plan(), layered_plan()
    threaded, inline = tools(blocking=True), tools(blocking=False)
    assert chain.run(threaded).store.value("state", f"v{N - 1}") == chain_floor()
    assert [layered.run(threaded).store.value("state", f"l{LAYERS - 1}n{i}") for i in range(3)] == (
        layered_floor()[:3]
    )
    fan = FAN_PLAN.run(threaded, instances=INSTANCES)
    assert fan.instances["i7"].value("state", "scaled") == fan_floor()["i7"]

    rows: list[tuple[str, int, Callable[[], Any], Callable[[], Any]]] = [
        ("P1 chain, 1,000 calls", N, lambda: chain.run(threaded), chain_floor),
        ("P1 chain, blocking=False", N, lambda: chain.run(inline), chain_floor),
        ("P1 validate only", N, lambda: chain.validate(threaded), chain_floor),
        ("P1 chain, run_id", N, recorded(chain, threaded), chain_floor),
        ("P2 layered 10x100", N, lambda: layered.run(threaded), layered_floor),
        ("P2 layered, blocking=False", N, lambda: layered.run(inline), layered_floor),
        ("P2 layered, run_id", N, recorded(layered, threaded), layered_floor),
        (
            "P3 fan-out, 1,000 instances",
            N,
            lambda: FAN_PLAN.run(threaded, instances=INSTANCES),
            fan_floor,
        ),
        (
            "P3 fan-out, blocking=False",
            N,
            lambda: FAN_PLAN.run(inline, instances=INSTANCES),
            fan_floor,
        ),
        (
            "P3 validate only",
            N,
            lambda: FAN_PLAN.validate(threaded, instances=INSTANCES),
            fan_floor,
        ),
    ]
    cpu = platform.processor() or platform.machine()
    print(f"bench_plan: Python {platform.python_version()}, {cpu}, {os.cpu_count()} CPUs")
    print(f"medians of {rounds} samples each\n")
    header = (
        f"{'workload':30} {'weft ms':>9} {'weft cpu':>9} {'plain ms':>9} {'ratio':>8} "
        f"{'overhead/call':>14}"
    )
    print(header)
    print("-" * len(header))
    for label, count, weft_fn, floor_fn in rows:
        result = interleaved({"weft": weft_fn, "plain": floor_fn}, rounds)
        (weft_ms, weft_cpu), (plain_ms, _) = result["weft"], result["plain"]
        ratio = weft_ms / plain_ms if plain_ms else float("inf")
        overhead_us = (weft_ms - plain_ms) * 1000 / count
        print(
            f"{label:30} {weft_ms:9.2f} {weft_cpu:9.2f} {plain_ms:9.3f} {ratio:7.0f}x "
            f"{overhead_us:11.1f} us"
        )


if __name__ == "__main__":
    main()
