"""weft's adapters against a real OpenAI- and Anthropic-compatible server: LiteLLM's proxy,
answering with mock responses (no model weights, no network).

What the proxy cannot serve is tested on the recorded streams of test_provider_streams.py:
streamed tool calls (the proxy's mock streams only text), anything on its Anthropic endpoint
beyond a canned text reply (its mock there ignores tools and answers a stream request with one
JSON body, which weft replays as events), and extended thinking.
"""

from __future__ import annotations

from typing import Any

import pytest
from litellm_proxy import Proxy
from llm_fakes import Sleeps, WeatherTool

from weft.errors import ProviderError
from weft.llm import (
    AnthropicChatModel,
    ChatMessage,
    MessageDone,
    OpenAIChatModel,
    StreamEvent,
    TextDelta,
    astream,
)


def openai(proxy: Proxy, model: str, **kwargs: Any) -> OpenAIChatModel:
    return OpenAIChatModel(model, base_url=proxy.url + "/v1", api_key=proxy.key, **kwargs)


def anthropic(proxy: Proxy, model: str = "mock-text", **kwargs: Any) -> AnthropicChatModel:
    return AnthropicChatModel(model, base_url=proxy.url, api_key=proxy.key, **kwargs)


async def stream(model: Any, messages: list[Any], **kwargs: Any) -> list[StreamEvent]:
    async with model:
        return [event async for event in astream(model, messages, **kwargs)]


async def test_openai_chat_against_the_proxy(litellm_proxy: Proxy) -> None:
    async with openai(litellm_proxy, "mock-text") as model:
        reply = await model.achat(
            [ChatMessage.system("Be brief."), ChatMessage.user("Hi")], temperature=0
        )
    assert reply.content == "Hello from the mock."
    assert reply.stop_reason == "stop"
    assert reply.model == "mock-text"
    assert reply.usage is not None
    assert reply.usage.total_tokens is not None


async def test_openai_tool_calls_and_the_tool_loop_against_the_proxy(litellm_proxy: Proxy) -> None:
    conversation: list[Any] = [ChatMessage.user("Weather in Paris and Rome?")]
    async with openai(litellm_proxy, "mock-tools") as tools_model:
        reply = await tools_model.achat(conversation, tools=[WeatherTool()])
    assert reply.stop_reason == "tool_calls"
    assert [(c.id, c.name, dict(c.arguments)) for c in reply.tool_calls] == [
        ("call_paris", "get_weather", {"location": "Paris"}),
        ("call_rome", "get_weather", {"location": "Rome"}),
    ]
    conversation.append(reply)
    conversation += [ChatMessage.tool({"temp_c": 18}, tool_call_id=c.id) for c in reply.tool_calls]
    async with openai(litellm_proxy, "mock-text") as text_model:
        final = await text_model.achat(conversation, tools=[WeatherTool()])
    assert final.content == "Hello from the mock."


async def test_openai_streaming_against_the_proxy(litellm_proxy: Proxy) -> None:
    events = await stream(openai(litellm_proxy, "mock-text"), [ChatMessage.user("Hi")])
    deltas = [event for event in events if isinstance(event, TextDelta)]
    assert len(deltas) > 1  # it really streamed
    done = events[-1]
    assert isinstance(done, MessageDone)
    assert "".join(d.text for d in deltas) == done.message.content == "Hello from the mock."
    assert done.message.stop_reason == "stop"
    assert done.message.usage is not None  # from the include_usage chunk


async def test_provider_dicts_against_the_proxy(litellm_proxy: Proxy) -> None:
    async with openai(litellm_proxy, "mock-text") as model:
        reply = await model.achat(
            [{"role": "developer", "content": "Be brief."}, {"role": "user", "content": "Hi"}]
        )
    assert reply.content == "Hello from the mock."


async def test_anthropic_messages_endpoint_of_the_proxy(litellm_proxy: Proxy) -> None:
    async with anthropic(litellm_proxy) as model:
        reply = await model.achat(
            [ChatMessage.system("Be brief."), ChatMessage.user("Hi")], tools=[WeatherTool()]
        )
    assert reply.content == "Hello from the mock."
    assert reply.stop_reason == "end_turn"
    assert reply.usage is not None


async def test_anthropic_stream_request_to_the_proxy_is_replayed(litellm_proxy: Proxy) -> None:
    events = await stream(anthropic(litellm_proxy), [ChatMessage.user("Hi")])
    assert events[0] == TextDelta("Hello from the mock.")
    done = events[-1]
    assert isinstance(done, MessageDone)
    assert done.message.content == "Hello from the mock."


@pytest.mark.parametrize("make", [openai, anthropic])
async def test_a_real_429_is_retried_then_reported(
    make: Any, litellm_proxy: Proxy, sleeps: Sleeps
) -> None:
    async with make(litellm_proxy, "mock-rate-limited", max_retries=2, sleep=sleeps) as model:
        with pytest.raises(ProviderError) as info:
            await model.achat([ChatMessage.user("Hi")])
    assert info.value.status == 429
    assert info.value.attempts == 3
    assert len(sleeps.delays) == 2
    assert "mock rate limit error" in str(info.value)


async def test_a_real_500_is_retried_then_reported(litellm_proxy: Proxy, sleeps: Sleeps) -> None:
    async with openai(litellm_proxy, "mock-broken", max_retries=1, sleep=sleeps) as model:
        with pytest.raises(ProviderError, match="answered 500 after 2 attempts") as info:
            await model.achat([ChatMessage.user("Hi")])
    assert info.value.error_type == "internal_server_error"
