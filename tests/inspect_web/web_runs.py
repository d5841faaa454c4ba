"""Real weft runs on a SQLite file, for the inspector's tests: run as a script in a process
of its own (``python web_runs.py <scene> <db> ...``), as a user's program would.

Scenes:
- ``seed DB``: a graph run that completed (memory written with titles), a run that paused
  for a person, a fork of the completed thread, and a thread whose id has a slash, spaces
  and a ``#`` and whose memory holds HTML a hostile model might write (``ODD``), and an
  agent's run of two iterations (``agent``).
- ``writer DB THREAD N PERIOD``: writes N memory entries to THREAD, one every PERIOD seconds.
- ``waiter DB THREAD RUN TIMEOUT``: runs a graph that pauses, prints ``paused <id>``, waits
  (reading the thread again) until someone answers, runs it again and prints ``done <output>``.
"""

from __future__ import annotations

import itertools
import sys
import time
from typing import Any

from weft.agent import PromptBasedActionAgent
from weft.graph import Paused, ResultPassDownMode, WorkGraph, WorkGraphNode, interrupt
from weft.llm import ScriptedReasoner
from weft.memory import AgentMemory
from weft.persist import DurableRun, SQLiteBackend
from weft.store import RunLog

HOSTILE = "<img src=x onerror=\"document.title='pwned'\">"
"""A title a hostile model might write: the page must show it as text, never run it."""
ODD = "team/ünï code #1"
"""A thread id that a URL must escape."""
THREADS = frozenset({"research", "research-fork", "review", ODD, "agent"})
"""The threads ``seed`` makes."""


def research(topic: str) -> dict[str, Any]:
    return {"topic": topic, "notes": f"{topic} hold hands while they sleep"}


def summarise(found: dict[str, Any]) -> str:
    return f"Summary: {found['notes']}"


def review(text: str) -> str:
    verdict = interrupt({"approve?": text})
    return text if verdict == "yes" else "(withheld)"


def publish(text: str) -> str:
    return f"published: {text}"


def chain(*steps: tuple[Any, str]) -> WorkGraph:
    nodes = [WorkGraphNode(fn, ResultPassDownMode.ResultAsFirstArg, id=name) for fn, name in steps]
    for before, after in itertools.pairwise(nodes):
        before.add_next(after)
    return WorkGraph(start_nodes=[nodes[0]])


def review_graph() -> WorkGraph:
    return chain((summarise, "summarise"), (review, "review"), (publish, "publish"))


def seed(db: str) -> None:
    backend = SQLiteBackend(db)
    run = DurableRun.open(backend, "research", run_id="research-1")
    memory = AgentMemory(run.store)
    memory.set("input:topic", "otters", source="user")
    run.run_graph(chain((research, "research"), (summarise, "summarise")), "otters")
    memory.set(
        "shared:finding",
        {"fact": "otters hold hands"},
        source="researcher",
        title="Key finding",
        description="What the research node found about otters",
    )
    memory.set("task:report", "a short report", source="writer", title="Report")
    run.store.write("state", "plan", "A", source="planner")
    run.store.write("state", "plan", "B", source="planner")
    run.fork(run.step - 1, values={"state:plan": "C"}, thread_id="research-fork")
    odd = DurableRun.open(backend, ODD, run_id="odd-1")
    odd.store.write("state", "note", "a thread id with a slash, spaces and a #")
    AgentMemory(odd.store).set("shared:odd", "<b>not bold</b>", source="model", title=HOSTILE)
    agent_run(backend)
    paused = DurableRun.open(backend, "review", run_id="review-1")
    result = paused.run_graph(review_graph(), {"notes": "beavers build dams"})
    assert isinstance(result, Paused), result
    backend.close()


def agent_run(backend: SQLiteBackend) -> None:
    """An agent of two iterations, the first calling a tool (nested units of a run)."""
    reasoner = ScriptedReasoner(
        [
            '{"next_actions": [[{"type": "Search", "target": "otter facts"}]]}',
            '{"instant_response": "otters hold hands", "task_status": "Completed"}',
        ]
    )

    def search(target: str) -> dict[str, Any]:
        return {"hits": [f"{target}: they hold hands"]}

    run = DurableRun.open(backend, "agent", run_id="agent-run")
    agent = PromptBasedActionAgent(reasoner, actor={"Search": search}, store=run.store)
    agent.run("Find an otter fact", run_id="job-1")
    run.close()


def writer(db: str, thread: str, count: int, period: float) -> None:
    backend = SQLiteBackend(db)
    run = DurableRun.open(backend, thread, run_id=f"{thread}-writer")
    memory = AgentMemory(run.store)
    for n in range(count):
        time.sleep(period)
        memory.set(
            f"shared:note-{n}",
            {"n": n},
            source="live-writer",
            title=f"Note {n}",
            description=f"written live, number {n}",
        )
        print(f"wrote {n}", flush=True)
    backend.close()


def waiter(db: str, thread: str, run_id: str, timeout: float) -> None:
    backend = SQLiteBackend(db)
    run = DurableRun.open(backend, thread, run_id=run_id)
    graph = review_graph()
    first = run.run_graph(graph, {"notes": "herons wait"})
    assert isinstance(first, Paused), first
    print(f"paused {first.questions[0].id}", flush=True)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        time.sleep(0.1)
        run.reload()
        if not RunLog(run.store, run_id).pending():
            break
    else:
        print("timeout", flush=True)
        sys.exit(3)
    print(f"done {run.run_graph(graph, {'notes': 'herons wait'})}", flush=True)
    backend.close()


if __name__ == "__main__":
    scene, db, *rest = sys.argv[1:]
    if scene == "seed":
        seed(db)
    elif scene == "writer":
        writer(db, rest[0], int(rest[1]), float(rest[2]))
    elif scene == "waiter":
        waiter(db, rest[0], rest[1], float(rest[2]))
    else:
        sys.exit(f"unknown scene {scene!r}")
