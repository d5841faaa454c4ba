"""A worker for the pause tests: runs one kind of unit on a durable thread in a process of
its own, either until it pauses (``ask``) or with answers (``answer``), and prints what
the run returned as one JSON line. Every effect appends a line to a counter file, so the
test can tell what ran again after the restart.

    python pause_worker.py <backend spec> <kind> <counter file> ask
    python pause_worker.py <backend spec> <kind> <counter file> answer '{"<id>": <answer>}'
"""

from __future__ import annotations

import json
import operator
import os
import sys
from pathlib import Path
from typing import Annotated, Any, TypedDict

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from crash_helpers import open_backend
from weft.agent import Agent
from weft.calls import Plan, Tool
from weft.graph import Paused, ResultPassDownMode, WorkGraph, WorkGraphNode, interrupt
from weft.llm import ScriptedChatModel
from weft.memory import AgentMemory
from weft.persist import DurableRun
from weft.plan import Step, Task, TaskExecutor
from weft.runtime import Input, Reducer, TurnRuntime, TurnScoped, node

COUNTER = Path(os.devnull)


def effect(name: str) -> None:
    with COUNTER.open("a") as out:
        out.write(name + "\n")


# ------------------------------------------------------------------ the units


def graph(run: DurableRun, answers: Any) -> Any:
    """prepare -> [review A, review B] (each asks) -> publish."""

    def prepare(x: int) -> int:
        effect("prepare")
        return x + 1

    def review(x: int, who: str) -> str:
        effect(f"review {who}")
        verdict = interrupt({"reviewer": who, "draft": x})
        return f"{who}:{verdict}"

    def publish(*verdicts: str) -> list[str]:
        effect("publish")
        return sorted(verdicts)

    first = WorkGraphNode(prepare, ResultPassDownMode.ResultAsFirstArg, id="prepare")
    end = WorkGraphNode(publish, id="publish")
    for who in ("A", "B"):
        branch = WorkGraphNode(
            lambda x, who=who: review(x, who), ResultPassDownMode.ResultAsFirstArg, id=who
        )
        first.add_next(branch).add_next(end)
    return run.run_graph(WorkGraph(start_nodes=[first]), 1, answers=answers)


def plan(run: DurableRun, answers: Any) -> Any:
    def fetch(q: str) -> dict[str, str]:
        effect("fetch")
        return {"text": q.upper()}

    def approve(text: str) -> dict[str, Any]:
        effect("approve")
        return {"approved": interrupt({"publish": text})}

    calls = [
        {"_id": "f", "_tool": "fetch", "q": "draft", "_outputPath": "†state.doc"},
        {"_id": "a", "_tool": "approve", "text": "†state.doc.text", "_outputPath": "†state.ok"},
    ]
    tools = [Tool(name="fetch", fn=fetch), Tool(name="approve", fn=approve)]
    result = Plan(calls).run(tools, durable=run, answers=answers)
    return result if isinstance(result, Paused) else result.output


def agent(run: DurableRun, answers: Any) -> Any:
    def reasoner(prompt: str) -> str:
        if '"wired"' in prompt:
            return json.dumps({"instant_response": "sent", "task_status": "Completed"})
        return json.dumps({"next_actions": [[{"type": "wire", "args": {"amount": 50}}]]})

    def wire(amount: int) -> dict[str, Any]:
        effect("wire")
        if not interrupt({"wire": amount}):
            return {"wired": False}
        effect("wired")
        return {"wired": True}

    bot = Agent(reasoner, actor={"wire": wire}, store=run.store, name="bot")
    result = bot.run("pay the invoice", run_id=run.run_id, answers=answers)
    return result if isinstance(result, Paused) else result.output


def executor(run: DurableRun, answers: Any) -> Any:
    def send_email(to: str) -> dict[str, Any]:
        effect("send")
        return {"sent": interrupt({"send to": to})}

    def script(messages: Any, tools: Any) -> Any:
        if messages[-1].role == "tool":
            return ScriptedChatModel.tool_call("finish_step", {"result": "mailed"})
        return ScriptedChatModel.tool_call("send_email", {"to": "bob"})

    task = Task(id="mail", steps=[Step(id="send", instructions="Send the email.")])
    tool = Tool(
        name="send_email",
        fn=send_email,
        parameters={"type": "object", "properties": {"to": {"type": "string"}}},
    )
    ex = TaskExecutor(
        task, model=ScriptedChatModel(script), memory=AgentMemory(run.store), tools=[tool]
    )
    result = ex.execute(run_id=run.run_id, answers=answers)
    return result if isinstance(result, Paused) else result.result


class State(TypedDict):
    message: Annotated[str, Input]
    session_id: Annotated[str, Input]
    history: Annotated[list[dict[str, str]], Reducer(operator.add)]
    response_text: Annotated[str, TurnScoped]


@node(writes=["response_text"])
def reply(state: Any, context: Any) -> dict[str, str]:
    effect("reply")
    if state["message"].startswith("delete"):
        ok = interrupt({"confirm": state["message"]})
        return {"response_text": f"deleted={ok}"}
    return {"response_text": f"turn {context.turn}: {state['message']}"}


def turn(spec: str, answers: Any) -> Any:
    runtime = TurnRuntime(State, [reply], open_backend(spec))
    try:
        if answers is None:
            runtime.run_turn({"message": "hi", "session_id": "chat"})
            return runtime.run_turn({"message": "delete everything", "session_id": "chat"})
        out = runtime.run_turn(thread_id="chat", answers=answers)
        history = runtime.thread_state("chat")["history"]
        return {"out": out, "turns": runtime.turns("chat"), "history": history}
    finally:
        runtime.close()


UNITS = {"graph": graph, "plan": plan, "agent": agent, "executor": executor}


def shown(value: Any) -> Any:
    if isinstance(value, Paused):
        return {"paused": [[q.id, q.question] for q in value.questions]}
    return {"result": value}


def main(argv: list[str]) -> None:
    global COUNTER
    spec, kind, counter, mode = argv[:4]
    COUNTER = Path(counter)
    answers = json.loads(argv[4]) if mode == "answer" else None
    if kind == "turn":
        out = turn(spec, answers)
    else:
        run = DurableRun.open(open_backend(spec), f"thread-{kind}", run_id=f"job-{kind}")
        out = UNITS[kind](run, answers)
        run.close()
    print(json.dumps(shown(out), default=str))


if __name__ == "__main__":
    main(sys.argv[1:])
