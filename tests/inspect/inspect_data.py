"""Threads made by real runs, for the inspector's tests: a WorkGraph on a DurableRun with a
keyed call, an agent, a plan of tool calls, turns of a turn runtime, and a paused run."""

from __future__ import annotations

from typing import Annotated, Any, TypedDict

from weft.agent import PromptBasedActionAgent
from weft.calls import Plan, Tool
from weft.graph import Paused, ResultPassDownMode, WorkGraph, WorkGraphNode, interrupt
from weft.llm import ScriptedChatModel, ScriptedReasoner
from weft.memory import AgentMemory
from weft.persist import Backend, DurableRun
from weft.plan import ParallelTaskExecutor, Step, Task, TaskPlan
from weft.runtime import Input, Reducer, TurnRuntime, TurnScoped, node
from weft.store import reducers

FIRST = ResultPassDownMode.ResultAsFirstArg


def pipeline_graph() -> WorkGraph:
    """fetch -> summarize -> publish, writing to the store as it goes."""

    def fetch(topic: str) -> dict[str, Any]:
        return {"topic": topic, "pages": 3}

    def summarize(found: dict[str, Any]) -> str:
        return f"{found['pages']} pages on {found['topic']}"

    def publish(text: str) -> str:
        return text.upper()

    first = WorkGraphNode(fetch, FIRST, id="fetch")
    first.add_next(WorkGraphNode(summarize, FIRST, id="summarize")).add_next(
        WorkGraphNode(publish, id="publish")
    )
    return WorkGraph(start_nodes=[first])


def refund_graph() -> WorkGraph:
    """lookup -> approve (asks a person) -> settle."""

    def lookup(order: str) -> dict[str, Any]:
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


def make_pipeline(backend: Backend, thread: str = "pipeline") -> Any:
    """A completed graph run with memory writes and a keyed call of the run as a whole."""
    run = DurableRun.open(backend, thread, run_id="pipe-1")
    memory = AgentMemory(run.store)
    memory.set("shared:goal", "write a post", title="Goal", description="what the user asked")
    memory.set("input:topic", "weft")
    out = run.run_graph(pipeline_graph(), "weft")
    run.call_once("notify", lambda: {"sent": True})
    run.store.write("state", "draft", "v1", source="editor")
    run.store.write("state", "draft", "v2", source="editor")
    run.close()
    return out


def make_refund(backend: Backend, thread: str = "refund") -> Paused:
    """A graph run paused on a question."""
    run = DurableRun.open(backend, thread, run_id="refund-1")
    paused = run.run_graph(refund_graph(), "A-42")
    run.close()
    assert isinstance(paused, Paused)
    return paused


def make_agent(backend: Backend, thread: str = "agent") -> Any:
    """An agent run of two iterations, recorded with a run id."""
    reasoner = ScriptedReasoner(
        [
            '{"next_actions": [[{"type": "Search", "target": "weft release date"}]]}',
            '{"instant_response": "7 May 2026", "task_status": "Completed"}',
        ]
    )

    def search(target: str) -> dict[str, Any]:
        return {"hits": [f"{target}: 7 May 2026"]}

    run = DurableRun.open(backend, thread, run_id="agent-run")
    agent = PromptBasedActionAgent(reasoner, actor={"Search": search}, store=run.store)
    result = agent.run("Find the release date", run_id="job-1")
    run.close()
    return result


def make_plan(backend: Backend, thread: str = "plan") -> Any:
    """A plan of two tool calls linked by a reference, recorded on a durable run."""
    fetch = Tool(
        name="fetchUserProfile",
        fn=lambda userId: {"id": userId, "name": "Ada"},
        parameters={"type": "object", "properties": {"userId": {"type": "integer"}}},
    )
    greet = Tool(
        name="greet",
        fn=lambda name: f"Hello {name}",
        parameters={"type": "object", "properties": {"name": {"type": "string"}}},
    )
    plan = Plan(
        [
            {"_tool": "fetchUserProfile", "userId": 7, "_outputPath": "†state.profile"},
            {"_tool": "greet", "name": "†state.profile.name", "_outputPath": "†state.greeting"},
        ]
    )
    run = DurableRun.open(backend, thread, run_id="plan-run")
    result = plan.run([fetch, greet], run_id="plan-1", durable=run)
    run.close()
    return result


class ChatState(TypedDict):
    message: Annotated[str, Input]
    session_id: Annotated[str, Input]
    history: Annotated[list[str], Reducer(reducers.append)]
    response_text: Annotated[str, TurnScoped]


@node(writes=["history", "response_text"])
def respond(state: Any, context: Any) -> dict[str, Any]:
    return {"history": state["message"], "response_text": f"echo {state['message']}"}


def make_chat(backend: Backend, thread: str = "chat") -> None:
    """Two turns of a turn runtime on one thread."""
    with TurnRuntime(ChatState, [respond], backend) as runtime:
        for message in ("hello", "again"):
            runtime.run_turn({"message": message, "session_id": thread})


@node(writes=["history", "response_text"])
def confirm(state: Any, context: Any) -> dict[str, Any]:
    verdict = interrupt({"confirm": state["message"]})
    return {"history": f"{state['message']}: {verdict}", "response_text": str(verdict)}


def make_paused_turn(backend: Backend, thread: str = "confirm") -> Any:
    """A turn whose node asks a person: the turn runtime's pause."""
    with TurnRuntime(ChatState, [confirm], backend) as runtime:
        return runtime.run_turn({"message": "delete it", "session_id": thread})


def send(to: str) -> dict[str, Any]:
    return {"sent": interrupt({"send to": to})}


def mail_script(messages: Any, tools: Any) -> Any:
    """A model that calls the tool ``send``, then finishes the step with its result."""
    results = [m for m in messages if m.role == "tool"]
    if not results:
        return ScriptedChatModel.tool_call("send", {"to": "bob"})
    return ScriptedChatModel.tool_call("finish_step", {"result": results[-1].content})


def mail_executor(run: DurableRun) -> ParallelTaskExecutor:
    """A plan of one task whose step's tool asks a person: the task's run nests in the
    plan's (run ids ``job`` and ``job.mail``)."""
    plan = TaskPlan(tasks=[Task(id="mail", steps=[Step(id="send", instructions="Send it.")])])
    return ParallelTaskExecutor(
        plan,
        model=ScriptedChatModel(mail_script),
        memory=AgentMemory(run.store),
        tools=[Tool(name="send", fn=send, parameters={"type": "object"})],
    )


def make_paused_task(backend: Backend, thread: str = "mail") -> Paused:
    """An executor's run paused inside a nested run."""
    run = DurableRun.open(backend, thread, run_id="executor")
    paused = mail_executor(run).execute(run_id="job")
    run.close()
    assert isinstance(paused, Paused)
    return paused


def make_all(backend: Backend) -> None:
    make_pipeline(backend)
    make_refund(backend)
    make_agent(backend)
    make_plan(backend)
    make_chat(backend)
    make_paused_turn(backend)


def main(argv: list[str]) -> None:
    """``python inspect_data.py DB [SCHEMA]``: make every thread in the SQLite file DB, or
    in the PostgreSQL DSN DB (tables in SCHEMA), from a process of its own."""
    from weft.persist import PostgresBackend, SQLiteBackend

    db = argv[0]
    if db.startswith("postgresql://"):
        backend: Backend = PostgresBackend(db, schema=argv[1])
    else:
        backend = SQLiteBackend(db)
    with backend:
        make_all(backend)


if __name__ == "__main__":
    import sys

    main(sys.argv[1:])
