"""A tool made from a function reaches the providers with its inferred schema: the request
weft's OpenAI and Anthropic adapters send carries it (strict form and ``strict: true``
when asked), and the call the model answers with runs the function with checked arguments."""

from __future__ import annotations

import json
from typing import Annotated, Any

import httpx
import pytest

from weft.calls import Tool, tool
from weft.errors import ToolArgumentsError, ToolDefinitionError
from weft.llm import AnthropicChatModel, ChatMessage, OpenAIChatModel, ToolSpec, as_tool_spec


@tool
def get_weather(city: Annotated[str, "The city, e.g. 'Paris'"], days: int = 1) -> str:
    """Forecast the weather in a city.

    Args:
        days: How many days ahead.
    """
    return f"sunny in {city} for {days} day(s)"


PARAMETERS = {
    "type": "object",
    "properties": {
        "city": {"type": "string", "description": "The city, e.g. 'Paris'"},
        "days": {"type": "integer", "description": "How many days ahead.", "default": 1},
    },
    "required": ["city"],
    "additionalProperties": False,
}


class Recorder:
    """A provider over httpx.MockTransport that records each request and answers one reply."""

    def __init__(self, reply: dict[str, Any]) -> None:
        self.reply = reply
        self.bodies: list[dict[str, Any]] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.bodies.append(json.loads(request.content))
        return httpx.Response(200, json=self.reply)


def openai_reply(arguments: str) -> dict[str, Any]:
    call = {"id": "call_1", "type": "function"}
    function = {"name": "get_weather", "arguments": arguments}
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 1741569952,
        "model": "gpt-4o-mini",
        "choices": [
            {
                "index": 0,
                "message": {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [{**call, "function": function}],
                },
                "finish_reason": "tool_calls",
            }
        ],
    }


def anthropic_reply(arguments: dict[str, Any]) -> dict[str, Any]:
    use = {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": arguments}
    return {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-4-5",
        "content": [use],
        "stop_reason": "tool_use",
        "stop_sequence": None,
        "usage": {"input_tokens": 10, "output_tokens": 5},
    }


async def test_an_openai_request_carries_the_inferred_schema_and_the_call_runs() -> None:
    provider = Recorder(openai_reply('{"city": "Paris", "days": 2}'))
    model = OpenAIChatModel(
        "gpt-4o-mini", base_url="http://provider.test/v1", transport=httpx.MockTransport(provider)
    )
    async with model:
        reply = await model.achat([ChatMessage.user("Weather?")], tools=[get_weather])
    (sent,) = provider.bodies[0]["tools"]
    assert sent == {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Forecast the weather in a city.",
            "parameters": PARAMETERS,
        },
    }
    (call,) = reply.tool_calls
    assert await get_weather.acall(call.arguments) == "sunny in Paris for 2 day(s)"


async def test_an_openai_request_for_a_strict_tool_carries_the_strict_form() -> None:
    strict = Tool(name="get_weather", fn=get_weather.fn, strict=True)
    provider = Recorder(openai_reply('{"city": "Oslo", "days": null}'))
    model = OpenAIChatModel(
        "gpt-4o-mini", base_url="http://provider.test/v1", transport=httpx.MockTransport(provider)
    )
    async with model:
        reply = await model.achat([ChatMessage.user("Weather?")], tools=[strict])
    function = provider.bodies[0]["tools"][0]["function"]
    assert function["strict"] is True
    assert function["parameters"] == {
        "type": "object",
        "properties": {
            "city": {"type": "string", "description": "The city, e.g. 'Paris'"},
            "days": {
                "type": ["integer", "null"],
                "description": "How many days ahead. Default: 1.",
            },
        },
        "required": ["city", "days"],
        "additionalProperties": False,
    }
    (call,) = reply.tool_calls
    assert await strict.acall(call.arguments) == "sunny in Oslo for 1 day(s)"


async def test_an_anthropic_request_carries_the_inferred_schema_and_bad_input_is_refused() -> None:
    provider = Recorder(anthropic_reply({"city": ["not", "a", "city"]}))
    model = AnthropicChatModel(
        "claude-sonnet-4-5",
        base_url="http://provider.test",
        api_key="k",
        transport=httpx.MockTransport(provider),
    )
    async with model:
        reply = await model.achat([ChatMessage.user("Weather?")], tools=[get_weather])
    (sent,) = provider.bodies[0]["tools"]
    assert sent == {
        "name": "get_weather",
        "description": "Forecast the weather in a city.",
        "input_schema": PARAMETERS,
    }
    (call,) = reply.tool_calls
    with pytest.raises(ToolArgumentsError, match=r"get_weather: argument 'city' is invalid"):
        await get_weather.acall(call.arguments)


def test_a_tool_spec_from_a_strict_tool_or_a_strict_openai_dict_stays_strict() -> None:
    spec = as_tool_spec(Tool(name="get_weather", fn=get_weather.fn, strict=True))
    assert spec.strict and spec.openai()["function"]["strict"] is True
    assert "strict" not in spec.anthropic()
    given = {"type": "function", "function": {**spec.openai()["function"]}}
    assert as_tool_spec(given) == spec
    assert "strict" not in ToolSpec(name="x").openai()["function"]


def test_strict_memory_tools_are_offered_in_their_strict_form() -> None:
    from weft.memory import AgentMemory, memory_tools

    for memory_tool in memory_tools(AgentMemory(), strict=True):
        spec = as_tool_spec(memory_tool)
        assert spec.strict and spec.openai() == memory_tool.openai()
        assert spec.parameters == memory_tool.strict_parameters


def test_a_tool_dict_with_a_name_the_providers_refuse_is_refused_before_any_request() -> None:
    with pytest.raises(ToolDefinitionError, match="refused by model providers"):
        as_tool_spec({"name": "get weather", "parameters": {"type": "object"}})
