"""weft's tools inside pydantic-ai: an Agent driven by pydantic-ai's own test models
(``FunctionModel`` scripts each reply, ``TestModel`` makes up arguments from the schema)."""

from __future__ import annotations

import doctest
from typing import Any

from pydantic_ai import Agent
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.models.test import TestModel

import weft.integrations.pydantic_ai
from weft.calls import Tool, tool
from weft.integrations.pydantic_ai import tools
from weft.memory import AgentMemory, memory_tools


def scripted(*calls: tuple[str, dict[str, Any]]) -> tuple[FunctionModel, list[Any]]:
    """A model that makes ``calls`` one per turn, then answers "done"; and what each tool
    call came back with (the parts of the request that followed it)."""
    seen: list[Any] = []

    def reply(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        last = messages[-1]
        if isinstance(last, ModelRequest) and len(messages) > 1:
            seen.extend(last.parts)
        turn = len(messages) // 2
        if turn < len(calls):
            name, args = calls[turn]
            return ModelResponse(parts=[ToolCallPart(name, args, tool_call_id=f"call-{turn}")])
        return ModelResponse(parts=[TextPart("done")])

    return FunctionModel(reply), seen


async def test_an_agent_writes_then_reads_memory_through_the_tools() -> None:
    memory = AgentMemory()
    model, seen = scripted(
        ("memory_write", {"key": "finding", "value": {"city": "Lyon"}, "title": "where"}),
        ("memory_read", {"keys": ["finding"]}),
    )
    result = await Agent(model, tools=tools(memory)).run("remember Lyon")

    assert result.output == "done"
    entry = memory.get("shared:finding")
    assert entry is not None
    assert (entry.value, entry.title, entry.source) == ({"city": "Lyon"}, "where", "pydantic-ai")
    written, read = seen
    assert written.content["key"] == "shared:finding" and written.content["ok"] is True
    assert read.content["entries"]["shared:finding"]["value"] == {"city": "Lyon"}


async def test_a_named_agent_signs_its_writes_and_a_given_source_wins() -> None:
    memory = AgentMemory()
    model, _ = scripted(("memory_write", {"key": "a", "value": 1}))
    await Agent(model, name="Scribe", tools=tools(memory)).run("go")
    model, _ = scripted(("memory_write", {"key": "b", "value": 2}))
    await Agent(model, name="Scribe", tools=tools(memory, source="night-job")).run("go")

    assert {e.key: e.source for e in memory.list()} == {
        "shared:a": "pydantic-ai:Scribe",
        "shared:b": "night-job",
    }


async def test_a_refused_write_is_a_retry_prompt_with_weft_message_and_writes_nothing() -> None:
    memory = AgentMemory()
    model, seen = scripted(
        ("memory_write", {"key": "task:plan", "value": "mine now"}),
        ("memory_write", {"key": "note", "value": 1, "colour": "red"}),
        ("memory_write", {"key": "note", "value": 1}),
    )
    await Agent(model, tools=tools(memory), retries=3).run("go")

    namespace, unknown, ok = seen
    assert namespace.part_kind == "retry-prompt" or namespace.outcome == "retried"
    assert "names the task: namespace" in str(namespace.content)
    assert "unknown argument 'colour'" in str(unknown.content)
    assert ok.content["ok"] is True
    assert [e.key for e in memory.list()] == ["shared:note"]


async def test_the_model_is_offered_weft_descriptions_and_schemas() -> None:
    memory = AgentMemory()
    offered: dict[str, Any] = {}

    def reply(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        offered.update({t.name: t for t in info.function_tools})
        return ModelResponse(parts=[TextPart("ok")])

    await Agent(FunctionModel(reply), tools=tools(memory)).run("hi")

    for weft_tool in memory_tools(memory):
        definition = offered[weft_tool.name]
        assert definition.description == weft_tool.description
        assert definition.parameters_json_schema == weft_tool.parameters


async def test_test_model_calls_every_tool_with_arguments_made_from_the_schemas() -> None:
    memory = AgentMemory()
    result = await Agent(TestModel(), tools=tools(memory, source="tester")).run("go")

    answers = result.output
    assert '"memory_write":{"ok":true' in answers.replace(" ", "")
    assert [entry.source for entry in memory.list()] == ["tester"]


async def test_a_weft_tool_checks_its_arguments_before_the_function_runs() -> None:
    ran: list[int] = []

    @tool(
        parameters={
            "type": "object",
            "properties": {"n": {"type": "integer", "minimum": 0}},
            "required": ["n"],
            "additionalProperties": False,
        }
    )
    def square(n: int) -> int:
        """The square of n."""
        ran.append(n)
        return n * n

    model, seen = scripted(("square", {"n": "three"}), ("square", {"n": 3}))
    await Agent(model, tools=tools([square])).run("go")

    refused, answered = seen
    assert "argument 'n' is invalid" in str(refused.content)
    assert "expected an integer" in str(refused.content)
    assert answered.content == 9
    assert ran == [3]


async def test_an_async_weft_tool_refuses_arguments_its_function_cannot_take() -> None:
    async def greet(name: str) -> str:
        return f"hello {name}"

    model, seen = scripted(("greet", {"nom": "Ada"}), ("greet", {"name": "Ada"}))
    agent = Agent(model, tools=tools(Tool(name="greet", fn=greet)))
    await agent.run("go")

    refused, answered = seen
    assert "missing required argument 'name'" in str(refused.content)
    assert "unknown argument 'nom'; this tool takes only: name" in str(refused.content)
    assert answered.content == "hello Ada"


def test_docstring_example_runs() -> None:
    assert doctest.testmod(weft.integrations.pydantic_ai).failed == 0
