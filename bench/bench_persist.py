"""Durable runs: weft's event log against LangGraph's SqliteSaver, side by side in one run.

    .venv/bin/python bench/bench_persist.py [--quick]

W3  a checkpointed 200-node chain: time per node, every node's output durable when the
    node finishes (weft: its record is committed before the next node starts;
    LangGraph: durability="sync", a checkpoint per step).
W4  a state whose message list grows by one ~100-byte message per step, 1,000 and
    10,000 steps: per-step time of the first and the last 100 steps (medians), and the
    database bytes at the end. weft is measured two ways: a store write per step (the
    checkpoint itself), and a one-node WorkGraph turn per step (the graph's records
    included, like LangGraph's invoke per step).

Both run on SQLite files in one temporary folder, each at its default
``synchronous`` and at the other level too, since that setting (an fsync per commit or
not) dominates a commit's cost: weft defaults to NORMAL (durable against a process
crash), SQLite and so SqliteSaver to FULL (durable against power loss as well).
Needs the bench extra: pip install -e '.[bench]' (langgraph, langgraph-checkpoint-sqlite).
"""

from __future__ import annotations

import argparse
import gc
import itertools
import json
import operator
import os
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, TypedDict

from weft.graph import ResultPassDownMode, WorkGraph, WorkGraphNode
from weft.persist import DurableRun, SQLiteBackend
from weft.store import Store, reducers

LG_BUDGET_S = 180.0
LG_BUDGET_BYTES = 2e9  # LangGraph's 10,000-step file is ~14 GB: opt in with --langgraph-10k


# ---------------------------------------------------------------------- helpers


def message(i: int) -> dict[str, str]:
    """A message whose JSON is about 100 bytes."""
    text = f"message {i}: " + "lorem ipsum dolor sit amet " * 3
    return {"role": "assistant" if i % 2 else "user", "content": text[:70]}


MESSAGE_BYTES = len(json.dumps(message(1), separators=(",", ":")))


def db_bytes(path: Path) -> int:
    """The file and its WAL and journal, if any (read after the connection closed)."""
    return sum(
        os.path.getsize(p)
        for p in (path, Path(f"{path}-wal"), Path(f"{path}-journal"))
        if p.exists()
    )


@dataclass
class Growth:
    first: float  # median seconds per step, first 100 steps
    last: float  # median seconds per step, last 100 steps
    mean_last: float
    size: int
    total: float
    load: float  # seconds to open the thread again at the end

    @property
    def ratio(self) -> float:
        return self.last / self.first


def timed_steps(n: int, step: Callable[[int], Any]) -> list[float]:
    times = []
    for i in range(n):
        start = time.perf_counter()
        step(i)
        times.append(time.perf_counter() - start)
    return times


def growth(times: list[float], size: int, load: float) -> Growth:
    return Growth(
        first=statistics.median(times[:100]),
        last=statistics.median(times[-100:]),
        mean_last=statistics.fmean(times[-100:]),
        size=size,
        total=sum(times),
        load=load,
    )


# ------------------------------------------------------------------------- weft


def weft_chain(n: int) -> WorkGraph:
    nodes = [WorkGraphNode(lambda x: x + 1, ResultPassDownMode.ResultAsFirstArg, id=f"n{i}")
             for i in range(n)]  # fmt: skip
    for a, b in itertools.pairwise(nodes):
        a.add_next(b)
    return WorkGraph(start_nodes=[nodes[0]])


def weft_w3(graph: WorkGraph, path: Path, synchronous: str) -> float:
    with SQLiteBackend(path, synchronous=synchronous) as backend:  # type: ignore[arg-type]
        run = DurableRun.open(backend, "chain", run_id="job")
        start = time.perf_counter()
        assert run.run_graph(graph, 0) == 200
        per_node = (time.perf_counter() - start) / 200
        run.close()
    return per_node


def weft_w3_floor(reps: int) -> float:
    """The same chain with no store at all: the engine's own cost."""
    graph = weft_chain(200)
    per_node = []
    for _ in range(reps):
        start = time.perf_counter()
        graph.run(0)
        per_node.append((time.perf_counter() - start) / 200)
    return statistics.median(per_node)


def weft_w4_store(folder: Path, n: int, synchronous: str = "NORMAL") -> Growth:
    path = folder / f"weft-w4-store-{n}-{synchronous}.db"
    reducer = {"state:messages": reducers.append}
    with SQLiteBackend(path, synchronous=synchronous) as backend:  # type: ignore[arg-type]
        run = DurableRun.open(backend, "chat", reducers=reducer)
        run.store.declare("state", "messages", reducers.append)
        write = run.store.write
        times = timed_steps(n, lambda i: write("state", "messages", message(i)))
        run.close()
    start = time.perf_counter()
    with SQLiteBackend(path) as backend:
        again = DurableRun.open(backend, "chat", reducers=reducer)
        assert len(again.store.value("state", "messages")) == n
        load = time.perf_counter() - start
        again.close()
    return growth(times, db_bytes(path), load)


def store_alone(n: int) -> Growth:
    """The same writes to a store with no persistence: the floor the durable run adds to."""
    store = Store(reducers={"state:messages": reducers.append})
    write = store.write
    times = timed_steps(n, lambda i: write("state", "messages", message(i)))
    return growth(times, 0, 0.0)


def weft_w4_graph(folder: Path, n: int) -> Growth:
    path = folder / f"weft-w4-graph-{n}.db"
    reducer = {"state:messages": reducers.append}
    holder: dict[str, Any] = {}

    def respond(view: Any) -> dict[str, Any]:
        return {"messages": holder["message"]}

    graph = WorkGraph(start_nodes=[WorkGraphNode(respond, id="respond", state=True)])
    with SQLiteBackend(path) as backend:
        run = DurableRun.open(backend, "chat", reducers=reducer)
        run.store.declare("state", "messages", reducers.append)

        def turn(i: int) -> None:
            holder["message"] = message(i)
            run.run_graph(graph, run_id=f"turn-{i}")

        times = timed_steps(n, turn)
        run.close()
    start = time.perf_counter()
    with SQLiteBackend(path) as backend:
        again = DurableRun.open(backend, "chat", reducers=reducer)
        assert len(again.store.value("state", "messages")) == n
        load = time.perf_counter() - start
        again.close()
    return growth(times, db_bytes(path), load)


# -------------------------------------------------------------------- LangGraph


class ChainState(TypedDict):
    x: int


class ChatState(TypedDict):
    messages: Annotated[list[dict[str, str]], operator.add]


def lg_saver(path: Path, synchronous: str) -> tuple[Any, sqlite3.Connection]:
    from langgraph.checkpoint.sqlite import SqliteSaver

    conn = sqlite3.connect(path, check_same_thread=False)
    saver = SqliteSaver(conn)
    saver.setup()
    conn.execute(f"PRAGMA synchronous={synchronous}")
    return saver, conn


def lg_chain() -> Any:
    from langgraph.graph import END, START, StateGraph

    builder = StateGraph(ChainState)
    for i in range(200):
        builder.add_node(f"n{i}", lambda s: {"x": s["x"] + 1})
    builder.add_edge(START, "n0")
    for i in range(199):
        builder.add_edge(f"n{i}", f"n{i + 1}")
    builder.add_edge("n199", END)
    return builder


def lg_w3(builder: Any, path: Path, synchronous: str) -> float:
    saver, conn = lg_saver(path, synchronous)
    graph = builder.compile(checkpointer=saver)
    config = {"configurable": {"thread_id": "chain"}, "recursion_limit": 1000}
    start = time.perf_counter()
    assert graph.invoke({"x": 0}, config, durability="sync")["x"] == 200
    per_node = (time.perf_counter() - start) / 200
    conn.close()
    return per_node


def lg_w4(folder: Path, n: int) -> Growth:
    from langgraph.graph import END, START, StateGraph

    builder = StateGraph(ChatState)
    builder.add_node("respond", lambda s: None)
    builder.add_edge(START, "respond")
    builder.add_edge("respond", END)
    path = folder / f"lg-w4-{n}.db"
    saver, conn = lg_saver(path, "FULL")
    graph = builder.compile(checkpointer=saver)
    config = {"configurable": {"thread_id": "chat"}}
    times = timed_steps(
        n, lambda i: graph.invoke({"messages": [message(i)]}, config, durability="sync")
    )
    conn.close()
    start = time.perf_counter()
    saver, conn = lg_saver(path, "FULL")
    state = builder.compile(checkpointer=saver).get_state(config)
    assert len(state.values["messages"]) == n
    load = time.perf_counter() - start
    conn.close()
    return growth(times, db_bytes(path), load)


def lg_projection(small: Growth, n_small: int, n: int) -> tuple[float, float]:
    """Seconds and bytes for ``n`` steps, from the ``n_small`` run: per-step time grows
    linearly in the step (the list it stores grows), bytes quadratically."""
    slope = (small.last - small.first) / max(n_small - 100, 1)
    seconds = n * small.first + slope * n * n / 2
    return seconds, small.size * (n / n_small) ** 2


# ------------------------------------------------------------------------ main


def us(seconds: float) -> str:
    return f"{seconds * 1e6:,.1f} us" if seconds < 1e-5 else f"{seconds * 1e6:,.0f} us"


def mb(size: float) -> str:
    return f"{size / 1e6:,.2f} MB"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer repetitions, no 10,000")
    parser.add_argument(
        "--langgraph-10k", action="store_true", help="run LangGraph at 10,000 steps (~14 GB)"
    )
    args = parser.parse_args()
    reps = 3 if args.quick else 9
    sizes = [1_000] if args.quick else [1_000, 10_000]
    try:
        import langgraph.checkpoint.sqlite  # noqa: F401
    except ImportError:
        sys.exit("needs the bench extra: pip install -e '.[bench]' (langgraph-checkpoint-sqlite)")
    gc.collect()
    with tempfile.TemporaryDirectory(prefix="weft-bench-") as tmp:
        folder = Path(tmp)
        print(f"# W3: a checkpointed 200-node chain, time per node (median of {reps} runs each, "
              "alternating)\n")  # fmt: skip
        floor = weft_w3_floor(reps)
        rows = []
        chain, builder = weft_chain(200), lg_chain()
        for sync in ("NORMAL", "FULL"):
            ours, theirs = [], []
            for rep in range(reps):  # alternate, so both see the same machine
                ours.append(weft_w3(chain, folder / f"weft-w3-{sync}-{rep}.db", sync))
                theirs.append(lg_w3(builder, folder / f"lg-w3-{sync}-{rep}.db", sync))
            rows.append((sync, statistics.median(ours), statistics.median(theirs)))
        print("| synchronous | weft (SQLite) | LangGraph SqliteSaver | weft / LangGraph |")
        print("|---|---:|---:|---:|")
        for sync, w, lg in rows:
            print(f"| {sync} | {us(w)} | {us(lg)} | 1/{lg / w:,.0f} |")
        default = rows[1][2] / rows[0][1]
        print(f"\nEach at its default (weft NORMAL, SqliteSaver FULL, SQLite's default): weft "
              f"1/{default:,.0f} of LangGraph. The engine alone, no store: {us(floor)} per "
              "node.\n")  # fmt: skip

        print("# W4: a message list growing by one ~100-byte message per step\n")
        print("| run | steps | first 100 | last 100 | last/first | last 100 mean | DB size "
              "| DB bytes per message byte | reload |")  # fmt: skip
        print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
        results: dict[tuple[str, int], Growth] = {}
        for n in sizes:
            runs: list[tuple[str, Callable[[], Growth | None]]] = [
                ("weft, a store write per step", lambda n=n: weft_w4_store(folder, n)),
                ("weft, a store write per step, FULL",
                 lambda n=n: weft_w4_store(folder, n, "FULL")),
                ("weft, a WorkGraph turn per step", lambda n=n: weft_w4_graph(folder, n)),
            ]  # fmt: skip
            lg_note = ""
            if n == sizes[0]:
                runs.append(("LangGraph SqliteSaver (FULL)", lambda n=n: lg_w4(folder, n)))
            else:
                seconds, size = lg_projection(results[("LangGraph SqliteSaver (FULL)", sizes[0])],
                                              sizes[0], n)  # fmt: skip
                if args.langgraph_10k or (seconds < LG_BUDGET_S and size < LG_BUDGET_BYTES):
                    runs.append(("LangGraph SqliteSaver (FULL)", lambda n=n: lg_w4(folder, n)))
                else:
                    lg_note = (f"LangGraph at {n:,} steps skipped: projected from its "
                               f"{sizes[0]:,}-step run to take {seconds / 60:,.1f} min and "
                               f"{mb(size)} of disk (budgets: {LG_BUDGET_S / 60:.0f} min, "
                               f"{mb(LG_BUDGET_BYTES)}); --langgraph-10k runs it")  # fmt: skip
            runs.append(("(the store alone, not persisted)", lambda n=n: store_alone(n)))
            for name, fn in runs:
                g = fn()
                assert g is not None
                results[(name, n)] = g
                size = f"{mb(g.size)} | {g.size / (n * MESSAGE_BYTES):.2f}" if g.size else "- | -"
                load = f"{g.load * 1e3:,.1f} ms" if g.size else "-"
                print(f"| {name} | {n:,} | {us(g.first)} | {us(g.last)} | {g.ratio:.2f}x "
                      f"| {us(g.mean_last)} | {size} | {load} |")  # fmt: skip
            if lg_note:
                print(f"\n{lg_note}\n")
        lg = results[("LangGraph SqliteSaver (FULL)", sizes[0])]
        print("\nThe store alone is the in-memory write with no persistence. Medians exclude the "
              "periodic snapshots; the 'mean' column includes them.")  # fmt: skip
        print(f"Message: {MESSAGE_BYTES} bytes of JSON. Ratios at {sizes[0]:,} steps, LangGraph "
              "/ weft:")  # fmt: skip
        for name in ("weft, a store write per step", "weft, a WorkGraph turn per step"):
            g = results[(name, sizes[0])]
            print(f"- {name}: DB {lg.size / g.size:,.0f}x smaller; last-100 step "
                  f"{lg.last / g.last:,.0f}x faster")  # fmt: skip


if __name__ == "__main__":
    main()
