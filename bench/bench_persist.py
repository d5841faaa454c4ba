"""Durable graph runs on SQLite: weft, Burr and LangGraph at the same settings, one run.

    .venv/bin/python bench/bench_persist.py [--quick]

W3  the 200-node state chain of ``bench_graph.py`` (each node reads ``x`` and returns
    ``{"x": x + 1}``), durable: every node's work is committed before the next node
    starts. weft: ``DurableRun.open(SQLiteBackend(path, synchronous=...), thread)
    .run_graph(graph)``, each node's commit one ``INSERT`` that writes only if no
    other connection has appended to the thread since the run's last commit
    (autocommit: its own transaction); Burr: an application with its ``SQLitePersister`` (a state row
    committed after every step); LangGraph: ``invoke(..., durability="sync")`` with
    ``SqliteSaver``. Each sample is a fresh thread / app id on one database file per
    system and setting; opening the run, building the application or compiling the
    graph is not timed. All three run in WAL mode, at ``synchronous=NORMAL`` and at
    ``FULL`` (Burr's and LangGraph's connections get the pragmas here and are checked).
    The physical floor is a bare ``INSERT`` of one small row and its commit, on the same
    disk, at the same setting. Before timing, one run of each system checks from a
    second connection that every node's write is visible before the next node starts,
    and counts what each writes per node. weft numbers a thread's events after the
    thread, so a fresh thread's commits go to the end of the events table; the row
    "weft, older thread" runs the chain on a thread that has a newer one after it, where
    they go in the middle of the table (the case of a long-lived thread among others).
W4  1,000 graph steps on one thread, each adding one ~100-byte message to a list field
    with an append reducer (weft: a one-node WorkGraph of a state node, run per step with
    its own run id on a DurableRun; LangGraph: one ``invoke`` per step, an
    ``Annotated[list, operator.add]`` field), both at ``synchronous=NORMAL``: the median
    time of the first and of the last 100 steps, and the database's size at the end. Each
    system's run is repeated on a new file, one run at a time (never side by side, which
    would put LangGraph's growing checkpoint I/O inside weft's timings), and the table
    gives the medians over the repetitions.

Needs the bench extra: pip install -e '.[bench]'.
"""

from __future__ import annotations

import argparse
import itertools
import json
import operator
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, TypedDict

from bench_graph import CHAIN, ChainState, burr_chain, langgraph_chain, state_step
from harness import (
    Cell,
    block,
    connect,
    db_bytes,
    fraction,
    machine,
    paired,
    prepared,
    rotated,
    samples,
    timed,
    us,
    verdict,
)

from weft.graph import WorkGraph, WorkGraphNode
from weft.persist import DurableRun, SQLiteBackend
from weft.store import reducers

SETTINGS = ("NORMAL", "FULL")
# Runs timed back to back in one W3 sample: SQLite checkpoints its WAL into the database
# every 1,000 pages, which one system reaches every run and another every fourth (weft's
# run of 200 nodes writes ~250 pages; at NORMAL its checkpoints run on a thread of their
# own, see weft.persist.sqlite); a sample of one run carried a checkpoint or not, and
# the medians and ratios depended on which samples did. Eight runs carry their share.
W3_RUNS = 8
W4_STEPS = 1000
fresh = itertools.count()


# ------------------------------------------------------------------- W3: the systems


def weft_graph(probe: Callable[[], None] | None = None) -> WorkGraph:
    def node(i: int) -> Callable[[Any], dict[str, int]]:
        step = state_step(i)
        if probe is None:
            return step

        def probed(view: Any) -> dict[str, int]:
            probe()
            return step(view)

        return probed

    nodes = [WorkGraphNode(node(i), state=True, id=f"n{i}") for i in range(CHAIN)]
    for a, b in itertools.pairwise(nodes):
        a.add_next(b)
    return WorkGraph(start_nodes=[nodes[0]])


def weft_run(
    backend: SQLiteBackend, graph: WorkGraph, *, older: bool = False
) -> tuple[str, Callable[[], None]]:
    """Open a fresh thread holding x=0 (not timed) and return the run to time. ``older``:
    start a newer thread after it, so that its events go in the middle of the table
    rather than at its end (a thread's rows are numbered by the thread's number)."""
    thread = f"chain-{next(fresh)}"
    run = DurableRun.open(backend, thread)
    run.store.write("state", "x", 0)
    if older:
        newer = DurableRun.open(backend, f"{thread}-newer")
        newer.store.write("state", "x", 0)
        newer.close()

    def go() -> None:
        run.run_graph(graph)
        assert run.store.value("state", "x") == CHAIN
        run.close()

    return thread, go


def burr_app(graph: Any, persister: Any, app_id: str) -> Any:
    from burr.core import ApplicationBuilder

    return (
        ApplicationBuilder()
        .with_graph(graph)
        .with_state(x=0)
        .with_entrypoint("n0")
        .with_identifiers(app_id=app_id)
        .with_state_persister(persister)
        .build()
    )


def burr_persister(conn: sqlite3.Connection, path: Path) -> Any:
    from burr.core.persistence import SQLitePersister

    persister = SQLitePersister(str(path), connection=conn)
    persister.initialize()
    return persister


def burr_run(graph: Any, persister: Any) -> tuple[str, Callable[[], None]]:
    app_id = f"chain-{next(fresh)}"
    app = burr_app(graph, persister, app_id)

    def go() -> None:
        _, _, state = app.run(halt_after=[f"n{CHAIN - 1}"])
        assert state["x"] == CHAIN

    return app_id, go


def langgraph_saver(conn: sqlite3.Connection) -> Any:
    from langgraph.checkpoint.sqlite import SqliteSaver

    saver = SqliteSaver(conn)
    saver.setup()
    return saver


def langgraph_run(app: Any) -> tuple[str, Callable[[], None]]:
    thread = f"chain-{next(fresh)}"
    config = {"configurable": {"thread_id": thread}, "recursion_limit": CHAIN + 10}

    def go() -> None:
        assert app.invoke({"x": 0}, config, durability="sync")["x"] == CHAIN

    return thread, go


def floor_commits(conn: sqlite3.Connection) -> Callable[[], None]:
    """200 bare commits of one small row each: the disk's price of a durable step."""
    conn.execute("CREATE TABLE IF NOT EXISTS floor (id INTEGER PRIMARY KEY, value TEXT)")
    conn.commit()

    def go() -> None:
        for i in range(CHAIN):
            conn.execute("INSERT INTO floor (value) VALUES (?)", (f'{{"x":{i}}}',))
            conn.commit()

    return go


# ------------------------------------------------------------ W3: the durability check


@dataclass
class Written:
    """What one run of the chain left in the database, per node."""

    rows: str
    checked: bool


def check_weft(folder: Path) -> Written:
    """Each node sees its predecessors' records committed (read by a second connection)."""
    path = folder / "check-weft.db"
    seen: list[int] = []
    reader = sqlite3.connect(path)
    holder: dict[str, str] = {}

    def count(where: str = "1") -> int:
        query = (  # a thread's events are the rows numbered (its number << 32) + step
            "SELECT count(*) FROM weft_events WHERE seq >> 32 = "
            f"(SELECT num FROM weft_threads WHERE thread_id = ?) AND {where}"
        )
        return int(reader.execute(query, (holder["thread"],)).fetchone()[0])

    with SQLiteBackend(path) as backend:
        thread, go = weft_run(backend, weft_graph(lambda: seen.append(count())))
        holder["thread"] = thread
        before = count()
        go()
    kind = "json_extract(record, '$.kind')"
    nodes = count(f"{kind} = 'step' AND json_extract(record, '$.path') LIKE '%/%'")
    states = count(f"{kind} = 'state'") - 1  # less the x=0 written before the run
    others = count() - before - nodes - states
    reader.close()
    return Written(
        rows=f"{states / CHAIN:.2f} state events and {nodes / CHAIN:.2f} step records per "
        f"node, committed together as the node finishes (one `INSERT` statement in autocommit "
        f"mode, which writes only if no other connection appended to the thread since the "
        f"run's last commit: one transaction); {others} run "
        "records",
        checked=all(b > a for a, b in itertools.pairwise(seen)),
    )


def check_burr(folder: Path) -> Written:
    from burr.core import State, action
    from burr.core.graph import GraphBuilder

    path = folder / "check-burr.db"
    conn, reader = connect(path, "NORMAL"), connect(path, "NORMAL")
    persister = burr_persister(conn, path)
    seen: list[int] = []
    app_id = f"chain-{next(fresh)}"

    def count() -> int:
        query = "SELECT count(*) FROM burr_state WHERE app_id = ?"
        return int(reader.execute(query, (app_id,)).fetchone()[0])

    def act(i: int) -> Any:
        step = state_step(i)

        @action(reads=["x"], writes=["x"])
        def node(state: State) -> State:
            seen.append(count())
            return state.update(**step(state))

        return node

    graph = (
        GraphBuilder()
        .with_actions(**{f"n{i}": act(i) for i in range(CHAIN)})
        .with_transitions(*[(f"n{i}", f"n{i + 1}") for i in range(CHAIN - 1)])
        .build()
    )
    burr_app(graph, persister, app_id).run(halt_after=[f"n{CHAIN - 1}"])
    rows = count()
    conn.close()
    reader.close()
    return Written(
        rows=f"{rows / CHAIN:.2f} rows per node (the whole state, as JSON)",
        checked=all(b > a for a, b in itertools.pairwise(seen)),
    )


def check_langgraph(folder: Path) -> Written:
    from langgraph.graph import END, START, StateGraph

    path = folder / "check-langgraph.db"
    conn, reader = connect(path, "NORMAL"), connect(path, "NORMAL")
    saver = langgraph_saver(conn)
    thread = f"chain-{next(fresh)}"
    seen: list[int] = []

    def count(table: str) -> int:
        query = f"SELECT count(*) FROM {table} WHERE thread_id = ?"
        return int(reader.execute(query, (thread,)).fetchone()[0])

    def node(i: int) -> Callable[[ChainState], dict[str, int]]:
        step = state_step(i)

        def probed(state: ChainState) -> dict[str, int]:
            seen.append(count("checkpoints"))
            return step(state)

        return probed

    builder = StateGraph(ChainState)
    previous = START
    for i in range(CHAIN):
        builder.add_node(f"n{i}", node(i))
        builder.add_edge(previous, f"n{i}")
        previous = f"n{i}"
    builder.add_edge(previous, END)
    config = {"configurable": {"thread_id": thread}, "recursion_limit": CHAIN + 10}
    builder.compile(checkpointer=saver).invoke({"x": 0}, config, durability="sync")
    checkpoints, writes = count("checkpoints"), count("writes")
    conn.close()
    reader.close()
    return Written(
        rows=f"{checkpoints / CHAIN:.2f} checkpoints + {writes / CHAIN:.2f} writes rows per "
        "node (a checkpoint holds the channel values and versions)",
        checked=all(b > a for a, b in itertools.pairwise(seen)),
    )


# -------------------------------------------------------------------------- W3: table


def w3(folder: Path, rounds: int) -> str:
    written = {
        "weft": check_weft(folder),
        "Burr": check_burr(folder),
        "LangGraph": check_langgraph(folder),
    }
    lg_builder, b_graph, w_graph = langgraph_chain(), burr_chain(), weft_graph()
    taken: dict[str, dict[str, list[float]]] = {}
    closers: list[Callable[[], None]] = []
    for sync in SETTINGS:
        weft_backend = SQLiteBackend(folder / f"weft-{sync}.db", synchronous=sync)  # type: ignore[arg-type]
        b_conn = connect(folder / f"burr-{sync}.db", sync)
        b_persister = burr_persister(b_conn, folder / f"burr-{sync}.db")
        lg_conn = connect(folder / f"langgraph-{sync}.db", sync)
        lg_app = lg_builder.compile(checkpointer=langgraph_saver(lg_conn))
        floor_conn = connect(folder / f"floor-{sync}.db", sync)
        closers += [weft_backend.close, b_conn.close, lg_conn.close, floor_conn.close]
        cells: dict[str, Cell] = {
            "floor": timed(floor_commits(floor_conn), W3_RUNS),
            "weft": prepared(lambda b=weft_backend: weft_run(b, w_graph)[1], W3_RUNS),
            "weft, older thread": prepared(
                lambda b=weft_backend: weft_run(b, w_graph, older=True)[1], W3_RUNS
            ),
            "Burr": prepared(lambda p=b_persister: burr_run(b_graph, p)[1], W3_RUNS),
            "LangGraph": prepared(lambda a=lg_app: langgraph_run(a)[1], W3_RUNS),
        }
        got = samples(cells, rounds)
        taken[sync] = {name: [v / CHAIN for v in values] for name, values in got.items()}
    for close in closers:
        close()

    does = {
        "floor": "one `INSERT` of a small row, then `COMMIT`",
        "weft": "its state write and its step record: one `INSERT`, checked against other "
        "writers, one transaction",
        "weft, older thread": "the same, on a thread with a newer one after it: its rows go "
        "in the middle of the events table, not at its end",
        "Burr": "its state row (`SQLitePersister.save`, a commit per step)",
        "LangGraph": "a checkpoint and its writes (`SqliteSaver`, `durability='sync'`)",
    }
    lines = [
        "| W3: durable 200-node state chain | synchronous | committed per node | per node | / physical floor | weft vs this |",
        "|---|---|---|---:|---:|---:|",
    ]
    ratio = {sync: {name: paired(taken[sync], "weft", name) for name in does} for sync in SETTINGS}
    to_floor = {
        sync: {name: paired(taken[sync], name, "floor") for name in does} for sync in SETTINGS
    }
    for sync in SETTINGS:
        for name in does:
            label = "physical floor (bare SQLite commit)" if name == "floor" else name
            per_node = statistics.median(taken[sync][name])
            lines.append(
                f"| {label} | {sync} | {does[name]} | {us(per_node)} "
                f"| {to_floor[sync][name]:,.2f}x "
                f"| {fraction(ratio[sync][name], 1) if name in ('Burr', 'LangGraph') else ''} |"
            )
    normal, full = ratio["NORMAL"], ratio["FULL"]
    targets = [
        f"- NORMAL, weft at most 1/2 of Burr per node: {fraction(normal['Burr'], 1)}, "
        f"{verdict(normal['Burr'] <= 0.5)}",
        f"- NORMAL, weft at most 1/20 of LangGraph per node: {fraction(normal['LangGraph'], 1)}, "
        f"{verdict(normal['LangGraph'] <= 0.05)}",
        f"- FULL, weft within 1.25x of the physical floor: {full['floor']:.2f}x, "
        f"{verdict(full['floor'] <= 1.25)}",
    ]
    spread = "; ".join(
        f"{sync} {us(min(taken[sync]['floor']))} to {us(max(taken[sync]['floor']))}"
        for sync in SETTINGS
    )
    rows = [f"- {name}: {w.rows}" for name, w in written.items()]
    checked = all(w.checked for w in written.values())
    return (
        "\n".join(lines)
        + "\n\nAll in WAL mode, one database file per system and setting, a fresh thread "
        "(Burr: app id) per run; opening the run, building the application and compiling "
        f"the graph are not timed. A sample is {W3_RUNS} runs one after the other, each "
        "prepared just before it (so a fresh thread's rows go at the end of weft's events "
        "table), so that each carries its share of the checkpoints of its WAL (a system that writes more pages a "
        "run pays for more of them): Burr, LangGraph and the floor make them on the "
        "committing connection every 1,000 pages, as SQLite does by default, and so does "
        "weft at FULL; weft at NORMAL makes them on a thread and connection of its own "
        "(`PASSIVE`, 50 ms after commits ask), the committing connection only past 4,000 "
        "pages. Per node: the median "
        f"over rounds of the sample's time / ({W3_RUNS} x 200); "
        "the ratios are medians of per-round ratios (samples taken one after the other), "
        "because this VM's disk drifts: the floor's commit ranged over the rounds from "
        f"{spread}. Measured in one run of "
        "each system, read from a second connection:\n"
        + "\n".join(rows)
        + "\n- every node's write was visible to the second connection before the next node "
        f"started, for all three: {'yes' if checked else '**NO**'}\n\nTargets:\n"
        + "\n".join(targets)
    )


# ------------------------------------------------------------------------------ W4


def message(i: int) -> dict[str, str]:
    """A message whose JSON is about 100 bytes."""
    text = f"message {i}: " + "lorem ipsum dolor sit amet " * 3
    return {"role": "assistant" if i % 2 else "user", "content": text[:70]}


MESSAGE_BYTES = len(json.dumps(message(1), separators=(",", ":")))


@dataclass
class Growth:
    first: float  # median us per step, first 100 steps
    last: float  # median us per step, last 100 steps
    size: int

    @property
    def ratio(self) -> float:
        return self.last / self.first


def steps(n: int, step: Callable[[int], Any]) -> tuple[float, float]:
    times = []
    for i in range(n):
        start = time.perf_counter_ns()
        step(i)
        times.append((time.perf_counter_ns() - start) / 1000)
    return statistics.median(times[:100]), statistics.median(times[-100:])


def combined(runs: list[Growth]) -> Growth:
    """Medians over repetitions; the ratio is the median of the runs' ratios."""
    ratio = statistics.median(g.ratio for g in runs)
    last = statistics.median(g.last for g in runs)
    return Growth(first=last / ratio, last=last, size=runs[0].size)


def weft_w4(folder: Path, n: int, rep: int) -> Growth:
    path = folder / f"weft-w4-{rep}.db"

    def append(view: Any, item: dict[str, str]) -> dict[str, Any]:
        return {"messages": item}

    graph = WorkGraph(start_nodes=[WorkGraphNode(append, id="append", state=True)])
    with SQLiteBackend(path, synchronous="NORMAL") as backend:
        run = DurableRun.open(backend, "chat", reducers={"state:messages": reducers.append})
        run.store.declare("state", "messages", reducers.append)
        first, last = steps(n, lambda i: run.run_graph(graph, message(i), run_id=f"step-{i}"))
        assert len(run.store.value("state", "messages")) == n
        run.close()
    return Growth(first, last, db_bytes(path))


class ChatState(TypedDict, total=False):
    message: dict[str, str]
    messages: Annotated[list[dict[str, str]], operator.add]


def langgraph_w4(folder: Path, n: int, rep: int) -> Growth:
    from langgraph.graph import END, START, StateGraph

    def append(state: ChatState) -> dict[str, Any]:
        return {"messages": [state["message"]]}

    builder = StateGraph(ChatState)
    builder.add_node("append", append)
    builder.add_edge(START, "append")
    builder.add_edge("append", END)
    path = folder / f"langgraph-w4-{rep}.db"
    conn = connect(path, "NORMAL")
    app = builder.compile(checkpointer=langgraph_saver(conn))
    config = {"configurable": {"thread_id": "chat"}}
    first, last = steps(n, lambda i: app.invoke({"message": message(i)}, config, durability="sync"))
    assert len(app.get_state(config).values["messages"]) == n
    conn.close()
    return Growth(first, last, db_bytes(path))


def w4(folder: Path, repetitions: int) -> str:
    got = rotated(
        {
            "weft": lambda rep: weft_w4(folder, W4_STEPS, rep),
            "LangGraph": lambda rep: langgraph_w4(folder, W4_STEPS, rep),
        },
        repetitions,
    )
    weft, lg = combined(got["weft"]), combined(got["LangGraph"])
    lines = [
        f"| W4: {W4_STEPS:,} graph steps, one message each | a step | first 100 steps | last 100 steps | last / first | database | bytes per message byte |",
        "|---|---|---:|---:|---:|---:|---:|",
    ]
    for name, g, does in (
        ("weft", weft, "a one-node WorkGraph (state node) on a DurableRun, its own run id"),
        ("LangGraph + SqliteSaver", lg, "one `invoke`, `durability='sync'`"),
    ):
        lines.append(
            f"| {name} | {does} | {us(g.first)} | {us(g.last)} | {g.ratio:.2f}x "
            f"| {g.size / 1e6:,.2f} MB | {g.size / (W4_STEPS * MESSAGE_BYTES):,.1f} |"
        )
    targets = [
        f"- database at least 100x smaller than LangGraph's: {lg.size / weft.size:,.0f}x, "
        f"{verdict(lg.size >= 100 * weft.size)}",
        f"- weft's last 100 steps within 1.2x of its first 100: {weft.ratio:.2f}x, "
        f"{verdict(weft.ratio <= 1.2)}",
    ]
    return (
        "\n".join(lines)
        + f"\n\nEach step is a graph run whose one node appends one {MESSAGE_BYTES}-byte "
        "message to `messages` through an append reducer (weft: the store's `append`; "
        "LangGraph: `Annotated[list, operator.add]`), both in WAL mode at "
        f"`synchronous=NORMAL`. Each system's run is repeated {repetitions} times on a new "
        "file, one run at a time in alternating order; a cell is the median over the "
        "repetitions of the median step (last / first: of the runs' ratios); the database "
        "is the file and its WAL after closing. Targets:\n" + "\n".join(targets)
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer rounds")
    args = parser.parse_args()
    try:
        import burr  # noqa: F401
        import langgraph.checkpoint.sqlite  # noqa: F401
    except ImportError as exc:
        sys.exit(f"needs the bench extra: pip install -e '.[bench]' ({exc})")
    print(f"machine: {machine()}\n")
    with tempfile.TemporaryDirectory(prefix="weft-bench-") as tmp:
        folder = Path(tmp)
        block("w3", w3(folder, 3 if args.quick else 15))
        block("w4", w4(folder, 1 if args.quick else 3))


if __name__ == "__main__":
    main()
