"""Turns of one conversation: weft's TurnRuntime against LangGraph + SqliteSaver, side by side.

    .venv/bin/python bench/bench_turns.py [--quick] [--langgraph-10k]

Each system runs the same turn, 1,000 and 10,000 times on one thread, on a SQLite file:
the caller sends a message; a history list with ``operator.add`` gets the user's entry
and the assistant's; a turn counter goes up by one; a turn-scoped ``route`` is set; the
one node returns the reply. Per-turn time is measured around the whole call (load,
graph, checkpoint commit), as the median of the first and of the last 100 turns; if the
last/first ratio stays near 1, a turn's cost does not grow with the thread's length.

- weft: ``TurnRuntime.run_turn`` on ``SQLiteBackend`` (its default ``synchronous=NORMAL``:
  durable against a process crash) and, for reference, on ``InMemoryBackend``. A turn
  appends its own events (the two new history entries, never the list).
- LangGraph: ``StateGraph.invoke(..., durability="sync")`` with ``SqliteSaver`` (SQLite's
  default ``synchronous=FULL``, an fsync per commit) and at ``NORMAL`` as weft's. Every
  checkpoint stores the whole history again, so its time and file grow with the thread;
  at 10,000 turns that is tens of GB, so it runs only with ``--langgraph-10k`` and is
  otherwise reported as skipped, with a projection from the 1,000-turn run.

Needs the bench extra: pip install -e '.[bench]' (langgraph, langgraph-checkpoint-sqlite).
Never asserted anywhere: the numbers depend on the machine.
"""

from __future__ import annotations

import argparse
import gc
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

from weft.persist import Backend, InMemoryBackend, SQLiteBackend
from weft.runtime import Input, Reducer, TurnRuntime, TurnScoped, node

# ------------------------------------------------------------------ measuring


@dataclass
class Run:
    system: str
    turns: int
    first: float  # median seconds per turn, first 100 turns
    last: float  # median seconds per turn, last 100 turns
    mean_last: float
    size: int  # bytes of the database at the end
    total: float
    cold: float  # seconds of one more turn by a new runtime on the same database

    @property
    def ratio(self) -> float:
        return self.last / self.first


def timed(n: int, turn: Callable[[int], Any]) -> list[float]:
    times = []
    for i in range(n):
        start = time.perf_counter()
        turn(i)
        times.append(time.perf_counter() - start)
    return times


def summarise(system: str, times: list[float], size: int, cold: float) -> Run:
    return Run(
        system=system,
        turns=len(times),
        first=statistics.median(times[:100]),
        last=statistics.median(times[-100:]),
        mean_last=statistics.fmean(times[-100:]),
        size=size,
        total=sum(times),
        cold=cold,
    )


def db_bytes(path: Path) -> int:
    return sum(
        os.path.getsize(p)
        for p in (path, Path(f"{path}-wal"), Path(f"{path}-journal"))
        if p.exists()
    )


def text(i: int) -> str:
    return f"message {i}: how are you today, and what did you think of it?"


# ----------------------------------------------------------------------- weft


class Progress(TypedDict, total=False):
    turn_count: Annotated[int, Reducer(operator.add, each_turn=1)]


class WeftState(TypedDict):
    message: Annotated[str, Input]
    session_id: Annotated[str, Input]
    history: Annotated[list[dict[str, str]], Reducer(operator.add)]
    session_progress: Progress
    route: Annotated[str, TurnScoped]
    response_text: Annotated[str, TurnScoped]


@node(writes=["response_text", "route"])
def respond(state: Any) -> dict[str, Any]:
    return {"response_text": f"reply to {state['message']}", "route": "chat"}


def weft_run(label: str, open_backend: Callable[[], Backend], n: int, path: Path | None) -> Run:
    backend = open_backend()
    runtime = TurnRuntime(WeftState, [respond], backend)
    times = timed(n, lambda i: runtime.run_turn({"message": text(i), "session_id": "chat"}))
    runtime.close()
    if path is not None:  # a restart: a new backend and runtime on the same file
        backend.close()
        backend = open_backend()
    start = time.perf_counter()
    again = TurnRuntime(WeftState, [respond], backend)
    again.run_turn({"message": text(n), "session_id": "chat"})
    cold = time.perf_counter() - start
    state = again.thread_state("chat")
    assert len(state["history"]) == 2 * (n + 1)
    assert state["session_progress"]["turn_count"] == n + 1
    again.close()
    backend.close()
    return summarise(label, times, db_bytes(path) if path else 0, cold)


def weft_sqlite(folder: Path, n: int) -> Run:
    path = folder / f"weft-{n}.db"
    return weft_run("weft TurnRuntime, SQLite (NORMAL)", lambda: SQLiteBackend(path), n, path)


def weft_memory(folder: Path, n: int) -> Run:
    backend = InMemoryBackend()
    return weft_run("weft TurnRuntime, in memory", lambda: backend, n, None)


# ------------------------------------------------------------------ LangGraph


class LGState(TypedDict):
    message: str
    history: Annotated[list[dict[str, str]], operator.add]
    turn_count: Annotated[int, operator.add]
    route: str
    reply: str


def lg_respond(state: LGState) -> dict[str, Any]:
    reply = f"reply to {state['message']}"
    return {"reply": reply, "route": "chat", "history": [{"role": "assistant", "content": reply}]}


def lg_run(folder: Path, n: int, synchronous: str) -> Run:
    from langgraph.checkpoint.sqlite import SqliteSaver
    from langgraph.graph import END, START, StateGraph

    builder = StateGraph(LGState)
    builder.add_node("respond", lg_respond)
    builder.add_edge(START, "respond")
    builder.add_edge("respond", END)
    path = folder / f"lg-{n}-{synchronous}.db"

    def compiled() -> tuple[Any, sqlite3.Connection]:
        conn = sqlite3.connect(path, check_same_thread=False)
        saver = SqliteSaver(conn)
        saver.setup()
        conn.execute(f"PRAGMA synchronous={synchronous}")
        return builder.compile(checkpointer=saver), conn

    graph, conn = compiled()
    config = {"configurable": {"thread_id": "chat"}}

    def turn(i: int) -> None:
        message = text(i)
        graph.invoke(
            {
                "message": message,
                "history": [{"role": "user", "content": message}],
                "turn_count": 1,
                "route": "",  # turn-scoped: reset by the caller at every turn start
            },
            config,
            durability="sync",
        )

    times = timed(n, turn)
    conn.close()
    start = time.perf_counter()
    graph, conn = compiled()  # a restart: a new connection and graph on the same file
    turn(n)
    cold = time.perf_counter() - start
    values = graph.get_state(config).values
    assert len(values["history"]) == 2 * (n + 1) and values["turn_count"] == n + 1
    conn.close()
    return summarise(f"LangGraph SqliteSaver ({synchronous})", times, db_bytes(path), cold)


def lg_projection(small: Run, n: int) -> tuple[float, float]:
    """Seconds and bytes for ``n`` turns from a smaller run: per-turn time grows linearly
    with the turn (the list it stores grows), bytes quadratically. Never less than the
    smaller run's mean per turn times ``n`` (a noisy run can show no growth at all)."""
    growth = max((small.last - small.first) / max(small.turns - 100, 1), 0.0)
    seconds = max(n * small.first + growth * n * n / 2, small.total / small.turns * n)
    size = small.size * (n / small.turns) ** 2
    return seconds, size


# ---------------------------------------------------------------------- table


def us(seconds: float) -> str:
    return f"{seconds * 1e6:,.0f}"


def mb(size: float) -> str:
    return f"{size / 1e6:,.1f}" if size else "-"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="200 and 1,000 turns")
    parser.add_argument(
        "--langgraph-10k", action="store_true", help="run LangGraph at 10,000 turns too"
    )
    args = parser.parse_args()
    try:
        import langgraph.checkpoint.sqlite  # noqa: F401
    except ImportError:
        sys.exit("needs the bench extra: pip install -e '.[bench]' (langgraph-checkpoint-sqlite)")
    sizes = (200, 1000) if args.quick else (1000, 10_000)
    results: list[Run] = []
    skipped: list[str] = []
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch)
        for n in sizes:
            runs: list[Callable[[], Run]] = [
                lambda n=n: weft_sqlite(folder, n),
                lambda n=n: weft_memory(folder, n),
            ]
            if n == sizes[0] or args.langgraph_10k:
                runs.append(lambda n=n: lg_run(folder, n, "FULL"))
                runs.append(lambda n=n: lg_run(folder, n, "NORMAL"))
            else:
                small = next(r for r in results if r.system.endswith("(FULL)"))
                seconds, size = lg_projection(small, n)
                took = f"{seconds:,.0f} s" if seconds < 120 else f"{seconds / 60:,.0f} min"
                skipped.append(
                    f"LangGraph at {n:,} turns was skipped: from the {small.turns:,}-turn run it "
                    f"would take ~{took} and write ~{mb(size)} MB (each checkpoint stores the "
                    "whole history again); pass --langgraph-10k to run it at this size too"
                )
            for make in runs:
                gc.collect()
                results.append(make())
                print(f"  done: {results[-1].system}, {n:,} turns", file=sys.stderr)

    print("\nPer-turn time, one thread on SQLite (us per turn; medians of the first and last")
    print("100 turns; mean of the last 100 includes snapshot and checkpoint spikes)\n")
    print("| turns | system | first 100 | last 100 | last/first | mean last 100 | db MB "
          "| turn after restart (ms) |")  # fmt: skip
    print("|---:|---|---:|---:|---:|---:|---:|---:|")
    for r in results:
        print(f"| {r.turns:,} | {r.system} | {us(r.first)} | {us(r.last)} | {r.ratio:.2f} "
              f"| {us(r.mean_last)} | {mb(r.size)} | {r.cold * 1000:,.1f} |")  # fmt: skip
    for note in skipped:
        print(f"\n{note}")
    print("\nLangGraph / weft (SQLite), per turn:")
    for n in sizes:
        weft = next((r for r in results if r.turns == n and "SQLite" in r.system), None)
        for r in results:
            if weft is not None and r.turns == n and r.system.startswith("LangGraph"):
                print(f"  {n:,} turns, {r.system}: first 100 x{r.first / weft.first:.1f}, "
                      f"last 100 x{r.last / weft.last:.1f}")  # fmt: skip


if __name__ == "__main__":
    main()
