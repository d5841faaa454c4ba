"""Scale-out on Ray, against the same fan-out in one process; and PostgreSQL appends.

    .venv/bin/python bench/bench_distributed.py [--quick]

1. Cost per node: a fan-out of N no-op nodes, in-process (the engine's own cost) and on
   Ray (the engine's cost plus one Ray task: submit, run on a worker, return through
   weft's codec).
2. I/O-bound: N nodes that each sleep 50 ms. In-process they run on the engine's threads
   (up to 32 at once); on Ray each is a task that reserves ``num_cpus_per_call`` CPUs.
3. CPU-bound: N nodes that each run the same Python loop (about 20 ms on its own). In-process the GIL
   runs them one at a time; on Ray each worker process runs one.
4. PostgreSQL event-log appends per second: 1, 2 and 4 writer threads, each appending to
   its own thread through its own ``DurableRun`` (each write one commit).

Ray runs as a local cluster started with 1, then 2 CPUs ("workers"). Every side of a
row does the same work: the same graph and node functions, only the executor differs.
"""

from __future__ import annotations

import functools
import sys
import threading
import time
import uuid
from collections.abc import Callable
from typing import Any

CPU_LOOP = 400_000
PG = "postgresql://postgres@127.0.0.1:5432/weft_test"


def noop(k: int, x: int) -> int:
    return x + k


def io_bound(k: int, x: int) -> int:
    time.sleep(0.05)
    return x + k


def cpu_bound(k: int, x: int) -> int:
    total = 0
    for i in range(CPU_LOOP):  # a fixed amount of Python work (about 20 ms here)
        total += i
    return x + k + total - total


def fan_out(fn: Callable[[int, int], int], n: int) -> Any:
    from weft.graph import WorkGraph, WorkGraphNode

    return WorkGraph([WorkGraphNode(functools.partial(fn, k)) for k in range(n)])


def timed(run: Callable[[], Any]) -> float:
    started = time.perf_counter()
    run()
    return time.perf_counter() - started


def graph_rows(sizes: dict[str, int]) -> list[tuple[str, int, dict[str, float]]]:
    import ray

    from weft.distributed import RayExecutor

    cases = [("no-op", noop, 1.0), ("I/O 50 ms", io_bound, 0.1), ("CPU 20 ms", cpu_bound, 1.0)]
    rows: list[tuple[str, int, dict[str, float]]] = []
    cells: dict[tuple[str, int], dict[str, float]] = {}
    for name, fn, _ in cases:
        n = sizes[name]
        graph = fan_out(fn, n)
        graph.run(0)  # warm
        cells[(name, n)] = {"in-process": timed(lambda g=graph: g.run(0))}
    for workers in (1, 2):
        ray.init(num_cpus=workers, include_dashboard=False, log_to_driver=False)
        try:
            for name, fn, cpus in cases:
                n = sizes[name]
                executor = RayExecutor(num_cpus_per_call=cpus).start()
                graph = fan_out(fn, n)
                fan_out(fn, 2 * workers).run(0, executor=executor)  # start the workers
                cells[(name, n)][f"Ray, {workers} worker{'s' * (workers > 1)}"] = timed(
                    lambda g=graph, e=executor: g.run(0, executor=e)
                )
        finally:
            ray.shutdown()
    for (name, n), cell in cells.items():
        rows.append((name, n, cell))
    return rows


def appends(writers: int, per_writer: int) -> float:
    from weft.persist import DurableRun, PostgresBackend

    schema = f"bench_{uuid.uuid4().hex[:10]}"
    backends = [PostgresBackend(PG, schema=schema, timeout=10) for _ in range(writers)]
    runs = [DurableRun.open(b, f"writer-{i}") for i, b in enumerate(backends)]
    for run in runs:
        run.store.write("state", "warm", 0)

    def write(run: DurableRun) -> None:
        for i in range(per_writer):
            run.store.write("state", "n", i)

    threads = [threading.Thread(target=write, args=(run,)) for run in runs]
    started = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    elapsed = time.perf_counter() - started
    for b in backends:
        b.close()
    import psycopg

    with psycopg.connect(PG, autocommit=True) as conn:
        conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
    return writers * per_writer / elapsed


def main() -> None:
    quick = "--quick" in sys.argv
    sizes = (
        {"no-op": 1_000, "I/O 50 ms": 200, "CPU 20 ms": 100}
        if quick
        else {"no-op": 10_000, "I/O 50 ms": 1_000, "CPU 20 ms": 1_000}
    )
    rows = graph_rows(sizes)
    columns = ["in-process", "Ray, 1 worker", "Ray, 2 workers"]
    print("| fan-out | nodes | " + " | ".join(columns) + " | per node, Ray 2 workers |")
    print("|---|---:|" + "---:|" * (len(columns) + 1))
    for name, n, cell in rows:
        values = " | ".join(f"{cell[c]:.2f} s" for c in columns)
        per = cell["Ray, 2 workers"] / n * 1e6
        print(f"| {name} | {n:,} | {values} | {per:,.0f} us |")
    noop_row = next(cell for name, _, cell in rows if name == "no-op")
    n = sizes["no-op"]
    print(
        f"\nper no-op node: in-process {noop_row['in-process'] / n * 1e6:,.1f} us, "
        f"Ray (1 worker) {noop_row['Ray, 1 worker'] / n * 1e6:,.0f} us"
    )
    per_writer = 200 if quick else 1_000
    print("\n| writers | appends per second (PostgreSQL, one commit each) |")
    print("|---:|---:|")
    for writers in (1, 2, 4):
        print(f"| {writers} | {appends(writers, per_writer):,.0f} |")


if __name__ == "__main__":
    main()
