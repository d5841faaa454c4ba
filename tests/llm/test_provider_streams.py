"""Both adapters stream over server-sent events: the recorded streams in fixtures/ (built
from the providers' documented examples) served by a real HTTP server in small chunks."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from llm_fakes import Sleeps, WeatherTool
from local_server import LocalServer, Reply, json_reply, sse_reply

from weft.errors import ProviderError
from weft.llm import (
    AnthropicChatModel,
    AssistantMessage,
    ChatMessage,
    MessageDone,
    OpenAIChatModel,
    StreamEvent,
    TextDelta,
    ThinkingDelta,
    ToolCall,
    ToolCallDelta,
    ToolCallStarted,
    Usage,
    astream,
)
from weft.llm.messages import Thinking

HI = [ChatMessage.user("Hi")]


async def events_of(model: Any, messages: Any = HI, **kwargs: Any) -> list[StreamEvent]:
    async with model:
        return [event async for event in astream(model, messages, **kwargs)]


def openai(server: LocalServer, **kwargs: Any) -> OpenAIChatModel:
    return OpenAIChatModel("gpt-4o-mini", base_url=server.url + "/v1", **kwargs)


def anthropic(server: LocalServer, **kwargs: Any) -> AnthropicChatModel:
    return AnthropicChatModel("claude-sonnet-4-5", base_url=server.url, api_key="k", **kwargs)


def done(events: list[StreamEvent]) -> AssistantMessage:
    last = events[-1]
    assert isinstance(last, MessageDone)
    assert not any(isinstance(event, MessageDone) for event in events[:-1])
    return last.message


# ------------------------------------------------------------------------------- OpenAI


@pytest.mark.parametrize(("chunk", "crlf"), [(64, False), (7, True), (1, False)])
async def test_openai_text_arrives_as_deltas_then_the_whole_message(chunk: int, crlf: bool) -> None:
    with LocalServer(sse_reply("openai_text.sse", chunk=chunk, crlf=crlf)) as server:
        events = await events_of(openai(server))
    assert events[:-1] == [TextDelta("Hello"), TextDelta("!")]
    message = done(events)
    assert message.content == "Hello!"
    assert message.stop_reason == "stop"
    assert message.usage == Usage(input_tokens=9, output_tokens=2, total_tokens=11)
    assert message.model == "gpt-4o-mini"
    body = server.requests[0].body
    assert body["stream"] is True
    assert body["stream_options"] == {"include_usage": True}


async def test_openai_parallel_tool_calls_are_told_apart_by_index() -> None:
    with LocalServer(sse_reply("openai_parallel_tools.sse", chunk=50)) as server:
        events = await events_of(openai(server), tools=[WeatherTool()])
    paris, bogota = "call_DdmO9pD3xa9XTPNJ32zg2hcA", "call_7kQ2mN1pWbY3xZ0aRtLcE5vH"
    assert events[:-1] == [
        ToolCallStarted(0, paris, "get_weather"),
        ToolCallDelta(0, '{"lo'),
        ToolCallStarted(1, bogota, "get_weather"),
        ToolCallDelta(0, 'cation": "Paris, France"}'),
        ToolCallDelta(1, '{"location": "Bogotá, Colombia"}'),
    ]
    message = done(events)
    assert message.stop_reason == "tool_calls"
    assert message.tool_calls == (
        ToolCall(
            id=paris,
            name="get_weather",
            arguments={"location": "Paris, France"},
            raw_arguments='{"location": "Paris, France"}',
        ),
        ToolCall(
            id=bogota,
            name="get_weather",
            arguments={"location": "Bogotá, Colombia"},
            raw_arguments='{"location": "Bogotá, Colombia"}',
        ),
    )
    assert message.usage == Usage(input_tokens=80, output_tokens=40, total_tokens=120)
    assert server.requests[0].body["tools"][0]["function"]["name"] == "get_weather"


async def test_openai_streamed_refusal_is_the_refusal_stop_reason_with_its_text() -> None:
    with LocalServer(sse_reply("openai_refusal.sse")) as server:
        events = await events_of(openai(server))
    message = done(events)
    assert events[:-1] == []  # a refusal is no answer text
    assert message.refused
    assert message.stop_reason == "refusal"
    assert message.refusal == "I'm sorry, I can't help with that."
    assert message.content is None


async def test_the_final_message_is_what_achat_returns_for_the_same_reply() -> None:
    """The stream's sum is the non-streamed body: parsing it gives the same message."""
    with LocalServer(sse_reply("openai_parallel_tools.sse")) as server:
        streamed = done(await events_of(openai(server)))
    assert streamed.raw is not None
    with LocalServer(json_reply(200, streamed.raw)) as server:
        async with openai(server) as model:
            whole = await model.achat(HI)
    assert whole == streamed


# ---------------------------------------------------------------------------- Anthropic


async def test_anthropic_text_stream_with_ping_and_cumulative_usage() -> None:
    with LocalServer(sse_reply("anthropic_text.sse", chunk=13, crlf=True)) as server:
        events = await events_of(anthropic(server))
    assert events[:-1] == [TextDelta("Hello"), TextDelta("!")]
    message = done(events)
    assert message.content == "Hello!"
    assert message.stop_reason == "end_turn"
    assert message.usage == Usage(input_tokens=25, output_tokens=15, total_tokens=40)
    assert server.requests[0].body["stream"] is True


async def test_anthropic_tool_use_input_arrives_as_partial_json() -> None:
    with LocalServer(sse_reply("anthropic_tool_use.sse", chunk=100)) as server:
        events = await events_of(anthropic(server), tools=[WeatherTool()])
    text = "".join(e.text for e in events if isinstance(e, TextDelta))
    assert text == "Okay, let's check the weather for San Francisco, CA:"
    started = [e for e in events if isinstance(e, ToolCallStarted)]
    assert started == [ToolCallStarted(0, "toolu_01T1x1fJ34qAmk2tNTrN7Up6", "get_weather")]
    streamed_json = "".join(e.text for e in events if isinstance(e, ToolCallDelta))
    assert json.loads(streamed_json) == {"location": "San Francisco, CA", "unit": "fahrenheit"}
    message = done(events)
    (call,) = message.tool_calls
    assert call.arguments == {"location": "San Francisco, CA", "unit": "fahrenheit"}
    assert call.parse_error is None
    assert message.stop_reason == "tool_use"
    assert message.usage == Usage(input_tokens=472, output_tokens=89, total_tokens=561)


async def test_anthropic_thinking_streams_as_thinking_deltas_and_keeps_its_signature() -> None:
    with LocalServer(sse_reply("anthropic_thinking.sse")) as server:
        events = await events_of(anthropic(server, max_tokens=20000), thinking={"type": "enabled"})
    thinking = "".join(e.text for e in events if isinstance(e, ThinkingDelta))
    assert thinking.startswith("Let me solve this step by step:")
    assert thinking.endswith("10,800 + 1,350 + 81 = 12,231")
    assert [e for e in events if isinstance(e, TextDelta)] == [TextDelta("27 * 453 = 12,231")]
    message = done(events)
    assert message.thinking == (
        Thinking(
            text=thinking, signature="EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds..."
        ),
    )
    assert message.usage is None  # this documented stream reports none
    assert server.requests[0].body["thinking"] == {"type": "enabled"}


async def test_a_tool_loop_with_thinking_sends_the_thinking_back_verbatim() -> None:
    """The second request of a tool loop with thinking on must carry the thinking blocks of
    the turn the tool results answer, unchanged; without them the API answers 400."""
    final = {
        "id": "msg_2",
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-4-5",
        "content": [{"type": "text", "text": "It is 18°C in Paris."}],
        "stop_reason": "end_turn",
    }
    with LocalServer(sse_reply("anthropic_thinking_tool_use.sse"), json_reply(200, final)) as s:
        model = anthropic(s)
        conversation: list[Any] = [ChatMessage.user("Weather in Paris?")]
        events = await events_of(model, conversation, tools=[WeatherTool()])
        reply = done(events)
        (call,) = reply.tool_calls
        conversation += [reply, ChatMessage.tool({"temp_c": 18}, tool_call_id=call.id)]
        async with model:
            answer = await model.achat(conversation, tools=[WeatherTool()])
    assert answer.content == "It is 18°C in Paris."
    assert s.requests[1].body["messages"][1:] == [
        {
            "role": "assistant",
            "content": [
                {
                    "type": "thinking",
                    "thinking": "The user wants the weather in Paris. I should call get_weather.",
                    "signature": "EuYBCkQYAiJAsig1",
                },
                {
                    "type": "redacted_thinking",
                    "data": "EmwKAhgBEgy3va3pzix/LafPsn4aDFIT2Xlxh0L5L8rLVyIwxtE3rAFBa8cr3qpP",
                },
                {
                    "type": "tool_use",
                    "id": "toolu_01CswdEQBMshySk6Y9DFKrfq",
                    "name": "get_weather",
                    "input": {"location": "Paris, France"},
                },
            ],
        },
        {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": "toolu_01CswdEQBMshySk6Y9DFKrfq",
                    "content": '{"temp_c": 18}',
                }
            ],
        },
    ]


async def test_an_error_event_mid_stream_is_a_provider_error_after_what_came() -> None:
    received: list[StreamEvent] = []

    async def consume(model: AnthropicChatModel) -> None:
        async with model:
            async for event in model.astream(HI):
                received.append(event)

    server = LocalServer(sse_reply("anthropic_overloaded.sse"))
    with server, pytest.raises(ProviderError) as info:
        await consume(anthropic(server))
    assert received == [TextDelta("Hel")]
    assert info.value.error_type == "overloaded_error"
    assert "sent an error in its stream: Overloaded [overloaded_error]" in str(info.value)


# --------------------------------------------------------------------- broken streams


@pytest.mark.parametrize("make", [openai, anthropic])
async def test_a_connection_dropped_mid_stream_is_a_provider_error(make: Any) -> None:
    name = "openai_text.sse" if make is openai else "anthropic_text.sse"
    server = LocalServer(sse_reply(name, chunk=40, drop_after=700))
    with server, pytest.raises(ProviderError, match="broke off its stream"):
        await events_of(make(server))


async def test_a_stream_that_ends_without_a_stop_reason_is_cut() -> None:
    text = "event: message_start\ndata: " + json.dumps(
        {"type": "message_start", "message": {"id": "m", "content": [], "model": "c"}}
    )
    reply = Reply(200, (text + "\n\n").encode(), {"content-type": "text/event-stream"}, chunk=9)
    server = LocalServer(reply)
    with server, pytest.raises(ProviderError, match="ended before the reply said it was done"):
        await events_of(anthropic(server))


@pytest.mark.parametrize(
    ("data", "what"),
    [
        ("{not json", "is not JSON"),
        ('["a", "list"]', "not a JSON object"),
        ('{"choices": {"index": 0}}', '"choices" is not a list'),
    ],
)
async def test_a_stream_event_in_no_documented_shape_is_a_provider_error(
    data: str, what: str
) -> None:
    reply = Reply(200, f"data: {data}\n\n".encode(), {"content-type": "text/event-stream"})
    server = LocalServer(reply)
    with (
        server,
        pytest.raises(ProviderError, match="not of the OpenAI Chat Completions API") as info,
    ):
        await events_of(openai(server))
    assert what in str(info.value)


async def test_a_server_that_ignores_stream_true_is_replayed_from_its_whole_answer() -> None:
    whole = {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-4-5",
        "content": [{"type": "text", "text": "all at once"}],
        "stop_reason": "end_turn",
    }
    with LocalServer(json_reply(200, whole)) as server:
        events = await events_of(anthropic(server))
    assert events[:-1] == [TextDelta("all at once")]
    assert done(events).content == "all at once"


async def test_breaking_off_early_closes_the_response(sleeps: Sleeps) -> None:
    with LocalServer(sse_reply("anthropic_tool_use.sse"), sse_reply("anthropic_text.sse")) as s:
        async with anthropic(s, sleep=sleeps) as model:
            stream = model.astream(HI)
            async for _ in stream:
                break
            await stream.aclose()  # type: ignore[attr-defined]
            again = [e async for e in model.astream(HI)]
    assert done(again).content == "Hello!"


# ------------------------------------------------------------------------ hostile streams


def sse_transport(text: str) -> httpx.MockTransport:
    headers = {"content-type": "text/event-stream"}
    return httpx.MockTransport(lambda request: httpx.Response(200, text=text, headers=headers))


def anthropic_events(*events: dict[str, Any]) -> str:
    return "".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in events)


async def test_tool_input_nested_past_pythons_limit_is_a_parse_error_not_a_crash() -> None:
    text = anthropic_events(
        {"type": "message_start", "message": {"id": "m", "model": "c", "content": []}},
        {
            "type": "content_block_start",
            "index": 0,
            "content_block": {"type": "tool_use", "id": "t", "name": "f", "input": {}},
        },
        {
            "type": "content_block_delta",
            "index": 0,
            "delta": {"type": "input_json_delta", "partial_json": "[" * 50_000},
        },
        {"type": "content_block_stop", "index": 0},
        {"type": "message_delta", "delta": {"stop_reason": "tool_use"}},
        {"type": "message_stop"},
    )
    model = AnthropicChatModel("c", api_key="k", transport=sse_transport(text))
    (call,) = done(await events_of(model)).tool_calls
    assert call.arguments == {}
    assert call.parse_error is not None


async def test_event_data_nested_past_pythons_limit_is_a_provider_error() -> None:
    text = "data: " + "[" * 50_000 + "\n\n"
    model = OpenAIChatModel("m", base_url="http://x/v1", transport=sse_transport(text))
    with pytest.raises(ProviderError, match="is not JSON"):
        await events_of(model)


async def test_a_tool_use_without_an_id_gets_one_shared_by_event_and_reply() -> None:
    text = anthropic_events(
        {
            "type": "content_block_start",
            "index": 0,
            "content_block": {"type": "tool_use", "name": "f", "input": {}},
        },
        {"type": "content_block_stop", "index": 0},
        {"type": "message_delta", "delta": {"stop_reason": "tool_use"}},
    )
    model = AnthropicChatModel("c", api_key="k", transport=sse_transport(text))
    events = await events_of(model)
    (started,) = [e for e in events if isinstance(e, ToolCallStarted)]
    assert done(events).tool_calls[0].id == started.id != ""


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=6),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=10,
)
openai_keys = st.sampled_from(["choices", "delta", "index", "tool_calls", "function", "content"])
anthropic_types = st.sampled_from(
    [
        "message_start",
        "content_block_start",
        "content_block_delta",
        "content_block_stop",
        "message_delta",
        "message_stop",
        "error",
        "ping",
    ]
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.dictionaries(openai_keys, json_values, max_size=4), max_size=6))
async def test_any_openai_chunks_give_a_message_or_a_provider_error(
    chunks: list[dict[str, Any]],
) -> None:
    text = "".join(f"data: {json.dumps(chunk)}\n\n" for chunk in chunks) + "data: [DONE]\n\n"
    model = OpenAIChatModel("m", base_url="http://x/v1", transport=sse_transport(text))
    try:
        events = await events_of(model)
    except ProviderError:
        return
    assert isinstance(done(events), AssistantMessage)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(
        st.fixed_dictionaries(
            {"type": anthropic_types},
            optional={
                "index": st.integers(-1, 3),
                "delta": json_values,
                "content_block": json_values,
                "message": json_values,
                "usage": json_values,
            },
        ),
        max_size=8,
    )
)
async def test_any_anthropic_events_give_a_message_or_a_provider_error(
    events: list[dict[str, Any]],
) -> None:
    model = AnthropicChatModel("c", api_key="k", transport=sse_transport(anthropic_events(*events)))
    try:
        received = await events_of(model)
    except ProviderError:
        return
    assert isinstance(done(received), AssistantMessage)


async def test_a_tool_use_whose_input_came_whole_in_its_start_keeps_it() -> None:
    text = anthropic_events(
        {
            "type": "content_block_start",
            "index": 0,
            "content_block": {"type": "tool_use", "id": "t", "name": "f", "input": {"a": 1}},
        },
        {"type": "content_block_stop", "index": 0},
        {"type": "message_delta", "delta": {"stop_reason": "tool_use"}},
        {"type": "message_stop"},
    )
    model = AnthropicChatModel("c", api_key="k", transport=sse_transport(text))
    (call,) = done(await events_of(model)).tool_calls
    assert call.arguments == {"a": 1}


async def test_reasoning_deltas_of_compatible_servers_stream_as_thinking() -> None:
    chunks = [
        {"choices": [{"index": 0, "delta": {"role": "assistant", "reasoning_content": "2+2"}}]},
        {"choices": [{"index": 0, "delta": {"reasoning_content": " is 4"}}]},
        {"choices": [{"index": 0, "delta": {"content": "4"}, "finish_reason": "stop"}]},
    ]
    text = "".join(f"data: {json.dumps(c)}\n\n" for c in chunks) + "data: [DONE]\n\n"
    model = OpenAIChatModel("m", base_url="http://x/v1", transport=sse_transport(text))
    events = await events_of(model)
    assert events[:-1] == [ThinkingDelta("2+2"), ThinkingDelta(" is 4"), TextDelta("4")]
    assert [t.text for t in done(events).thinking] == ["2+2 is 4"]
