"""AgentTools, the one toolbox of every agent's loop: the loop's own tools, the allowed
subset of the caller's tools, names that clash, the one tool left at the end, and a
caller tool sent to the executor of ``offload_to``."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from weft.agent import ToolAgent, ToolAgentResult
from weft.agent.toolbox import AgentTools, LoopTool, Outcome
from weft.errors import AgentBuildError, ExecutorError
from weft.graph.offload import RemoteCall, offload_to
from weft.llm import ScriptedChatModel, ToolCall
from weft.memory import AgentMemory


def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


def shout(text: str) -> str:
    """Say it louder."""
    return text.upper()


def answer(tools: AgentTools, name: str, arguments: dict[str, Any], **options: Any) -> Outcome:
    return asyncio.run(tools.answer(ToolCall(id="c1", name=name, arguments=arguments), **options))


def error_of(outcome: Outcome) -> str:
    assert outcome.is_error, outcome
    text: str = json.loads(outcome.content)["error"]
    return text


def test_a_loop_tool_gets_arguments_its_schema_accepted_and_its_error_result_is_flagged() -> None:
    seen: list[dict[str, Any]] = []

    def claim(arguments: dict[str, Any]) -> dict[str, Any]:
        seen.append(arguments)
        return {"ok": False, "error": "someone else took it"}

    schema = {"type": "object", "properties": {"task_id": {"type": "string"}}}
    tools = AgentTools(
        [],
        memory=None,
        source="ada",
        builtins=[LoopTool(name="claim", description="Claim.", parameters=schema, handler=claim)],
    )
    assert "task_id" in error_of(answer(tools, "claim", {"task_id": 7}))
    assert not seen  # refused before the handler ran
    refused = answer(tools, "claim", {"task_id": "t"})
    assert error_of(refused) == "someone else took it" and refused.problem is None
    assert seen == [{"task_id": "t"}]


def test_a_loop_tool_without_a_handler_is_answered_by_the_loop() -> None:
    tools = AgentTools(
        [], memory=None, source="ada", builtins=[LoopTool(name="done", description="Done.")]
    )
    assert answer(tools, "done", {}) == Outcome('{"ok": true}')
    assert tools.names == ("done",) and [s.name for s in tools.specs] == ["done"]


def test_only_the_allowed_caller_tools_are_offered() -> None:
    tools = AgentTools([add, shout], memory=AgentMemory(), source="ada", allowed=["shout"])
    assert tools.names == ("memory_list", "memory_read", "memory_write", "shout")
    assert "there is no tool named 'add'" in error_of(answer(tools, "add", {"a": 1, "b": 2}))
    assert answer(tools, "shout", {"text": "hi"}) == Outcome("HI")


def test_an_allowed_tool_that_was_not_given_is_the_callers_error_naming_what_was() -> None:
    with pytest.raises(ExecutorError, match=r"step s: it may use the tools search.*it has: add"):
        AgentTools([add], memory=None, source="step s", allowed=["search"], error=ExecutorError)


@pytest.mark.parametrize("name", ["memory_read", "finish_step"])
def test_a_caller_tool_named_like_a_built_in_tool_is_refused(name: str) -> None:
    def fn() -> None:
        """Clash."""

    fn.__name__ = name
    finish = LoopTool(name="finish_step", description="Finish.")
    with pytest.raises(AgentBuildError, match=rf"tools\[0\] is named '{name}'.*rename it"):
        AgentTools([fn], memory=AgentMemory(), source="s", builtins=[finish])


def test_at_the_end_only_the_one_tool_left_may_be_called() -> None:
    tools = AgentTools(
        [add], memory=None, source="s", builtins=[LoopTool(name="done", description="Done.")]
    )
    refused = answer(tools, "add", {"a": 1, "b": 2}, only="done")
    assert refused.problem == "not_offered"
    assert "done is the only tool left; call done" in error_of(refused)
    assert answer(tools, "nope", {}, only="done").problem == "unknown_tool"
    assert answer(tools, "done", {}, only="done") == Outcome('{"ok": true}')


class Elsewhere:
    """An executor that runs each call in-process, keeping what it was sent."""

    def __init__(self) -> None:
        self.calls: list[RemoteCall] = []

    async def call(self, call: RemoteCall) -> Any:
        self.calls.append(call)
        return call.fn(*call.args, **call.kwargs)


def test_a_tool_agents_tool_runs_on_the_executor_of_offload_to() -> None:
    model = ScriptedChatModel([ScriptedChatModel.tool_call("add", {"a": 2, "b": 3}), "5"])
    elsewhere = Elsewhere()
    with offload_to(elsewhere):
        result = ToolAgent(model, tools=[add], memory_tools=False).run("2 + 3?")
    assert isinstance(result, ToolAgentResult) and result.answer == "5"
    assert [(c.label, dict(c.kwargs)) for c in elsewhere.calls] == [("add", {"a": 2, "b": 3})]
    assert result.messages[-2].content == "5"
