"""Turns of one conversation: weft's TurnRuntime against LangGraph + SqliteSaver, both on
SQLite at the same ``synchronous`` setting, side by side in one run.

    .venv/bin/python bench/bench_turns.py [--quick] [--langgraph-10k]

Each system runs the same turn on one thread: the caller sends a message; a history list
with ``operator.add`` gets the user's entry and the assistant's; a turn counter goes up by
one; a turn-scoped ``route`` is set; the one node returns the reply. Per-turn time is
measured around the whole call (load, graph, checkpoint commit); the table gives the
median of the first and of the last 100 turns: if last/first stays near 1, a turn's cost
does not grow with the thread's length.

- weft: ``TurnRuntime.run_turn`` on ``SQLiteBackend(path, synchronous=...)``. A turn
  appends its own events (the two new history entries, never the list).
- LangGraph: ``StateGraph.invoke(..., durability="sync")`` with ``SqliteSaver`` on a
  connection in WAL mode at the same ``synchronous``. Every checkpoint stores the whole
  history again, so its time and file grow with the thread; at 10,000 turns that is tens
  of GB, so it runs only with ``--langgraph-10k`` and is otherwise reported as skipped,
  with a projection from the 1,000-turn run.

At 1,000 turns each system's run is repeated (three times; once with --quick) on a new
file, one run at a time, in alternating order, and the table gives the medians: running
the two side by side turn by turn would put LangGraph's growing checkpoint I/O inside
weft's timings.
Needs the bench extra: pip install -e '.[bench]'.
"""

from __future__ import annotations

import argparse
import operator
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Protocol, TypedDict

from harness import block, connect, db_bytes, machine, rotated

from weft.persist import SQLiteBackend
from weft.runtime import Input, Reducer, TurnRuntime, TurnScoped, node

SETTINGS = ("NORMAL", "FULL")


def text(i: int) -> str:
    return f"message {i}: how are you today, and what did you think of it?"


class Conversation(Protocol):
    name: str

    def turn(self, i: int) -> None: ...

    def finish(self, n: int) -> tuple[int, float]:
        """Close, check the thread, time one more turn after a restart; (bytes, seconds)."""
        ...


@dataclass
class Row:
    name: str
    synchronous: str
    turns: int
    first: float  # median seconds per turn, first 100 turns
    last: float  # median seconds per turn, last 100 turns
    size: int
    cold: float  # seconds of one turn by a new runtime on the same database

    @property
    def ratio(self) -> float:
        return self.last / self.first


def alone(conversation: Conversation, n: int, synchronous: str) -> Row:
    """``n`` turns of one conversation, timed one by one; then its row."""
    spent = []
    for i in range(n):
        start = time.perf_counter()
        conversation.turn(i)
        spent.append(time.perf_counter() - start)
    size, cold = conversation.finish(n)
    first, last = statistics.median(spent[:100]), statistics.median(spent[-100:])
    return Row(conversation.name, synchronous, n, first, last, size, cold)


def combined(rows: list[Row]) -> Row:
    """The medians of several repetitions of one system's run (the ratio: of theirs)."""
    ratio = statistics.median(r.ratio for r in rows)
    last = statistics.median(r.last for r in rows)
    return Row(
        rows[0].name,
        rows[0].synchronous,
        rows[0].turns,
        first=last / ratio,
        last=last,
        size=rows[0].size,
        cold=statistics.median(r.cold for r in rows),
    )


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


class WeftConversation:
    name = "weft TurnRuntime"

    def __init__(self, path: Path, synchronous: str) -> None:
        self.path, self.synchronous = path, synchronous
        self.backend = self.open()
        self.runtime = TurnRuntime(WeftState, [respond], self.backend)

    def open(self) -> SQLiteBackend:
        return SQLiteBackend(self.path, synchronous=self.synchronous)  # type: ignore[arg-type]

    def turn(self, i: int) -> None:
        self.runtime.run_turn({"message": text(i), "session_id": "chat"})

    def finish(self, n: int) -> tuple[int, float]:
        self.runtime.close()
        self.backend.close()
        start = time.perf_counter()
        backend = self.open()  # a restart: a new backend and runtime on the same file
        again = TurnRuntime(WeftState, [respond], backend)
        again.run_turn({"message": text(n), "session_id": "chat"})
        cold = time.perf_counter() - start
        state = again.thread_state("chat")
        assert len(state["history"]) == 2 * (n + 1)
        assert state["session_progress"]["turn_count"] == n + 1
        again.close()
        backend.close()
        return db_bytes(self.path), cold


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


class LangGraphConversation:
    name = "LangGraph + SqliteSaver"

    def __init__(self, path: Path, synchronous: str) -> None:
        from langgraph.graph import END, START, StateGraph

        self.path, self.synchronous = path, synchronous
        self.config = {"configurable": {"thread_id": "chat"}}
        builder = StateGraph(LGState)
        builder.add_node("respond", lg_respond)
        builder.add_edge(START, "respond")
        builder.add_edge("respond", END)
        self.builder = builder
        self.graph, self.conn = self.compiled()

    def compiled(self) -> tuple[Any, Any]:
        from langgraph.checkpoint.sqlite import SqliteSaver

        conn = connect(self.path, self.synchronous)
        saver = SqliteSaver(conn)
        saver.setup()
        return self.builder.compile(checkpointer=saver), conn

    def turn(self, i: int) -> None:
        message = text(i)
        self.graph.invoke(
            {
                "message": message,
                "history": [{"role": "user", "content": message}],
                "turn_count": 1,
                "route": "",  # turn-scoped: reset by the caller at every turn start
            },
            self.config,
            durability="sync",
        )

    def finish(self, n: int) -> tuple[int, float]:
        self.conn.close()
        start = time.perf_counter()
        self.graph, self.conn = self.compiled()  # a restart: a new connection and graph
        self.turn(n)
        cold = time.perf_counter() - start
        values = self.graph.get_state(self.config).values
        assert len(values["history"]) == 2 * (n + 1) and values["turn_count"] == n + 1
        self.conn.close()
        return db_bytes(self.path), cold


def projection(small: Row, n: int) -> tuple[float, float]:
    """Seconds and bytes for ``n`` turns from a smaller run: per-turn time grows linearly
    with the turn (the list it stores grows), bytes quadratically."""
    growth = max((small.last - small.first) / max(small.turns - 100, 1), 0.0)
    return n * small.first + growth * n * n / 2, small.size * (n / small.turns) ** 2


# ---------------------------------------------------------------------- table


def table(rows: list[Row], notes: list[str], small: int, repetitions: int) -> str:
    lines = [
        "| turns | system | synchronous | first 100 | last 100 | last / first | database | turn after a restart |",
        "|---:|---|---|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        lines.append(
            f"| {r.turns:,} | {r.name} | {r.synchronous} | {r.first * 1e6:,.0f} us "
            f"| {r.last * 1e6:,.0f} us | {r.ratio:.2f}x | {r.size / 1e6:,.1f} MB "
            f"| {r.cold * 1e3:,.1f} ms |"
        )
    ratios = []
    for r in rows:
        if r.name.startswith("LangGraph"):
            weft = next(
                w
                for w in rows
                if w.name.startswith("weft")
                and (w.turns, w.synchronous) == (r.turns, r.synchronous)
            )
            ratios.append(
                f"- {r.turns:,} turns at {r.synchronous}: weft's turn is 1/{r.first / weft.first:,.0f} "
                f"of LangGraph's over the first 100 turns and 1/{r.last / weft.last:,.0f} over "
                f"the last 100; its database 1/{r.size / weft.size:,.0f} of the size"
            )
    return (
        "\n".join(lines)
        + "\n\nOne thread; per-turn time around the whole call (load, graph, commit), "
        "medians of the first and the last 100 turns; both systems on SQLite in WAL mode at "
        f"the setting shown. At {small:,} turns each system's run is repeated {repetitions} "
        "times on a new file, one run at a time in alternating order, and each cell is the median over "
        "the repetitions (last / first: the median of the runs' ratios). The restart "
        "column is one more turn by a new runtime on the same file.\n" + "\n".join(ratios + notes)
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="200 and 1,000 turns")
    parser.add_argument("--langgraph-10k", action="store_true", help="LangGraph at 10,000 too")
    args = parser.parse_args()
    try:
        import langgraph.checkpoint.sqlite  # noqa: F401
    except ImportError:
        sys.exit("needs the bench extra: pip install -e '.[bench]' (langgraph-checkpoint-sqlite)")
    print(f"machine: {machine()}\n")
    small, large = (200, 1000) if args.quick else (1000, 10_000)
    repetitions = 1 if args.quick else 3
    rows: list[Row] = []
    notes: list[str] = []
    with tempfile.TemporaryDirectory(prefix="weft-bench-") as scratch:
        folder = Path(scratch)
        for sync in SETTINGS:
            got = rotated(
                {
                    "weft": lambda rep, sync=sync: alone(
                        WeftConversation(folder / f"weft-{small}-{sync}-{rep}.db", sync),
                        small,
                        sync,
                    ),
                    "LangGraph": lambda rep, sync=sync: alone(
                        LangGraphConversation(folder / f"lg-{small}-{sync}-{rep}.db", sync),
                        small,
                        sync,
                    ),
                },
                repetitions,
            )
            rows += [combined(got["weft"]), combined(got["LangGraph"])]
            print(f"  done: {small:,} turns at {sync}", file=sys.stderr)
        # The long thread: weft at NORMAL; LangGraph only on request (tens of GB).
        rows.append(alone(WeftConversation(folder / f"weft-{large}.db", "NORMAL"), large, "NORMAL"))
        if args.langgraph_10k:
            lg_long = LangGraphConversation(folder / f"lg-{large}.db", "NORMAL")
            rows.append(alone(lg_long, large, "NORMAL"))
        else:
            lg = next(
                r for r in rows if r.name.startswith("LangGraph") and r.synchronous == "NORMAL"
            )
            seconds, size = projection(lg, large)
            took = f"{seconds:,.0f} s" if seconds < 120 else f"{seconds / 60:,.0f} min"
            notes.append(
                f"- LangGraph at {large:,} turns was skipped: from its {small:,}-turn run at "
                f"NORMAL it would take ~{took} and write ~{size / 1e9:,.1f} GB (each "
                "checkpoint stores the whole history again); `--langgraph-10k` runs it"
            )
    block("turns", table(rows, notes, small, repetitions))


if __name__ == "__main__":
    main()
