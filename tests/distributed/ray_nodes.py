"""What the distributed tests run: node functions, tools and a scripted model, in a
module of their own so that Ray workers import them by name (the suite puts this folder
on their PYTHONPATH)."""

from __future__ import annotations

import functools
import itertools
import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from weft.calls import Plan, tool
from weft.graph import WorkGraph, WorkGraphNode
from weft.llm import ChatMessage, ScriptedChatModel
from weft.plan import Step, Task, TaskPlan
from weft.store import reducers

PG = "postgresql://postgres@127.0.0.1:5432/weft_test"
REDUCERS = {"state:items": reducers.append, "state:total": reducers.add}

# ---------------------------------------------------------------- a fan-out of state nodes


def seed(view: Any, topic: str) -> dict[str, Any]:
    return {"topic": topic, "items": f"seed:{len(view.get('items', []))}"}


def branch(k: int, view: Any, topic: str) -> dict[str, Any]:
    # reads its view (the seed's writes, never a sibling's) and returns a delta
    return {"items": f"{view['topic']}-{k}:{len(view['items'])}", "total": k * k}


def join(view: Any, topic: str) -> dict[str, Any]:
    return {"summary": {"items": len(view["items"]), "total": view["total"], "topic": topic}}


def fan_out_graph(width: int = 6) -> WorkGraph:
    start = WorkGraphNode(seed, state=True)
    end = WorkGraphNode(join, state=True)
    for k in range(width):
        start.add_next(WorkGraphNode(functools.partial(branch, k), state=True, id=f"b{k}"))
        start.next[-1].add_next(end)
    return WorkGraph(start_nodes=[start])


# ---------------------------------------------------------------- a plan over instances


@tool
def score(user_id: int) -> dict[str, Any]:
    "A score for one user."
    return {"user": user_id, "score": user_id * 10, "pid": 0}


def instance_plan() -> Plan:
    return Plan(
        [
            {
                "_tool": "score",
                "_instance": "*",
                "user_id": "†input.userId",
                "_outputPath": "†state.result",
            }
        ]
    )


INSTANCES = {f"u{n}": {"userId": n} for n in range(1, 6)}

# ---------------------------------------------------------------- tasks whose steps call a tool


@tool
def lookup(q: str) -> dict[str, Any]:
    "Look a topic up."
    return {"q": q, "hits": len(q)}


def task_model() -> ScriptedChatModel:
    """Calls ``lookup`` once per step, then finishes the step with what it returned."""

    def reply(messages: Sequence[ChatMessage], tools: Any) -> Any:
        last = messages[-1]
        if last.role == "tool":
            found = json.loads(last.content or "{}")
            return ScriptedChatModel.tool_call("finish_step", {"result": found}, id="finish")
        asked = sum(1 for m in messages if m.role == "user")
        return ScriptedChatModel.tool_call("lookup", {"q": f"otters-{asked}"}, id="look")

    return ScriptedChatModel(reply)


def task_plan() -> TaskPlan:
    return TaskPlan(
        tasks=[
            Task(id="A", steps=[Step(id="research", instructions="Find sources.")]),
            Task(id="B", steps=[Step(id="survey", instructions="Survey the field.")]),
            Task(
                id="C",
                depends_on=["A", "B"],
                steps=[Step(id="report", instructions="Write it up.")],
            ),
        ]
    )


# ---------------------------------------------------------------- faults


def effect(path: str, line: str) -> None:
    """Append one line to a file: the side effects a test counts."""
    with Path(path).open("a") as f:
        f.write(line + "\n")
        f.flush()
        os.fsync(f.fileno())


def dies_once(log: str, k: int, x: int) -> int:
    """Node ``k`` of a fan-out: the first attempt of node 0 kills its worker process."""
    tries = Path(log).read_text().count(f"attempt {k}\n") if Path(log).exists() else 0
    effect(log, f"attempt {k}")
    if k == 0 and tries == 0:
        os._exit(1)  # the worker dies mid-task, as a killed process would
    effect(log, f"done {k}")
    return x + k


def always_dies(log: str, x: int) -> int:
    """A node whose worker dies on every attempt."""
    effect(log, "dying")
    os._exit(1)


def slow_step(log: str, k: int, x: int) -> int:
    """Step ``k`` of a chain: a little work, then its effect, then the next number."""
    import time

    time.sleep(0.4)
    effect(log, f"done {k}")
    return x + 1


def chain_graph(log: str, length: int = 6) -> WorkGraph:
    from weft.graph import ResultPassDownMode

    nodes = [
        WorkGraphNode(
            functools.partial(slow_step, log, k), ResultPassDownMode.ResultAsFirstArg, id=f"s{k}"
        )
        for k in range(length)
    ]
    for a, b in itertools.pairwise(nodes):
        a.add_next(b)
    return WorkGraph(start_nodes=[nodes[0]])


def returns_a_set(x: int) -> set[int]:
    return {x}


def reads_shared(view: Any) -> dict[str, Any]:
    return {"seen": view.read("shared", "notes")}


@tool
def flaky(q: str, log: str) -> dict[str, Any]:
    "Look a topic up; the first attempt's worker dies."
    tries = Path(log).read_text().count("attempt\n") if Path(log).exists() else 0
    effect(log, "attempt")
    if tries == 0:
        os._exit(1)
    effect(log, f"done {q}")
    return {"q": q}


def flaky_model(log: str) -> ScriptedChatModel:
    """Calls ``flaky`` once, then finishes the step with what it returned."""

    def reply(messages: Sequence[ChatMessage], tools: Any) -> Any:
        last = messages[-1]
        if last.role == "tool":
            found = json.loads(last.content or "{}")
            return ScriptedChatModel.tool_call("finish_step", {"result": found}, id="finish")
        return ScriptedChatModel.tool_call("flaky", {"q": "otters", "log": log}, id="look")

    return ScriptedChatModel(reply)


# ---------------------------------------------------------------- an agent's actors


def square(n: int) -> dict[str, int]:
    """A plain actor (no extras): it runs where the executor runs it."""
    return {"square": n * n}


def fetch_page(url: str) -> str:
    raise LookupError(f"no page at {url}")


def note(text: str, store: Any) -> str:
    """An actor that takes the agent's store: it stays on the driver."""
    store.write("state", "notes/last", text, source="note")
    return f"noted {text}"


def act(action: Any) -> dict[str, Any]:
    """A single actor for every type: called with the action itself."""
    return {
        "type": action.type,
        "args": dict(action.args),
        "target": action.target,
        "pid": os.getpid(),
    }


def ask(question: str) -> Any:
    from weft.graph import interrupt

    return interrupt(question)
