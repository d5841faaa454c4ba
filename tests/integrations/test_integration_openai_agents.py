"""weft's tools inside the OpenAI Agents SDK: its Runner driving an Agent whose model is the
SDK's own ``ScriptedModel`` (no network, tracing off), and a tool invoked with a real
``ToolContext``."""

from __future__ import annotations

import doctest
import json
from typing import Any

from agents import Agent, FunctionTool, RunConfig, Runner
from agents.testing import ScriptedModel, assistant_message, function_call
from agents.tool_context import ToolContext

import weft.integrations.openai_agents
from weft.calls import Tool, tool
from weft.integrations.openai_agents import tools
from weft.memory import AgentMemory, memory_tools

OFFLINE = RunConfig(tracing_disabled=True)


def script(*calls: tuple[str, Any]) -> ScriptedModel:
    """One tool call per turn, then the answer "done"."""
    steps: list[Any] = [
        [function_call(name, arguments, call_id=f"call-{i}")]
        for i, (name, arguments) in enumerate(calls)
    ]
    return ScriptedModel([*steps, [assistant_message("done")]])


def outputs(result: Any) -> list[Any]:
    """What each tool call answered, parsed from the JSON text the model was given."""
    return [json.loads(item.output) for item in result.new_items if hasattr(item, "output")]


async def test_an_agent_writes_then_reads_memory_and_writes_are_signed_by_the_agent() -> None:
    memory = AgentMemory()
    model = script(
        ("memory_write", {"key": "finding", "value": [1, 2], "title": "numbers"}),
        ("memory_read", {"keys": ["finding"]}),
    )
    agent = Agent(name="Researcher", model=model, tools=tools(memory))
    result = await Runner.run(agent, "go", run_config=OFFLINE)

    assert result.final_output == "done"
    written, read = outputs(result)
    assert written["ok"] is True and written["key"] == "shared:finding"
    assert read["entries"]["shared:finding"]["value"] == [1, 2]
    entry = memory.get("shared:finding")
    assert entry is not None and entry.source == "openai-agents:Researcher"
    model.assert_complete()


async def test_hostile_arguments_come_back_as_error_output_and_the_run_goes_on() -> None:
    memory = AgentMemory()
    memory.set("task:plan", "the system's")
    model = script(
        ("memory_write", {"key": "task:plan", "value": "mine now"}),
        ("memory_write", "{not json"),
        ("memory_write", "[1, 2]"),
        ("memory_read", {"keys": "task:plan"}),
    )
    agent = Agent(name="Mallory", model=model, tools=tools(memory))
    result = await Runner.run(agent, "go", run_config=OFFLINE)

    reserved, broken, array, wrong_type = outputs(result)
    assert all(out["ok"] is False for out in (reserved, broken, array, wrong_type))
    assert "names the task: namespace" in reserved["error"]
    assert "not one JSON object" in broken["error"]
    assert "must be a JSON object" in array["error"]
    assert "argument 'keys' is invalid" in wrong_type["error"]
    assert memory.get_value("task:plan") == "the system's"
    assert [entry.key for entry in memory.list()] == ["task:plan"]


async def test_a_tool_invoked_with_a_real_tool_context() -> None:
    memory = AgentMemory()
    write = tools(memory, source="batch-job")[2]
    assert isinstance(write, FunctionTool) and write.name == "memory_write"
    arguments = json.dumps({"key": "k", "value": {"a": 1}})
    context = ToolContext(
        context=None, tool_name="memory_write", tool_call_id="c1", tool_arguments=arguments
    )

    answer = json.loads(await write.on_invoke_tool(context, arguments))

    assert answer["ok"] is True
    entry = memory.get("shared:k")
    assert entry is not None and entry.source == "batch-job"


def test_the_model_is_offered_weft_descriptions_and_schemas() -> None:
    memory = AgentMemory()
    for offered, weft_tool in zip(tools(memory), memory_tools(memory), strict=True):
        assert offered.name == weft_tool.name
        assert offered.description == weft_tool.description
        assert offered.params_json_schema == weft_tool.parameters
        assert offered.strict_json_schema is False  # optional fields: weft checks them


async def test_a_weft_tool_runs_through_the_runner_with_its_arguments_checked() -> None:
    @tool(
        parameters={
            "type": "object",
            "properties": {"city": {"type": "string", "minLength": 1}},
            "required": ["city"],
        }
    )
    async def weather(city: str) -> dict[str, Any]:
        """Today's weather in a city."""
        return {"city": city, "sky": "clear"}

    model = script(("weather", {"city": ""}), ("weather", {"city": "Oslo"}))
    agent = Agent(name="Forecaster", model=model, tools=tools([weather]))
    result = await Runner.run(agent, "go", run_config=OFFLINE)

    refused, answered = outputs(result)
    assert refused["ok"] is False and "should be non-empty" in refused["error"]
    assert answered == {"city": "Oslo", "sky": "clear"}


def test_docstring_example_runs() -> None:
    assert doctest.testmod(weft.integrations.openai_agents).failed == 0


async def test_a_weft_tool_that_raises_tells_the_model_and_the_run_goes_on() -> None:
    def lookup(code: str) -> str:
        raise LookupError(f"no airport {code}")

    model = script(("lookup", {"code": "XXX"}))
    agent = Agent(name="Clerk", model=model, tools=tools(Tool(name="lookup", fn=lookup)))
    result = await Runner.run(agent, "go", run_config=OFFLINE)

    (failed,) = outputs(result)
    assert failed == {"ok": False, "error": "lookup failed: LookupError: no airport XXX"}
    assert result.final_output == "done"
