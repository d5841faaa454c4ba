"""An agent run as spans: ``invoke_agent``, its iterations, the model call and the tool
calls of each iteration under it; a chat model's usage and finish reasons."""

from __future__ import annotations

from typing import Any

import pytest
from opentelemetry.trace import SpanKind, StatusCode
from trace_helpers import Traced

from weft.agent import Agent
from weft.llm import ScriptedChatModel, ScriptedReasoner
from weft.memory import AgentMemory
from weft.plan import Step, StepExecutor
from weft.store import CallNote, Store

ADD = '{"next_actions": [[{"type": "add", "args": {"a": 2, "b": 3}}]]}'
DONE = '{"instant_response": "5", "task_status": "Completed"}'
NOTE_FIRST = '{"next_actions": [[{"type": "note", "args": {"text": "adding"}}]]}'


def test_iterations_nest_under_the_agent_and_calls_under_their_iteration(
    traced: Traced,
) -> None:
    agent = Agent(ScriptedReasoner([ADD, DONE]), actor={"add": lambda a, b: a + b}, name="calc")
    result = agent.run("What is 2 + 3?", run_id="sum-1")
    assert result.instant_response == "5"
    assert traced.parent_name("invoke_agent calc") is None
    assert traced.attrs("invoke_agent calc") == {
        "weft.run_id": "sum-1",
        "weft.run.kind": "agent",
        "gen_ai.operation.name": "invoke_agent",
        "gen_ai.agent.name": "calc",
        "weft.run.status": "finished",
    }
    first, second = sorted(traced.all("iteration 0") + traced.all("iteration 1"), key=_start)
    assert [first.name, second.name] == ["iteration 0", "iteration 1"]
    assert all(traced.parent(s).name == "invoke_agent calc" for s in (first, second))  # type: ignore[union-attr]
    models = sorted(traced.all("text_completion ScriptedReasoner"), key=_start)
    assert [traced.parent(m) for m in models] == [first, second]
    model = dict(models[0].attributes or {})
    assert model["gen_ai.operation.name"] == "text_completion"
    assert model["weft.run_id"] == "sum-1"
    assert model["weft.unit"] == "iter/0"
    assert models[0].kind is SpanKind.CLIENT
    tool = traced.one("execute_tool add")
    assert traced.parent(tool) is first
    assert traced.attrs("execute_tool add")["gen_ai.tool.name"] == "add"
    assert traced.attrs("execute_tool add")["gen_ai.operation.name"] == "execute_tool"


def test_a_failing_tool_has_error_status_and_the_run_goes_on(traced: Traced) -> None:
    def divide(a: int, b: int) -> float:
        return a / b

    reasoner = ScriptedReasoner(
        ['{"next_actions": [[{"type": "divide", "args": {"a": 1, "b": 0}}]]}', DONE]
    )
    Agent(reasoner, actor={"divide": divide}).run("1/0?")
    tool = traced.one("execute_tool divide")
    assert tool.status.status_code is StatusCode.ERROR
    assert tool.status.description == "ZeroDivisionError: division by zero"
    assert traced.one("invoke_agent agent").status.status_code is StatusCode.UNSET


def test_a_model_that_fails_fails_its_iteration_and_the_run(traced: Traced) -> None:
    def broken(prompt: str) -> str:
        raise ConnectionError("the provider is down")

    agent = Agent(broken)
    try:
        agent.run("hello")
    except ConnectionError:
        pass
    else:
        raise AssertionError("the model's error reaches the caller")
    model = traced.one("text_completion function")
    assert model.status.status_code is StatusCode.ERROR
    assert traced.parent_name("text_completion function") == "iteration 0"
    assert traced.one("iteration 0").status.status_code is StatusCode.ERROR
    assert traced.one("invoke_agent agent").status.status_code is StatusCode.ERROR


def test_a_chat_model_reports_model_usage_and_finish_reasons(traced: Traced) -> None:
    model = ScriptedChatModel(
        [
            {
                "content": ADD,
                "model": "gpt-test-2025",
                "usage": {"input_tokens": 11, "output_tokens": 7},
                "stop_reason": "stop",
            },
            {"content": DONE, "usage": {"input_tokens": 20, "output_tokens": 3}},
        ]
    )
    Agent(model, actor={"add": lambda a, b: a + b}).run("2 + 3?")
    chats = sorted((s for s in traced.spans if s.name.startswith("chat ")), key=_start)
    assert len(chats) == 2
    first = dict(chats[0].attributes or {})
    assert first["gen_ai.operation.name"] == "chat"
    assert first["gen_ai.response.model"] == "gpt-test-2025"
    assert first["gen_ai.usage.input_tokens"] == 11
    assert first["gen_ai.usage.output_tokens"] == 7
    assert first["gen_ai.response.finish_reasons"] == ("stop",)
    assert first["gen_ai.provider.name"] == first["gen_ai.system"]
    assert traced.parent(chats[0]).name == "iteration 0"  # type: ignore[union-attr]


def test_a_tool_the_model_called_carries_the_call_id(traced: Traced) -> None:
    finish = ScriptedChatModel.tool_call
    model = ScriptedChatModel(
        [
            {"tool_calls": [{"name": "lookup", "arguments": {"q": "otters"}, "id": "call_7"}]},
            finish("finish_step", {"result": "found"}),
        ]
    )

    def lookup(q: str) -> str:
        return f"{q} hold hands"

    from weft.calls import Tool

    tool = Tool(name="lookup", fn=lookup)
    step = Step(id="s", instructions="Look it up.")
    StepExecutor(step, model=model, memory=AgentMemory(), tools=[tool]).execute()
    attrs = traced.attrs("execute_tool lookup")
    assert attrs["gen_ai.tool.call.id"] == "call_7"
    assert attrs["gen_ai.tool.name"] == "lookup"
    assert len([s for s in traced.spans if s.name.startswith("chat ")]) == 2


def test_the_store_log_holds_the_same_call_notes(traced: Traced) -> None:
    store = Store()
    agent = Agent(ScriptedReasoner([ADD, DONE]), actor={"add": lambda a, b: a + b}, store=store)
    agent.run("2 + 3?", run_id="logged")
    calls = [e.value for e in store.events() if isinstance(e.value, CallNote)]
    assert [(c.call, c.name, c.event) for c in calls] == [
        ("model", "ScriptedReasoner", "finished"),
        ("tool", "add", "started"),
        ("tool", "add", "finished"),
        ("model", "ScriptedReasoner", "finished"),
    ]
    assert all(c.parent and c.parent.startswith("logged/iter/") for c in calls)


class Crash(BaseException):
    """The process dying, as far as the run can tell."""


def _start(span: Any) -> int:
    return int(span.start_time)


def test_a_resumed_agent_shows_its_recorded_iterations_as_skipped(traced: Traced) -> None:
    store = Store()
    crash = [True]

    def add(a: int, b: int) -> int:
        if crash[0]:
            crash[0] = False
            raise Crash  # the process stops inside the second iteration's action
        return a + b

    reasoner = ScriptedReasoner([NOTE_FIRST, ADD, DONE])
    agent = Agent(reasoner, actor={"note": lambda text: text, "add": add}, store=store)
    with pytest.raises(Crash):
        agent.run("2 + 3?", run_id="resumed")
    traced.exporter.clear()
    again = Agent(
        ScriptedReasoner([DONE]), actor={"note": lambda text: text, "add": add}, store=store
    )
    assert again.run("2 + 3?", run_id="resumed").instant_response == "5"
    assert traced.attrs("iteration 0")["weft.unit.status"] == "skipped"
    assert traced.attrs("iteration 0")["weft.skipped.reason"] == "recorded"
    assert traced.attrs("iteration 1")["weft.unit.status"] == "finished"
    assert traced.all("execute_tool note") == []  # restored: not run again
    assert traced.parent_name("iteration 0") == "invoke_agent agent"
