"""AnthropicChatModel against a mock server answering exactly as the Messages API documents."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from llm_fakes import FakeProvider, Sleeps, WeatherTool, ok, status

from weft.errors import ModelConfigError, ModelInputError, ProviderError
from weft.llm import AnthropicChatModel, ChatMessage, Completion, ToolCall, Usage, areason
from weft.llm.messages import Thinking

MODEL = "claude-sonnet-4-5"


def message(content: list[dict[str, Any]], stop_reason: str = "end_turn") -> dict[str, Any]:
    """A Messages response body, as the API reference shows it."""
    return {
        "id": "msg_013Zva2CMHLNnXjNJJKqJ2EF",
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-4-5-20250929",
        "content": content,
        "stop_reason": stop_reason,
        "stop_sequence": None,
        "usage": {
            "input_tokens": 2095,
            "output_tokens": 503,
            "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": 0,
        },
    }


TEXT = message([{"type": "text", "text": "Hi! My name is Claude."}])
TOOL_USE = message(
    [
        {"type": "text", "text": "I'll check the weather in San Francisco."},
        {
            "type": "tool_use",
            "id": "toolu_01A09q90qw90lq917835lq9",
            "name": "get_weather",
            "input": {"location": "San Francisco, CA"},
        },
    ],
    stop_reason="tool_use",
)


def tool_use(id_: str, location: str) -> dict[str, Any]:
    return {"type": "tool_use", "id": id_, "name": "get_weather", "input": {"location": location}}


def error(type_: str, text: str) -> dict[str, Any]:
    return {
        "type": "error",
        "error": {"type": type_, "message": text},
        "request_id": "req_011CSHoEeqs5C35K2UUqR7Fy",
    }


OVERLOADED = error("overloaded_error", "Overloaded")
RATE_LIMITED = error(
    "rate_limit_error",
    "This request would exceed the rate limit for your organization of 50 input tokens per minute.",
)


def model_for(
    fake: FakeProvider, sleeps: Sleeps | None = None, **kwargs: Any
) -> AnthropicChatModel:
    kwargs.setdefault("api_key", "sk-ant-test")
    return AnthropicChatModel(MODEL, transport=fake.transport, sleep=sleeps, **kwargs)


async def test_plain_text_reply_is_mapped_with_usage_and_stop_reason() -> None:
    reply = await model_for(FakeProvider(ok(TEXT))).achat([ChatMessage.user("Hello")])
    assert reply.content == "Hi! My name is Claude."
    assert reply.tool_calls == ()
    assert reply.stop_reason == "end_turn"
    assert reply.model == "claude-sonnet-4-5-20250929"
    assert reply.usage == Usage(input_tokens=2095, output_tokens=503, total_tokens=2598)
    assert reply.raw == TEXT


async def test_input_tokens_include_prompt_cache_reads_and_writes() -> None:
    body = message([{"type": "text", "text": "ok"}])
    body["usage"] = {
        "input_tokens": 10,
        "output_tokens": 5,
        "cache_creation_input_tokens": 100,
        "cache_read_input_tokens": 1000,
    }
    reply = await model_for(FakeProvider(ok(body))).achat([ChatMessage.user("Hi")])
    assert reply.usage == Usage(input_tokens=1110, output_tokens=5, total_tokens=1115)


async def test_request_is_what_the_messages_api_expects() -> None:
    fake = FakeProvider(ok(TEXT))
    await model_for(fake, max_tokens=2048).achat(
        [
            ChatMessage.system("You are terse."),
            ChatMessage.system("Answer in English."),
            ChatMessage.user("Weather in San Francisco?"),
        ],
        tools=[WeatherTool()],
        temperature=0,
    )
    (request,) = fake.requests
    assert request.method == "POST"
    assert str(request.url) == "https://api.anthropic.com/v1/messages"
    assert request.headers["x-api-key"] == "sk-ant-test"
    assert request.headers["anthropic-version"] == "2023-06-01"
    assert request.headers["content-type"] == "application/json"
    assert "authorization" not in request.headers
    assert fake.body == {
        "model": MODEL,
        "max_tokens": 2048,
        "system": "You are terse.\n\nAnswer in English.",
        "messages": [{"role": "user", "content": "Weather in San Francisco?"}],
        "tools": [
            {
                "name": "get_weather",
                "description": "Get the current weather in a given location",
                "input_schema": WeatherTool().parameters,
            }
        ],
        "temperature": 0,
    }


async def test_no_system_and_no_tools_means_neither_field_and_max_tokens_can_be_overridden() -> (
    None
):
    fake = FakeProvider(ok(TEXT))
    await model_for(fake).achat([ChatMessage.user("Hi")], max_tokens=16)
    assert fake.body == {
        "model": MODEL,
        "max_tokens": 16,
        "messages": [{"role": "user", "content": "Hi"}],
    }


async def test_tool_use_blocks_become_tool_calls() -> None:
    reply = await model_for(FakeProvider(ok(TOOL_USE))).achat([ChatMessage.user("Weather?")])
    assert reply.content == "I'll check the weather in San Francisco."
    assert reply.stop_reason == "tool_use"
    (call,) = reply.tool_calls
    assert call == ToolCall(
        id="toolu_01A09q90qw90lq917835lq9",
        name="get_weather",
        arguments={"location": "San Francisco, CA"},
        raw_arguments='{"location": "San Francisco, CA"}',
    )


async def test_tool_results_go_back_as_tool_result_blocks_in_one_user_turn() -> None:
    two_calls = message(
        [
            {
                "type": "tool_use",
                "id": "toolu_1",
                "name": "get_weather",
                "input": {"location": "A"},
            },
            {
                "type": "tool_use",
                "id": "toolu_2",
                "name": "get_weather",
                "input": {"location": "B"},
            },
        ],
        stop_reason="tool_use",
    )
    fake = FakeProvider(ok(two_calls), ok(TEXT))
    model = model_for(fake)
    messages: list[Any] = [ChatMessage.system("Be brief."), ChatMessage.user("Weather in A and B?")]
    reply = await model.achat(messages, tools=[WeatherTool()])
    messages.append(reply)
    messages += [
        ChatMessage.tool(f"sunny in {c.arguments['location']}", tool_call_id=c.id)
        for c in reply.tool_calls
    ]
    messages.append(ChatMessage.user("And tomorrow?"))
    final = await model.achat(messages, tools=[WeatherTool()])
    assert final.content == "Hi! My name is Claude."
    second = fake.bodies[1]
    assert second["system"] == "Be brief."
    assert second["messages"] == [
        {"role": "user", "content": "Weather in A and B?"},
        {
            "role": "assistant",
            "content": [
                tool_use("toolu_1", "A"),
                tool_use("toolu_2", "B"),
            ],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "toolu_1", "content": "sunny in A"},
                {"type": "tool_result", "tool_use_id": "toolu_2", "content": "sunny in B"},
                {"type": "text", "text": "And tomorrow?"},
            ],
        },
    ]


async def test_assistant_text_and_tool_use_are_sent_back_as_blocks() -> None:
    fake = FakeProvider(ok(TEXT))
    call = ToolCall.create("get_weather", {"location": "Paris"}, id="toolu_9")
    await model_for(fake).achat(
        [
            ChatMessage.user("Weather in Paris?"),
            ChatMessage.assistant("Checking.", tool_calls=[call]),
            ChatMessage.tool('{"temp_c": 18}', tool_call_id="toolu_9"),
        ]
    )
    assert fake.body["messages"][1:] == [
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "Checking."},
                {
                    "type": "tool_use",
                    "id": "toolu_9",
                    "name": "get_weather",
                    "input": {"location": "Paris"},
                },
            ],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "toolu_9", "content": '{"temp_c": 18}'}
            ],
        },
    ]


async def test_tool_input_that_is_not_an_object_is_kept_raw() -> None:
    # The API documents input as an object; compatible servers have sent JSON text instead.
    body = message(
        [{"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": '{"location": '}],
        stop_reason="tool_use",
    )
    (call,) = (await model_for(FakeProvider(ok(body))).achat([ChatMessage.user("?")])).tool_calls
    assert call.arguments == {}
    assert call.raw_arguments == '{"location": '
    assert call.parse_error is not None
    assert "not valid JSON" in call.parse_error


async def test_529_overloaded_is_retried(sleeps: Sleeps) -> None:
    fake = FakeProvider(status(529, OVERLOADED), ok(TEXT))
    reply = await model_for(fake, sleeps).achat([ChatMessage.user("Hi")])
    assert reply.content == "Hi! My name is Claude."
    assert len(fake.requests) == 2
    assert len(sleeps.delays) == 1


async def test_429_waits_as_long_as_retry_after_says(sleeps: Sleeps) -> None:
    fake = FakeProvider(status(429, RATE_LIMITED, {"retry-after": "7"}), ok(TEXT))
    await model_for(fake, sleeps).achat([ChatMessage.user("Hi")])
    assert sleeps.delays == [7.0]


async def test_a_retry_after_past_a_minute_gives_way_to_the_backoff(sleeps: Sleeps) -> None:
    # as the official SDKs do: an hour's wait is not waited for, the usual backoff is
    fake = FakeProvider(status(429, RATE_LIMITED, {"retry-after": "3600"}), ok(TEXT))
    await model_for(fake, sleeps).achat([ChatMessage.user("Hi")])
    (delay,) = sleeps.delays
    assert 0.375 <= delay <= 0.5


async def test_5xx_every_time_ends_in_an_error_naming_provider_model_status_and_message(
    sleeps: Sleeps,
) -> None:
    fake = FakeProvider(*[status(500, error("api_error", "Internal server error"))] * 3)
    with pytest.raises(ProviderError) as info:
        await model_for(fake, sleeps, max_retries=2).achat([ChatMessage.user("Hi")])
    assert str(info.value).startswith(
        "anthropic model 'claude-sonnet-4-5' answered 500 after 3 attempts: "
        "Internal server error [api_error]"
    )
    assert len(fake.requests) == 3
    assert len(sleeps.delays) == 2
    assert info.value.request_id == "req_011CSHoEeqs5C35K2UUqR7Fy"


async def test_overloaded_every_time_names_529(sleeps: Sleeps) -> None:
    fake = FakeProvider(*[status(529, OVERLOADED)] * 2)
    with pytest.raises(ProviderError, match=r"answered 529 after 2 attempts: Overloaded"):
        await model_for(fake, sleeps, max_retries=1).achat([ChatMessage.user("Hi")])


async def test_400_fails_at_once_with_the_providers_message(sleeps: Sleeps) -> None:
    body = error("invalid_request_error", "max_tokens: Input should be a valid integer")
    fake = FakeProvider(status(400, body))
    with pytest.raises(ProviderError) as info:
        await model_for(fake, sleeps).achat([ChatMessage.user("Hi")])
    assert len(fake.requests) == 1
    assert sleeps.delays == []
    assert str(info.value).startswith(
        "anthropic model 'claude-sonnet-4-5' answered 400: "
        "max_tokens: Input should be a valid integer [invalid_request_error]"
    )
    assert info.value.error_type == "invalid_request_error"
    assert info.value.provider_message == "max_tokens: Input should be a valid integer"


async def test_401_points_at_the_key(sleeps: Sleeps) -> None:
    fake = FakeProvider(status(401, error("authentication_error", "invalid x-api-key")))
    with pytest.raises(ProviderError, match=r"answered 401: invalid x-api-key.*ANTHROPIC_API_KEY"):
        await model_for(fake, sleeps).achat([ChatMessage.user("Hi")])


@pytest.mark.parametrize(
    ("body", "missing"),
    [
        ({"id": "msg_1", "type": "message"}, 'no "content" list (found: id, type)'),
        ({"content": ["hello"]}, "content[0] is not a typed block"),
        ({"content": [{"type": "tool_use", "id": "t", "input": {}}]}, "(tool_use) has no name"),
        ({"type": "error", "error": {"type": "api_error", "message": "boom"}}, "boom"),
    ],
)
async def test_a_200_in_an_undocumented_shape_is_a_clear_provider_error(
    body: Any, missing: str
) -> None:
    with pytest.raises(ProviderError) as info:
        await model_for(FakeProvider(ok(body))).achat([ChatMessage.user("Hi")])
    assert str(info.value).startswith(
        "anthropic model 'claude-sonnet-4-5' answered 200 with a body that is not a response "
        "of the Anthropic Messages API: "
    )
    assert missing in str(info.value)


async def test_transport_errors_are_retried_then_reported(sleeps: Sleeps) -> None:
    fake = FakeProvider(*[httpx.ConnectError("[Errno 111] Connection refused")] * 2)
    with pytest.raises(ProviderError) as info:
        await model_for(fake, sleeps, max_retries=1, base_url="http://localhost:8080").achat(
            [ChatMessage.user("Hi")]
        )
    assert str(info.value).startswith(
        "anthropic model 'claude-sonnet-4-5' could not be reached at "
        "http://localhost:8080/v1/messages after 2 attempts: ConnectError"
    )
    assert len(sleeps.delays) == 1


async def test_a_transport_error_then_success_returns_the_answer(sleeps: Sleeps) -> None:
    fake = FakeProvider(httpx.ReadTimeout("timed out"), ok(TEXT))
    reply = await model_for(fake, sleeps).achat([ChatMessage.user("Hi")])
    assert reply.content == "Hi! My name is Claude."


def test_anthropic_without_a_key_is_refused_before_any_request() -> None:
    with pytest.raises(ModelConfigError, match=r"pass api_key= or set ANTHROPIC_API_KEY"):
        AnthropicChatModel(MODEL)


@pytest.mark.parametrize("max_tokens", [0, -1, 1.5, True])
def test_max_tokens_must_be_a_positive_whole_number(max_tokens: Any) -> None:
    with pytest.raises(ModelConfigError, match="max_tokens"):
        AnthropicChatModel(MODEL, api_key="k", max_tokens=max_tokens)


def test_system_as_an_option_is_refused_in_favour_of_system_messages() -> None:
    with pytest.raises(ModelConfigError, match="system"):
        model_for(FakeProvider()).chat([ChatMessage.user("Hi")], system="Be brief.")


async def test_the_adapter_is_a_reasoner() -> None:
    fake = FakeProvider(ok(TEXT))
    completion = await areason(model_for(fake), "Who are you?")
    assert completion == Completion(
        "Hi! My name is Claude.",
        usage=Usage(input_tokens=2095, output_tokens=503, total_tokens=2598),
    )
    assert fake.body["messages"] == [{"role": "user", "content": "Who are you?"}]


def test_sync_chat_from_plain_code() -> None:
    reply = model_for(FakeProvider(ok(TOOL_USE))).chat([ChatMessage.user("Weather?")])
    assert reply.tool_calls[0].name == "get_weather"


async def test_a_failed_tool_result_is_sent_with_is_error() -> None:
    fake = FakeProvider(ok(message([{"type": "text", "text": "Sorry."}])))
    call = ToolCall.create("get_weather", {"location": "Paris"}, id="toolu_3")
    await model_for(fake).achat(
        [
            ChatMessage.user("Weather in Paris?"),
            ChatMessage.assistant(tool_calls=[call]),
            ChatMessage.tool("service down", tool_call_id="toolu_3", is_error=True),
        ]
    )
    assert fake.body["messages"][-1] == {
        "role": "user",
        "content": [
            {
                "type": "tool_result",
                "tool_use_id": "toolu_3",
                "content": "service down",
                "is_error": True,
            }
        ],
    }


def test_only_a_tool_message_can_be_an_error() -> None:
    with pytest.raises(ModelInputError, match="only tool messages can be errors"):
        ChatMessage(role="user", content="hi", is_error=True)


THINKING_TOOL_USE = message(
    [
        {
            "type": "thinking",
            "thinking": "The user wants the weather; I'll call the tool.",
            "signature": "EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds...",
        },
        {"type": "redacted_thinking", "data": "EmwKAhgBEgy3va3pzix/LafPsn4aDFIT2Xlxh0L5L8rLVyIw"},
        {"type": "text", "text": "Let me check."},
        {"type": "tool_use", "id": "toolu_7", "name": "get_weather", "input": {"location": "Oslo"}},
    ],
    stop_reason="tool_use",
)


async def test_thinking_blocks_are_kept_with_their_signature_and_data() -> None:
    reply = await model_for(FakeProvider(ok(THINKING_TOOL_USE))).achat([ChatMessage.user("?")])
    assert reply.thinking == (
        Thinking(
            text="The user wants the weather; I'll call the tool.",
            signature="EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds...",
        ),
        Thinking(data="EmwKAhgBEgy3va3pzix/LafPsn4aDFIT2Xlxh0L5L8rLVyIw"),
    )
    assert reply.thinking[1].redacted
    assert reply.content == "Let me check."


async def test_the_next_request_of_a_tool_loop_carries_the_thinking_blocks_verbatim() -> None:
    fake = FakeProvider(ok(THINKING_TOOL_USE), ok(TEXT))
    model = model_for(fake)
    conversation: list[Any] = [ChatMessage.user("Weather in Oslo?")]
    reply = await model.achat(conversation, thinking={"type": "enabled", "budget_tokens": 2048})
    conversation += [reply, ChatMessage.tool("-3°C", tool_call_id="toolu_7")]
    await model.achat(conversation, thinking={"type": "enabled", "budget_tokens": 2048})
    assistant = fake.bodies[1]["messages"][1]
    assert assistant == {"role": "assistant", "content": THINKING_TOOL_USE["content"]}


async def test_unsigned_thinking_is_never_sent_to_anthropic() -> None:
    fake = FakeProvider(ok(TEXT))
    await model_for(fake).achat(
        [
            ChatMessage.user("Hi"),
            ChatMessage.assistant("Hello", thinking=[Thinking(text="from another provider")]),
            ChatMessage.user("Bye"),
        ]
    )
    assert fake.body["messages"][1] == {"role": "assistant", "content": "Hello"}


async def test_an_empty_assistant_reply_is_left_out_not_sent_as_empty_content() -> None:
    empty = message([], stop_reason="end_turn")
    fake = FakeProvider(ok(empty), ok(TEXT))
    model = model_for(fake)
    conversation: list[Any] = [ChatMessage.user("Say nothing.")]
    reply = await model.achat(conversation)
    assert reply.content is None
    conversation += [reply, ChatMessage.user("Now say hi.")]
    await model.achat(conversation)
    assert fake.bodies[1]["messages"] == [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "Say nothing."},
                {"type": "text", "text": "Now say hi."},
            ],
        }
    ]
    for turn in fake.bodies[1]["messages"]:
        assert turn["content"] != ""


async def test_an_anthropic_refusal_is_the_same_stop_reason_as_openais() -> None:
    body = message([{"type": "text", "text": "I can't help with that."}], stop_reason="refusal")
    reply = await model_for(FakeProvider(ok(body))).achat([ChatMessage.user("?")])
    assert reply.refused
    assert reply.refusal == "I can't help with that."
