"""weft's tools as LangChain tools: invoked directly, and run by LangGraph's prebuilt
``ToolNode`` in a graph whose model is langchain_core's ``GenericFakeChatModel``."""

from __future__ import annotations

import doctest
import json
from typing import Any

from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.tools import BaseTool
from langchain_core.utils.function_calling import convert_to_openai_tool
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition

import weft.integrations.langchain
from weft.calls import Tool
from weft.integrations.langchain import tools
from weft.memory import AgentMemory, memory_tools


def by_name(memory: AgentMemory, **options: Any) -> dict[str, BaseTool]:
    return {t.name: t for t in tools(memory, **options)}


def call(name: str, args: dict[str, Any], call_id: str = "c1") -> dict[str, Any]:
    return {"type": "tool_call", "name": name, "args": args, "id": call_id}


def test_a_tool_invoked_with_arguments_returns_weft_result() -> None:
    memory = AgentMemory()
    memory_tool = by_name(memory)

    written = memory_tool["memory_write"].invoke({"key": "city", "value": "Lyon"})
    read = memory_tool["memory_read"].invoke({"keys": ["city"]})

    assert written["ok"] is True and written["key"] == "shared:city"
    assert read["entries"]["shared:city"]["value"] == "Lyon"
    entry = memory.get("shared:city")
    assert entry is not None and entry.source == "langchain"


def test_hostile_arguments_become_an_error_tool_message_and_nothing_is_written() -> None:
    memory = AgentMemory()
    write = by_name(memory, source="lc-agent")["memory_write"]

    reserved = write.invoke(call("memory_write", {"key": "input:goal", "value": "x"}))
    # LangChain passes its own run_manager and config under those names: weft must still
    # see (and refuse) a model's argument called so
    sneaky = write.invoke(call("memory_write", {"key": "a", "value": 1, "run_manager": 2}))
    missing = write.invoke(call("memory_write", {"value": 1}))

    for message in (reserved, sneaky, missing):
        assert isinstance(message, ToolMessage) and message.status == "error"
    assert "names the input: namespace" in reserved.content
    assert "unknown argument 'run_manager'" in sneaky.content
    assert "missing required argument 'key'" in missing.content
    assert memory.list() == []


async def test_the_async_path_checks_and_writes_the_same() -> None:
    memory = AgentMemory()
    write = by_name(memory)["memory_write"]

    done = await write.ainvoke(call("memory_write", {"key": "n", "value": 7}))
    refused = await write.ainvoke(call("memory_write", {"key": "n", "value": 7, "x": 0}, "c2"))

    assert done.status == "success" and json.loads(done.content)["ok"] is True
    assert refused.status == "error" and "unknown argument 'x'" in refused.content
    assert memory.get_value("shared:n") == 7


def test_the_model_is_offered_weft_descriptions_and_schemas() -> None:
    memory = AgentMemory()
    for offered, weft_tool in zip(tools(memory), memory_tools(memory), strict=True):
        function = convert_to_openai_tool(offered)["function"]
        assert function["name"] == weft_tool.name
        assert function["description"] == weft_tool.description
        assert function["parameters"] == weft_tool.parameters


class ToolCallingFake(GenericFakeChatModel):
    """The fake chat model, accepting tools as a real one does (it replies from its script)."""

    def bind_tools(self, tools: Any, **kwargs: Any) -> Any:
        return self


def agent_graph(model: GenericFakeChatModel, offered: list[BaseTool]) -> Any:
    """The tool-calling loop: the model, then LangGraph's ToolNode while the model calls tools."""

    def think(state: MessagesState) -> dict[str, Any]:
        return {"messages": [model.bind_tools(offered).invoke(state["messages"])]}

    graph = StateGraph(MessagesState)
    graph.add_node("model", think)
    graph.add_node("tools", ToolNode(offered))
    graph.add_edge(START, "model")
    graph.add_conditional_edges("model", tools_condition)
    graph.add_edge("tools", "model")
    return graph.compile()


def test_a_langgraph_tool_node_runs_the_memory_tools_the_model_calls() -> None:
    memory = AgentMemory()
    replies = iter(
        [
            AIMessage("", tool_calls=[call("memory_write", {"key": "task:x", "value": 0}, "a")]),
            AIMessage("", tool_calls=[call("memory_write", {"key": "plan", "value": [1]}, "b")]),
            AIMessage("", tool_calls=[call("memory_read", {"keys": ["plan"]}, "c")]),
            AIMessage("done"),
        ]
    )
    app = agent_graph(ToolCallingFake(messages=replies), tools(memory))

    final = app.invoke({"messages": [HumanMessage("plan it")]})

    answers = [m for m in final["messages"] if isinstance(m, ToolMessage)]
    refused, written, read = answers
    assert refused.status == "error" and "names the task: namespace" in refused.content
    assert json.loads(written.content)["key"] == "shared:plan"
    assert json.loads(read.content)["entries"]["shared:plan"]["value"] == [1]
    assert final["messages"][-1].content == "done"
    assert [e.key for e in memory.list()] == ["shared:plan"]


async def test_a_weft_tool_in_an_async_graph_is_checked_then_run() -> None:
    async def add(a: int, b: int) -> int:
        return a + b

    schema = {
        "type": "object",
        "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
        "required": ["a", "b"],
    }
    adder = Tool(name="add", fn=add, description="Add two integers.", parameters=schema)
    replies = iter(
        [
            AIMessage("", tool_calls=[call("add", {"a": 1, "b": "2"}, "a")]),
            AIMessage("", tool_calls=[call("add", {"a": 1, "b": 2}, "b")]),
            AIMessage("3"),
        ]
    )
    app = agent_graph(ToolCallingFake(messages=replies), tools(adder))

    final = await app.ainvoke({"messages": [HumanMessage("1 + 2?")]})

    refused, answered = [m for m in final["messages"] if isinstance(m, ToolMessage)]
    assert refused.status == "error"
    assert "argument 'b' is invalid" in refused.content and "expected an integer" in refused.content
    assert answered.status == "success" and answered.content == "3"


def test_docstring_example_runs() -> None:
    assert doctest.testmod(weft.integrations.langchain).failed == 0
