"""Pausing for a person, across a restart, and a confirmation carried across turns.

    .venv/bin/python examples/human_in_the_loop.py          # both parts, in two processes

Part 1: a refund workflow on a SQLite thread. The `approve` node asks a person; the process
that ran it ends. A new process (a day later, say) answers, and the run goes on from there:
`lookup` does not run again. Part 2: the turn-level case of a conversation. A destructive
memory command is not carried out at once: the turn keeps it as a pending action in a stored
(`Reducer`) field and asks for confirmation; the next turn's "yes" carries it out without
asking any model.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Annotated, Any, TypedDict

from weft.graph import Paused, ResultPassDownMode, WorkGraph, WorkGraphNode, interrupt
from weft.persist import DurableRun, SQLiteBackend
from weft.runtime import Input, Reducer, TurnRuntime, TurnScoped, node
from weft.store import reducers

FIRST = ResultPassDownMode.ResultAsFirstArg


def refund_graph() -> WorkGraph:
    def lookup(order: str) -> dict[str, Any]:
        print(f"  lookup {order}")
        return {"order": order, "amount": 120}

    def approve(order: dict[str, Any]) -> dict[str, Any]:
        answer = interrupt({"refund": order["amount"], "order": order["order"]})
        return {**order, "approved": answer == "approve"}

    def settle(order: dict[str, Any]) -> str:
        return f"refunded {order['amount']}" if order["approved"] else "refund declined"

    first = WorkGraphNode(lookup, FIRST, id="lookup")
    first.add_next(WorkGraphNode(approve, FIRST, id="approve")).add_next(
        WorkGraphNode(settle, id="settle")
    )
    return WorkGraph(start_nodes=[first])


def part1(db: str, answer: str | None) -> None:
    run = DurableRun.open(SQLiteBackend(db), "refund-42", run_id="refund-42")
    graph = refund_graph()
    if answer is None:
        paused = run.run_graph(graph, "A-42")
        assert isinstance(paused, Paused)
        print(f"  paused; question {paused.questions[0].id}: {paused.question}")
    else:
        pending = run.run_graph(graph, "A-42")  # still paused: read the question again
        assert isinstance(pending, Paused)
        print(f"  answering {answer!r}")
        print("  ->", run.run_graph(graph, "A-42", answers=pending.answer(answer)))
    run.close()


class Memory(TypedDict, total=False):
    pending_action: Annotated[dict[str, Any] | None, Reducer(reducers.replace)]
    action: Annotated[dict[str, Any] | None, TurnScoped]


class State(TypedDict):
    message: Annotated[str, Input]
    session_id: Annotated[str, Input]
    facts: Annotated[list[str], Reducer(reducers.replace)]
    memory_control: Memory
    response_text: Annotated[str, TurnScoped]


@node(writes=["memory_control", "facts", "response_text"])
def memory_control(state: Any, context: Any) -> dict[str, Any]:
    facts = list(state.get("facts") or ["like tea", "live in Oslo"])
    pending = (state.get("memory_control") or {}).get("pending_action")
    message = state["message"].strip().lower()
    if pending:  # the reply to our question: no model needed
        if message in ("yes", "y"):
            kept = [f for f in facts if f != pending["fact"]]
            reply = f"Done: I forgot that you {pending['fact']}."
        else:
            kept, reply = facts, "Cancelled: I kept everything."
        return {"facts": kept, "memory_control": {"pending_action": None}, "response_text": reply}
    if message.startswith("forget that i "):
        fact = message.removeprefix("forget that i ")
        action = {"kind": "delete_fact", "fact": fact}
        question = f"Delete the memory that you {fact}? (yes/no)"
        return {"memory_control": {"pending_action": action, "action": action},
                "response_text": question}  # fmt: skip
    return {"facts": facts, "response_text": f"Noted: {state['message']}"}


def part2(db: str) -> None:
    with TurnRuntime(State, [memory_control], SQLiteBackend(db)) as runtime:
        for message in ("hello", "forget that I like tea", "yes"):
            out = runtime.run_turn({"message": message, "session_id": "chat"})
            print(f"  user: {message!r} -> {out['response_text']}")
        print("  facts:", runtime.thread_state("chat")["facts"])


def main() -> None:
    if len(sys.argv) > 2:  # a phase of part 1, in a process of its own
        part1(sys.argv[1], None if sys.argv[2] == "ask" else sys.argv[2])
        return
    with tempfile.TemporaryDirectory() as folder:
        db = str(Path(folder) / "hitl.db")
        print("Part 1: a run pauses, the process ends, a new process answers")
        for phase in ("ask", "approve"):
            subprocess.run([sys.executable, __file__, db, phase], check=True)
        print("Part 2: a destructive memory command waits for the next turn's yes")
        part2(db)


if __name__ == "__main__":
    main()
