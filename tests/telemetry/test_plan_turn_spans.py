"""A plan of tool calls, a turn and a durable run as spans."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, TypedDict

import pytest
from opentelemetry.trace import StatusCode
from trace_helpers import Traced

from weft.calls import Plan, Tool
from weft.errors import PlanRunError
from weft.llm import ScriptedReasoner, areason
from weft.persist import DurableRun, SQLiteBackend
from weft.runtime import Input, TurnRuntime, TurnScoped, WorkflowContext, node
from weft.store import CallNote, RunNote

PLAN = [
    {"_tool": "fetch", "_id": "profile", "user": 7, "_outputPath": "†state.profile"},
    {"_tool": "greet", "_id": "hello", "who": "†state.profile.name", "_outputPath": "†state.out"},
]


def fetch(user: int) -> dict[str, Any]:
    return {"id": user, "name": "Ada"}


def test_each_call_of_a_plan_is_a_tool_span_under_its_node(traced: Traced) -> None:
    greet = Tool(name="greet", fn=lambda who: f"hello {who}")
    result = Plan(PLAN).run([Tool(name="fetch", fn=fetch), greet])
    assert result.store.value("state", "out") == "hello Ada"
    assert traced.parent_name("execute_tool fetch") == "node profile"
    assert traced.parent_name("execute_tool greet") == "node hello"
    run = traced.parent_name("node profile")
    assert run is not None and run.startswith("graph ")
    fetch_attrs = traced.attrs("execute_tool fetch")
    assert fetch_attrs["gen_ai.tool.call.id"] == "profile"
    assert fetch_attrs["gen_ai.operation.name"] == "execute_tool"
    assert fetch_attrs["weft.unit"].startswith("profile#")


def test_a_failing_call_marks_the_tool_its_node_and_the_run(traced: Traced) -> None:
    def greet(who: str) -> str:
        raise RuntimeError(f"no greeting for {who}")

    with pytest.raises(PlanRunError):
        Plan(PLAN).run([Tool(name="fetch", fn=fetch), Tool(name="greet", fn=greet)])
    for name in ("execute_tool greet", "node hello"):
        span = traced.one(name)
        assert span.status.status_code is StatusCode.ERROR, name
        assert "no greeting for Ada" in (span.status.description or "")
    assert traced.one("execute_tool fetch").status.status_code is StatusCode.UNSET
    run = traced.parent(traced.one("node hello"))
    assert run is not None and run.status.status_code is StatusCode.ERROR


def test_a_durable_run_resumed_shows_recorded_calls_as_skipped(
    traced: Traced, tmp_path: Path
) -> None:
    fail = [True]

    def greet(who: str) -> str:
        if fail[0]:
            fail[0] = False
            raise ConnectionError("try later")
        return f"hello {who}"

    tools = [Tool(name="fetch", fn=fetch), Tool(name="greet", fn=greet)]
    backend = SQLiteBackend(tmp_path / "runs.db")
    with (
        DurableRun.open(backend, "t-1", run_id="job-9", notes="eager") as run,
        pytest.raises(PlanRunError),
    ):
        Plan(PLAN).run(tools, durable=run)
    traced.exporter.clear()
    with DurableRun.open(backend, "t-1", run_id="job-9", notes="eager") as run:
        Plan(PLAN).run(tools, durable=run)
    assert traced.attrs("node profile")["weft.unit.status"] == "skipped"
    assert traced.attrs("node profile")["weft.skipped.reason"] == "recorded"
    assert traced.all("execute_tool fetch") == []  # restored, not called again
    assert traced.attrs("node hello")["weft.unit.status"] == "finished"
    assert traced.attrs("execute_tool greet")["weft.run_id"] == "job-9"
    assert traced.parent_name("node hello") == "graph job-9"
    with DurableRun.open(backend, "t-1", run_id="job-9") as run:  # notes="eager" kept them
        notes = [e.value for e in run.store.events() if e.op == "note"]
    assert [n.event for n in notes if isinstance(n, RunNote)] == [
        "started",
        "failed",
        "started",
        "finished",
    ]
    assert [(n.name, n.event) for n in notes if isinstance(n, CallNote)] == [
        ("fetch", "started"),
        ("fetch", "finished"),
        ("greet", "started"),
        ("greet", "failed"),
        ("greet", "started"),
        ("greet", "finished"),
    ]


class Chat(TypedDict):
    message: Annotated[str, Input]
    session_id: Annotated[str, Input]
    reply: Annotated[str, TurnScoped]


@node(writes=["reply"])
async def answer(state: Any, context: WorkflowContext) -> dict[str, str]:
    completion = await areason(context.llm_client, state["message"])
    return {"reply": completion.text}


def test_a_turn_is_a_span_with_its_thread_and_its_graph_under_it(
    traced: Traced, tmp_path: Path
) -> None:
    runtime = TurnRuntime(
        Chat,
        [answer],
        SQLiteBackend(tmp_path / "chat.db"),
        context=WorkflowContext(llm_client=ScriptedReasoner(["Hello!", "Again!"])),
    )
    runtime.run_turn({"message": "hi", "session_id": "chat-1"})
    runtime.run_turn({"message": "hi again", "session_id": "chat-1"})
    runtime.close()
    assert sorted(s.name for s in traced.spans if s.name.startswith("turn ")) == [
        "turn turn-1",
        "turn turn-2",
    ]
    turn = traced.attrs("turn turn-1")
    assert turn["weft.thread_id"] == "chat-1"
    assert turn["gen_ai.conversation.id"] == "chat-1"
    assert turn["weft.run.status"] == "finished"
    graphs = [s for s in traced.spans if s.name.startswith("graph ")]
    assert sorted(traced.parent(g).name for g in graphs) == ["turn turn-1", "turn turn-2"]  # type: ignore[union-attr]
    nodes = traced.all("node answer")
    assert {traced.parent(n) for n in nodes} == set(graphs)  # type: ignore[arg-type]
    models = traced.all("text_completion ScriptedReasoner")
    assert {traced.parent(m) for m in models} == set(nodes)  # type: ignore[arg-type]
    assert all(dict(m.attributes or {})["weft.thread_id"] == "chat-1" for m in models)


def test_a_failed_turn_has_error_status(traced: Traced, tmp_path: Path) -> None:
    @node(writes=["reply"])
    def crash(state: Any) -> dict[str, str]:
        raise KeyError("no such user")

    runtime = TurnRuntime(Chat, [crash], SQLiteBackend(tmp_path / "chat.db"))
    with pytest.raises(Exception, match="no such user"):
        runtime.run_turn({"message": "hi", "session_id": "chat-2"})
    runtime.close()
    turn = traced.one("turn turn-1")
    assert turn.status.status_code is StatusCode.ERROR
    assert traced.one("node crash").status.status_code is StatusCode.ERROR
