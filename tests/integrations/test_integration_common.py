"""What every adapter shares: which weft tools it takes, what it refuses, and the error when
its framework is not installed; ``import weft`` loads none of the frameworks."""

from __future__ import annotations

import importlib
import json
import re
import subprocess
import sys
from typing import Any

import pytest

from weft.calls import Tool
from weft.errors import IntegrationError
from weft.memory import AgentMemory, memory_tools

ADAPTERS = {
    "pydantic_ai": ("pydantic_ai", "pydantic-ai-slim"),
    "openai_agents": ("agents", "openai-agents"),
    "langchain": ("langchain_core", "langchain-core"),
    "langgraph": ("langgraph", "langgraph"),
}
TOOL_ADAPTERS = ["pydantic_ai", "openai_agents", "langchain"]


def adapter(name: str) -> Any:
    return importlib.import_module(f"weft.integrations.{name}")


def test_import_weft_loads_no_framework() -> None:
    code = (
        "import sys, weft, weft.integrations; "
        "print(','.join(m for m in ('pydantic_ai', 'agents', 'langchain_core', 'langgraph') "
        "if m in sys.modules))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == ""


@pytest.mark.parametrize("name", ADAPTERS)
def test_an_adapter_whose_framework_is_missing_names_the_extra(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    framework, package = ADAPTERS[name]
    monkeypatch.setitem(sys.modules, framework, None)  # import of it now fails
    for loaded in [m for m in sys.modules if m.startswith(f"{framework}.")]:
        monkeypatch.delitem(sys.modules, loaded)
    monkeypatch.delitem(sys.modules, f"weft.integrations.{name}", raising=False)

    with pytest.raises(IntegrationError) as raised:
        importlib.import_module(f"weft.integrations.{name}")

    assert "pip install 'weft[integrations]'" in str(raised.value)
    assert package in str(raised.value)


@pytest.mark.parametrize("name", TOOL_ADAPTERS)
def test_every_adapter_takes_memory_tools_weft_tools_and_lists_of_them(name: str) -> None:
    memory = AgentMemory()
    echo = Tool(name="echo", fn=lambda text: text, description="Echo the text.")

    mixed = adapter(name).tools([*memory_tools(memory), echo])
    single = adapter(name).tools(memory_tools(memory).memory_read)
    all_three = adapter(name).tools(memory_tools(memory))

    assert [t.name for t in mixed] == ["memory_list", "memory_read", "memory_write", "echo"]
    assert [t.name for t in single] == ["memory_read"]
    assert [t.name for t in all_three] == ["memory_list", "memory_read", "memory_write"]


@pytest.mark.parametrize("name", TOOL_ADAPTERS)
@pytest.mark.parametrize(
    ("given", "message"),
    [
        ("memory", "expected an AgentMemory, a weft.calls.Tool"),
        ({"echo": print}, "expected an AgentMemory, a weft.calls.Tool"),
        ([print], "is not a weft tool"),
        ([Tool(name="t")], "has no function"),
        ([Tool(name="t", fn=print, isolated=True)], "is isolated"),
        ([Tool(name="memory_read", fn=print), "memory"], "two tools are named 'memory_read'"),
    ],
)
def test_what_an_adapter_cannot_offer_is_refused_before_the_framework_runs(
    name: str, given: Any, message: str
) -> None:
    if given and isinstance(given, list) and given[-1] == "memory":
        given = [given[0], AgentMemory()]
    with pytest.raises(IntegrationError, match=message):
        adapter(name).tools(given)


def test_a_callers_memory_tools_keep_their_source_unless_one_is_given() -> None:
    from weft.integrations.langchain import tools

    memory = AgentMemory()
    own = memory_tools(memory, source="planner").memory_write
    tools(own)[0].invoke({"key": "a", "value": 1})
    tools(own, source="override")[0].invoke({"key": "b", "value": 2})

    assert {e.key: e.source for e in memory.list()} == {
        "shared:a": "planner",
        "shared:b": "override",
    }


@pytest.mark.parametrize("name", TOOL_ADAPTERS)
def test_an_output_path_property_is_not_offered_to_the_model(name: str) -> None:
    parameters = {
        "type": "object",
        "properties": {"q": {"type": "string"}, "_outputPath": {"const": "state.answer"}},
        "required": ["q", "_outputPath"],
    }
    (offered,) = adapter(name).tools(Tool(name="search", fn=lambda q: q, parameters=parameters))

    schema = {
        "pydantic_ai": lambda t: t.tool_def.parameters_json_schema,
        "openai_agents": lambda t: t.params_json_schema,
        "langchain": lambda t: t.args_schema,
    }[name](offered)
    assert schema == {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]}


async def test_arguments_nested_too_deeply_are_refused_not_crashed_on() -> None:
    from agents.tool_context import ToolContext

    from weft.integrations.openai_agents import tools

    (deep_tool,) = tools(Tool(name="take", fn=lambda x: "taken"))
    text = '{"x": ' * 5000 + "1" + "}" * 5000
    context = ToolContext(context=None, tool_name="take", tool_call_id="1", tool_arguments=text)

    answer = json.loads(await deep_tool.on_invoke_tool(context, text))

    # refused while parsing (3.11, 3.12: the parser's recursion limit) or by the argument
    # check's depth limit (3.13 parses it); either way the model is told, nothing crashes
    assert answer["ok"] is False
    assert re.search(r"nested too deeply|nest deeper than \d+ levels", answer["error"])
