"""Scale-out on Ray, against the same fan-out in one process; and PostgreSQL appends.

    .venv/bin/python bench/bench_distributed.py [--quick]

Every row is a fan-out of N independent nodes (``WorkGraph`` of ``partial(fn, k)``), at
N = 1,000 and 10,000 (``--quick``: 100 and 1,000), run three ways with the same graph and
the same node functions; only the executor differs:

- **in-process**: ``graph.run(0)``. The engine calls each node on its thread pool (up to
  32 calls at once); the GIL runs their Python code one thread at a time.
- **Ray, 1 worker** / **Ray, 2 workers**: ``graph.run(0, executor=RayExecutor(...))`` on a
  local Ray cluster of 1, then 2 CPUs. The engine stays on the driver (this process): it
  schedules, encodes each call's arguments, submits one Ray task per node, awaits it,
  decodes the result, merges and records. A no-op or CPU-bound call reserves a whole CPU
  (``num_cpus_per_call=1``: one call at a time per worker); an I/O-bound call reserves
  0.1 CPU, so each worker CPU runs up to 10 calls at once, each in a Ray worker process
  of its own.

What a node does: no-op (returns ``x + k``); I/O-bound (``time.sleep(0.05)``); CPU-bound
(a Python loop: ``CPU_LOOP`` iterations, about 20 ms, at 1,000 nodes; a tenth of that,
about 2 ms, at 10,000, so the row stays at 20 s of CPU per side). Each cell is one run,
after a warm-up that starts the worker processes (for I/O, 3 calls per process that each
sleep 1 s, so that Ray starts all 10 or 20 before the timed run): its wall time, and the
CPU time of the driver process per node (``time.process_time``: all its threads, Ray's
own included; not the Ray worker processes). In-process, that CPU includes the calls'
own work.

The last row is the no-op fan-out again, as a recorded run (``DurableRun.run_graph`` on
PostgreSQL): each node's record is committed on the driver, and the commits are counted.

Then PostgreSQL event-log appends per second: 1, 2, 4 and 8 writer threads, each with its
own ``DurableRun`` (its own connection and thread of the log), each commit one write;
and the same with 10 writes per commit (``store.transaction()``).
"""

from __future__ import annotations

import functools
import os
import sys
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from harness import block, machine, postgres_dsn

CPU_LOOP = 800_000  # about 20 ms of Python on the machine measured
SIDES = ("in-process", "Ray, 1 worker", "Ray, 2 workers")


def noop(k: int, x: int) -> int:
    return x + k


def io_bound(k: int, x: int) -> int:
    time.sleep(0.05)
    return x + k


def hold(k: int, x: int) -> int:
    time.sleep(1.0)  # long enough that Ray starts a worker process for every call at once
    return x + k


def cpu_bound(loops: int, k: int, x: int) -> int:
    total = 0
    for i in range(loops):  # a fixed amount of Python work
        total += i
    return x + k + total - total


@dataclass(frozen=True)
class Case:
    name: str  # what a node does, as the table says it
    fn: Callable[[int, int], int]
    nodes: int
    cpus_per_call: float  # what a call reserves on Ray
    recorded: bool = False  # run as a DurableRun on PostgreSQL, each commit counted


def cases(sizes: tuple[int, int]) -> list[Case]:
    small, large = sizes
    return [
        Case("no-op", noop, small, 1.0),
        Case("no-op", noop, large, 1.0),
        Case("I/O: sleep 50 ms", io_bound, small, 0.1),
        Case("I/O: sleep 50 ms", io_bound, large, 0.1),
        Case(f"CPU: {CPU_LOOP:,}-step loop", functools.partial(cpu_bound, CPU_LOOP), small, 1.0),
        Case(
            f"CPU: {CPU_LOOP // 10:,}-step loop",
            functools.partial(cpu_bound, CPU_LOOP // 10),
            large,
            1.0,
        ),
        Case("no-op, recorded on PostgreSQL", noop, small, 1.0, recorded=True),
    ]


def fan_out(fn: Callable[[int, int], int], n: int) -> Any:
    from weft.graph import WorkGraph, WorkGraphNode

    return WorkGraph([WorkGraphNode(functools.partial(fn, k)) for k in range(n)])


@dataclass(frozen=True)
class Cell:
    wall: float  # seconds for the whole fan-out
    cpu: float  # driver process CPU seconds for it
    commits: int = 0  # transactions on PostgreSQL, for a recorded run


def measured(run: Callable[[], Any]) -> Cell:
    wall, cpu = time.perf_counter(), time.process_time()
    run()
    return Cell(time.perf_counter() - wall, time.process_time() - cpu)


def run_case(case: Case, executor: Any) -> Cell:
    """One timed run of ``case``'s fan-out (in-process when ``executor`` is None)."""
    graph = fan_out(case.fn, case.nodes)
    options = {} if executor is None else {"executor": executor}
    if not case.recorded:
        return measured(lambda: graph.run(0, **options))
    import psycopg

    from weft.persist import DurableRun, PostgresBackend

    schema = f"bench_{uuid.uuid4().hex[:10]}"
    backend = PostgresBackend(postgres_dsn(), schema=schema, timeout=10)
    commits = 0
    append = backend.append

    def counted(*args: Any, **kwargs: Any) -> Any:
        nonlocal commits
        commits += 1
        return append(*args, **kwargs)

    backend.append = counted  # type: ignore[method-assign]
    try:
        run = DurableRun.open(backend, "recorded")
        cell = measured(lambda: run.run_graph(graph, 0, **options))
    finally:
        backend.close()
        with psycopg.connect(postgres_dsn(), autocommit=True) as conn:
            conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
    return Cell(cell.wall, cell.cpu, commits)


def one_call_ms(fn: Callable[[int, int], int]) -> float:
    """The CPU time of one call of ``fn`` (the least of five), in ms: what it costs, however
    loaded the machine is."""
    best = float("inf")
    for _ in range(5):
        started = time.thread_time()
        fn(0, 0)
        best = min(best, time.thread_time() - started)
    return best * 1e3


def graph_cells(rows: list[Case]) -> dict[tuple[int, str], Cell]:
    import ray

    from weft.distributed import RayExecutor

    cells: dict[tuple[int, str], Cell] = {}
    for i, case in enumerate(rows):
        fan_out(case.fn, 64).run(0)  # warm
        cells[(i, "in-process")] = run_case(case, None)
    for workers in (1, 2):
        side = SIDES[workers]
        ray.init(num_cpus=workers, include_dashboard=False, log_to_driver=False)
        try:
            for i, case in enumerate(rows):
                executor = RayExecutor(num_cpus_per_call=case.cpus_per_call).start()
                at_once = round(workers / case.cpus_per_call)  # calls that run at once
                warm = hold if case.cpus_per_call < 1 else case.fn  # start the workers
                fan_out(warm, 3 * at_once).run(0, executor=executor)
                cells[(i, side)] = run_case(case, executor)
                print(
                    f"  {case.name} x {case.nodes:,}, {side}: {cells[(i, side)].wall:.1f} s",
                    file=sys.stderr,
                    flush=True,
                )
        finally:
            ray.shutdown()
    return cells


def table(rows: list[Case], cells: dict[tuple[int, str], Cell], alone: dict[int, float]) -> str:
    head = "| a node does | nodes | " + " | ".join(
        f"{side}: wall | {side}: driver CPU per node" for side in SIDES
    )
    lines = [head + " |", "|---|---:|" + "---:|" * (2 * len(SIDES))]
    for i, case in enumerate(rows):
        values = []
        for side in SIDES:
            cell = cells[(i, side)]
            values += [f"{cell.wall:,.2f} s", f"{cell.cpu / case.nodes * 1e3:,.3f} ms"]
        label = case.name
        if i in alone:
            label += f" ({alone[i]:.1f} ms of CPU)"
        lines.append(f"| {label} | {case.nodes:,} | " + " | ".join(values) + " |")
    recorded = [(i, case) for i, case in enumerate(rows) if case.recorded]
    for i, case in recorded:
        lines.append("")
        lines.append(
            f"{case.name}, {case.nodes:,} nodes: commits (transactions) "
            + ", ".join(
                f"{side} {cells[(i, side)].commits:,} "
                f"({cells[(i, side)].commits / cells[(i, side)].wall:,.0f} per second)"
                for side in SIDES
            )
        )
    return "\n".join(lines)


def task_cost(rows: list[Case], cells: dict[tuple[int, str], Cell]) -> str:
    """Ray's cost per task against the engine's in-process cost per node (no-op rows)."""
    lines = []
    for i, case in enumerate(rows):
        if case.fn is not noop or case.recorded:
            continue
        here, one, two = (cells[(i, side)] for side in SIDES)
        n = case.nodes
        lines.append(
            f"- no-op x {n:,}: in-process {here.wall / n * 1e6:,.1f} us wall and "
            f"{here.cpu / n * 1e6:,.1f} us CPU per node; on Ray {one.wall / n * 1e3:,.2f} / "
            f"{two.wall / n * 1e3:,.2f} ms wall per node (1 / 2 workers), of which the "
            f"driver's CPU {one.cpu / n * 1e3:,.2f} / {two.cpu / n * 1e3:,.2f} ms"
        )
    return "\n".join(lines)


def appends(writers: int, per_writer: int, batch: int) -> float:
    """Events appended per second by ``writers`` threads, ``batch`` writes per commit."""
    import psycopg

    from weft.persist import DurableRun, PostgresBackend

    schema = f"bench_{uuid.uuid4().hex[:10]}"
    backends = [PostgresBackend(postgres_dsn(), schema=schema, timeout=10) for _ in range(writers)]
    runs = [DurableRun.open(b, f"writer-{i}") for i, b in enumerate(backends)]
    for run in runs:
        run.store.write("state", "warm", 0)

    def write(run: DurableRun) -> None:
        for i in range(per_writer // batch):
            if batch == 1:
                run.store.write("state", "n", i)
                continue
            with run.store.transaction() as tx:
                for j in range(batch):
                    tx.write("state", f"n{j}", i)

    threads = [threading.Thread(target=write, args=(run,)) for run in runs]
    started = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    elapsed = time.perf_counter() - started
    for b in backends:
        b.close()
    with psycopg.connect(postgres_dsn(), autocommit=True) as conn:
        conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
    return writers * (per_writer // batch) * batch / elapsed


def main() -> None:
    quick = "--quick" in sys.argv
    rows = cases((100, 1_000) if quick else (1_000, 10_000))
    started, load = time.perf_counter(), os.getloadavg()[0]
    alone = {i: one_call_ms(c.fn) for i, c in enumerate(rows) if c.fn not in (noop, io_bound)}
    cells = graph_cells(rows)
    head = (
        f"Machine: {machine().split(';')[0]}; load average {load:.1f} at the start, "
        f"{os.getloadavg()[0]:.1f} at the end of the fan-outs."
    )
    block("distributed", f"{head}\n\n{table(rows, cells, alone)}\n\n{task_cost(rows, cells)}")
    per_writer = 200 if quick else 1_000
    lines = [
        "| writers | events per second, 1 write per commit | 10 writes per commit |",
        "|---:|---:|---:|",
    ]
    for writers in (1, 2, 4, 8):
        one, ten = appends(writers, per_writer, 1), appends(writers, per_writer, 10)
        lines.append(f"| {writers} | {one:,.0f} | {ten:,.0f} |")
    block("distributed-appends", "\n".join(lines))
    print(f"(the whole script: {time.perf_counter() - started:,.0f} s)", file=sys.stderr)


if __name__ == "__main__":
    main()
