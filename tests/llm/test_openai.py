"""OpenAIChatModel against a mock server answering exactly as Chat Completions documents."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import httpx
import pytest
from llm_fakes import FakeProvider, Sleeps, WeatherTool, ok, status

from weft.errors import ModelConfigError, ProviderError
from weft.llm import (
    AssistantMessage,
    ChatMessage,
    Completion,
    OpenAIChatModel,
    ToolCall,
    ToolSpec,
    Usage,
    areason,
    reason,
)

MODEL = "gpt-4o-mini"


def completion(message: dict[str, Any], finish_reason: str = "stop") -> dict[str, Any]:
    """A Chat Completions response body, as the API reference shows it."""
    return {
        "id": "chatcmpl-B9MBs8CjcvOU2jLn4n570S5qMJKcT",
        "object": "chat.completion",
        "created": 1741569952,
        "model": "gpt-4o-mini-2024-07-18",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "refusal": None, "annotations": [], **message},
                "logprobs": None,
                "finish_reason": finish_reason,
            }
        ],
        "usage": {
            "prompt_tokens": 19,
            "completion_tokens": 10,
            "total_tokens": 29,
            "prompt_tokens_details": {"cached_tokens": 0, "audio_tokens": 0},
            "completion_tokens_details": {
                "reasoning_tokens": 0,
                "audio_tokens": 0,
                "accepted_prediction_tokens": 0,
                "rejected_prediction_tokens": 0,
            },
        },
        "service_tier": "default",
        "system_fingerprint": "fp_06737a9306",
    }


TEXT = completion({"content": "Hello! How can I assist you today?"})
TOOL_CALL = completion(
    {
        "content": None,
        "tool_calls": [
            {
                "id": "call_abc123",
                "type": "function",
                "function": {"name": "get_weather", "arguments": '{\n"location": "Boston, MA"\n}'},
            }
        ],
    },
    finish_reason="tool_calls",
)


def error(message: str, type_: str, code: str | None = None, param: str | None = None) -> Any:
    return {"error": {"message": message, "type": type_, "param": param, "code": code}}


RATE_LIMITED = error(
    "Rate limit reached for gpt-4o-mini in organization org-123 on requests per min (RPM): "
    "Limit 3, Used 3, Requested 1. Please try again in 20s.",
    "requests",
    "rate_limit_exceeded",
)
SERVER_ERROR = error(
    "The server had an error while processing your request. Sorry about that!", "server_error"
)


def model_for(fake: FakeProvider, sleeps: Sleeps | None = None, **kwargs: Any) -> OpenAIChatModel:
    kwargs.setdefault("api_key", "sk-test")
    return OpenAIChatModel(MODEL, transport=fake.transport, sleep=sleeps, **kwargs)


async def test_plain_text_reply_is_mapped_with_usage_and_finish_reason() -> None:
    fake = FakeProvider(ok(TEXT))
    reply = await model_for(fake).achat([ChatMessage.user("Hello!")])
    assert reply.content == "Hello! How can I assist you today?"
    assert reply.tool_calls == ()
    assert reply.stop_reason == "stop"
    assert reply.model == "gpt-4o-mini-2024-07-18"
    assert reply.usage == Usage(input_tokens=19, output_tokens=10, total_tokens=29)
    assert reply.raw == TEXT


async def test_request_is_what_chat_completions_expects() -> None:
    fake = FakeProvider(ok(TEXT))
    model = model_for(fake, default_options={"temperature": 0})
    tools = [
        WeatherTool(),
        ToolSpec(name="noop", description="Does nothing"),
        {"type": "function", "function": {"name": "from_openai", "parameters": {"type": "object"}}},
        {"name": "from_anthropic", "description": "d", "input_schema": {"type": "object"}},
    ]
    await model.achat(
        [ChatMessage.system("You are terse."), ChatMessage.user("Weather in Boston?")],
        tools=tools,
        tool_choice="auto",
    )
    (request,) = fake.requests
    assert request.method == "POST"
    assert str(request.url) == "https://api.openai.com/v1/chat/completions"
    assert request.headers["authorization"] == "Bearer sk-test"
    assert request.headers["content-type"] == "application/json"
    assert fake.body == {
        "model": MODEL,
        "messages": [
            {"role": "system", "content": "You are terse."},
            {"role": "user", "content": "Weather in Boston?"},
        ],
        "tools": [
            {
                "type": "function",
                "function": {
                    "name": "get_weather",
                    "description": "Get the current weather in a given location",
                    "parameters": WeatherTool().parameters,
                },
            },
            {
                "type": "function",
                "function": {
                    "name": "noop",
                    "description": "Does nothing",
                    "parameters": {"type": "object", "properties": {}},
                },
            },
            {
                "type": "function",
                "function": {
                    "name": "from_openai",
                    "description": "",
                    "parameters": {"type": "object"},
                },
            },
            {
                "type": "function",
                "function": {
                    "name": "from_anthropic",
                    "description": "d",
                    "parameters": {"type": "object"},
                },
            },
        ],
        "temperature": 0,
        "tool_choice": "auto",
    }


async def test_no_tools_means_no_tools_field_and_call_options_override_defaults() -> None:
    fake = FakeProvider(ok(TEXT))
    model = model_for(fake, default_options={"temperature": 0, "seed": 7})
    await model.achat([ChatMessage.user("Hi")], temperature=0.5)
    assert fake.body == {
        "model": MODEL,
        "messages": [{"role": "user", "content": "Hi"}],
        "temperature": 0.5,
        "seed": 7,
    }


async def test_tool_call_reply_is_parsed_into_tool_calls() -> None:
    reply = await model_for(FakeProvider(ok(TOOL_CALL))).achat([ChatMessage.user("Weather?")])
    assert reply.content is None
    assert reply.text == ""
    assert reply.stop_reason == "tool_calls"
    (call,) = reply.tool_calls
    assert call.id == "call_abc123"
    assert call.name == "get_weather"
    assert call.arguments == {"location": "Boston, MA"}
    assert call.raw_arguments == '{\n"location": "Boston, MA"\n}'
    assert call.parse_error is None


async def test_tool_result_round_trip_sends_the_call_and_its_result_back() -> None:
    fake = FakeProvider(ok(TOOL_CALL), ok(TEXT))
    model = model_for(fake)
    messages: list[Any] = [ChatMessage.user("Weather in Boston?")]
    reply = await model.achat(messages, tools=[WeatherTool()])
    messages.append(reply)
    for call in reply.tool_calls:
        messages.append(ChatMessage.tool({"temp_f": 72}, tool_call_id=call.id))
    final = await model.achat(messages, tools=[WeatherTool()])
    assert final.content == "Hello! How can I assist you today?"
    assert fake.bodies[1]["messages"] == [
        {"role": "user", "content": "Weather in Boston?"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_abc123",
                    "type": "function",
                    "function": {
                        "name": "get_weather",
                        "arguments": '{\n"location": "Boston, MA"\n}',
                    },
                }
            ],
        },
        {"role": "tool", "tool_call_id": "call_abc123", "content": '{"temp_f": 72}'},
    ]


@pytest.mark.parametrize(
    ("arguments", "problem"),
    [('{"location": "Bos', "not valid JSON"), ('["Boston"]', "a JSON array")],
)
async def test_malformed_tool_arguments_are_kept_raw_and_never_raise(
    arguments: str, problem: str
) -> None:
    body = completion(
        {
            "content": None,
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": arguments},
                }
            ],
        },
        "tool_calls",
    )
    (call,) = (await model_for(FakeProvider(ok(body))).achat([ChatMessage.user("?")])).tool_calls
    assert call.arguments == {}
    assert call.raw_arguments == arguments
    assert call.parse_error is not None
    assert problem in call.parse_error
    assert "get_weather" in call.parse_error


async def test_malformed_arguments_are_sent_back_as_the_model_wrote_them() -> None:
    fake = FakeProvider(ok(TEXT))
    call = ToolCall.parse(id="call_1", name="get_weather", raw='{"location": ')
    messages = [
        ChatMessage.user("?"),
        ChatMessage.assistant(tool_calls=[call]),
        ChatMessage.tool("error: arguments are not JSON", tool_call_id="call_1"),
    ]
    await model_for(fake).achat(messages)
    sent = fake.body["messages"][1]["tool_calls"][0]["function"]["arguments"]
    assert sent == '{"location": '


async def test_429_is_retried_after_the_wait_the_provider_asked_for(sleeps: Sleeps) -> None:
    fake = FakeProvider(status(429, RATE_LIMITED, {"retry-after": "2"}), ok(TEXT))
    reply = await model_for(fake, sleeps).achat([ChatMessage.user("Hi")])
    assert reply.content == "Hello! How can I assist you today?"
    assert len(fake.requests) == 2
    assert sleeps.delays == [2.0]
    assert fake.bodies[0] == fake.bodies[1]


async def test_retry_after_ms_is_honoured(sleeps: Sleeps) -> None:
    fake = FakeProvider(status(429, RATE_LIMITED, {"retry-after-ms": "250"}), ok(TEXT))
    await model_for(fake, sleeps).achat([ChatMessage.user("Hi")])
    assert sleeps.delays == [0.25]


async def test_5xx_every_time_ends_in_an_error_naming_provider_model_status_and_message(
    sleeps: Sleeps,
) -> None:
    fake = FakeProvider(*[status(500, SERVER_ERROR) for _ in range(4)])
    with pytest.raises(ProviderError) as info:
        await model_for(fake, sleeps, max_retries=3).achat([ChatMessage.user("Hi")])
    error = info.value
    assert len(fake.requests) == 4
    assert len(sleeps.delays) == 3
    assert sleeps.delays == sorted(sleeps.delays)  # backing off, never shrinking
    message = str(error)
    assert message.startswith("openai model 'gpt-4o-mini' answered 500 after 4 attempts: ")
    assert "The server had an error while processing your request" in message
    assert "max_retries" in message
    assert (error.provider, error.model, error.status, error.attempts) == ("openai", MODEL, 500, 4)
    assert error.error_type == "server_error"


async def test_rate_limit_exhausted_says_so(sleeps: Sleeps) -> None:
    fake = FakeProvider(*[status(429, RATE_LIMITED) for _ in range(2)])
    with pytest.raises(ProviderError, match=r"answered 429 after 2 attempts: Rate limit reached"):
        await model_for(fake, sleeps, max_retries=1).achat([ChatMessage.user("Hi")])


@pytest.mark.parametrize(
    ("code", "body", "hint"),
    [
        (
            400,
            error(
                "Invalid type for 'messages[0].content'",
                "invalid_request_error",
                "invalid_type",
                "messages[0].content",
            ),
            "check the messages, tools and options",
        ),
        (
            401,
            error(
                "Incorrect API key provided: sk-test. You can find your API key at ...",
                "invalid_request_error",
                "invalid_api_key",
            ),
            "OPENAI_API_KEY",
        ),
        (
            404,
            error(
                "The model `gpt-5-mini-typo` does not exist or you do not have access to it.",
                "invalid_request_error",
                "model_not_found",
            ),
            "Check the model name",
        ),
    ],
)
async def test_other_4xx_fail_at_once_with_the_providers_message(
    sleeps: Sleeps, code: int, body: Any, hint: str
) -> None:
    fake = FakeProvider(status(code, body, {"x-request-id": "req_abc"}))
    with pytest.raises(ProviderError) as info:
        await model_for(fake, sleeps).achat([ChatMessage.user("Hi")])
    assert len(fake.requests) == 1
    assert sleeps.delays == []
    error = info.value
    assert str(error).startswith(f"openai model 'gpt-4o-mini' answered {code}: ")
    assert body["error"]["message"] in str(error)
    assert hint in str(error)
    assert error.provider_message == body["error"]["message"]
    assert error.error_type == "invalid_request_error"
    assert (error.status, error.attempts, error.request_id) == (code, 1, "req_abc")


@pytest.mark.parametrize(
    ("body", "missing"),
    [
        ({"id": "x", "object": "chat.completion"}, 'no "choices" list (found: id, object)'),
        ({"choices": []}, 'no "choices" list'),
        ({"choices": [{"index": 0, "finish_reason": "stop"}]}, 'choices[0] has no "message"'),
        (
            {"choices": [{"message": {"content": None, "tool_calls": [{"id": "c"}]}}]},
            "tool_calls[0] has no function name",
        ),
        ([1, 2], "expected a JSON object, got a JSON array"),
    ],
)
async def test_a_200_in_an_undocumented_shape_is_a_clear_provider_error(
    body: Any, missing: str
) -> None:
    with pytest.raises(ProviderError) as info:
        await model_for(FakeProvider(ok(body))).achat([ChatMessage.user("Hi")])
    message = str(info.value)
    assert message.startswith("openai model 'gpt-4o-mini' answered 200 with a body that is not")
    assert missing in message
    assert "base URL" in message
    assert info.value.status == 200


async def test_a_200_that_is_not_json_is_a_provider_error() -> None:
    fake = FakeProvider(httpx.Response(200, text="<html>proxy login</html>"))
    with pytest.raises(ProviderError, match=r"answered 200 with a body that is not JSON"):
        await model_for(fake).achat([ChatMessage.user("Hi")])


async def test_transport_errors_are_retried(sleeps: Sleeps) -> None:
    fake = FakeProvider(httpx.ConnectError("connection refused"), ok(TEXT))
    reply = await model_for(fake, sleeps).achat([ChatMessage.user("Hi")])
    assert reply.content
    assert len(fake.requests) == 2
    assert len(sleeps.delays) == 1
    assert 0.375 <= sleeps.delays[0] <= 0.5


async def test_timeouts_every_time_end_in_an_error_without_status(sleeps: Sleeps) -> None:
    fake = FakeProvider(*[httpx.ReadTimeout("timed out") for _ in range(3)])
    with pytest.raises(ProviderError) as info:
        await model_for(fake, sleeps, max_retries=2, timeout=5).achat([ChatMessage.user("Hi")])
    message = str(info.value)
    assert "could not be reached at https://api.openai.com/v1/chat/completions" in message
    assert "after 3 attempts: ReadTimeout: timed out" in message
    assert "timeout is 5s" in message
    assert info.value.status is None
    assert info.value.attempts == 3


async def test_a_local_server_needs_no_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", "http://localhost:11434/v1/")
    fake = FakeProvider(ok(TEXT))
    model = OpenAIChatModel("qwen2.5:7b", transport=fake.transport)
    await model.achat([ChatMessage.user("Hi")])
    (request,) = fake.requests
    assert str(request.url) == "http://localhost:11434/v1/chat/completions"
    assert "authorization" not in request.headers


def test_the_key_comes_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-from-env")
    fake = FakeProvider(ok(TEXT))
    OpenAIChatModel(MODEL, transport=fake.transport).chat([ChatMessage.user("Hi")])
    assert fake.requests[0].headers["authorization"] == "Bearer sk-from-env"


def test_openai_without_a_key_is_refused_before_any_request() -> None:
    with pytest.raises(ModelConfigError, match=r"pass api_key= or set OPENAI_API_KEY"):
        OpenAIChatModel(MODEL)


@pytest.mark.parametrize("option", ["model", "stream"])
def test_options_weft_sets_itself_are_refused(option: str) -> None:
    model = model_for(FakeProvider())
    with pytest.raises(ModelConfigError, match=option):
        model.chat([ChatMessage.user("Hi")], **{option: True})


def test_default_options_weft_sets_itself_are_refused_at_construction() -> None:
    with pytest.raises(ModelConfigError, match=r"\['messages'\] are set by weft itself"):
        model_for(FakeProvider(), default_options={"messages": []})


def test_repr_never_shows_the_key() -> None:
    model = OpenAIChatModel(MODEL, api_key="sk-secret")
    assert "sk-secret" not in repr(model)
    assert (
        repr(model) == "OpenAIChatModel(model='gpt-4o-mini', base_url='https://api.openai.com/v1')"
    )


def test_sync_chat_works_from_a_thread_with_no_event_loop() -> None:
    fake = FakeProvider(ok(TEXT))
    model = model_for(fake)
    results: list[AssistantMessage] = []
    thread = threading.Thread(target=lambda: results.append(model.chat([ChatMessage.user("Hi")])))
    thread.start()
    thread.join()
    assert results[0].content == "Hello! How can I assist you today?"


async def test_sync_chat_works_even_inside_a_running_loop() -> None:
    model = model_for(FakeProvider(ok(TEXT)))
    assert model.chat([ChatMessage.user("Hi")]).content


async def test_the_adapter_is_a_reasoner_sync_and_async() -> None:
    fake = FakeProvider(ok(TEXT), ok(TEXT), ok(TEXT))
    model = model_for(fake)
    expected = Completion(
        "Hello! How can I assist you today?",
        usage=Usage(input_tokens=19, output_tokens=10, total_tokens=29),
    )
    assert await areason(model, "Say hi") == expected
    assert await asyncio.to_thread(reason, model, "Say hi") == expected
    assert await asyncio.to_thread(model, "Say hi") == expected
    assert [body["messages"] for body in fake.bodies] == [
        [{"role": "user", "content": "Say hi"}]
    ] * 3


async def test_one_pooled_client_serves_calls_on_one_loop() -> None:
    fake = FakeProvider(ok(TEXT), ok(TEXT))
    async with model_for(fake) as model:
        await model.achat([ChatMessage.user("1")])
        client = model._client
        await model.achat([ChatMessage.user("2")])
        assert model._client is client is not None
    assert model._client is None


def test_a_model_outlives_event_loops() -> None:
    fake = FakeProvider(ok(TEXT), ok(TEXT), ok(TEXT))
    model = model_for(fake)
    for _ in range(2):
        assert asyncio.run(model.achat([ChatMessage.user("Hi")])).content
    assert model.chat([ChatMessage.user("Hi")]).content
    assert len(fake.requests) == 3


async def test_a_refusal_is_the_refusal_stop_reason_with_its_text_not_an_empty_answer() -> None:
    body = completion({"content": None, "refusal": "I'm sorry, I can't help with that."})
    reply = await model_for(FakeProvider(ok(body))).achat([ChatMessage.user("Something bad")])
    assert reply.refused
    assert reply.stop_reason == "refusal"
    assert reply.refusal == "I'm sorry, I can't help with that."
    assert reply.content is None
    assert reply.to_message().content == "I'm sorry, I can't help with that."


async def test_an_answer_is_no_refusal() -> None:
    reply = await model_for(FakeProvider(ok(TEXT))).achat([ChatMessage.user("Hi")])
    assert not reply.refused
    assert reply.refusal is None
    assert reply.stop_reason == "stop"


async def test_reasoning_text_of_compatible_servers_is_read_as_thinking_and_not_sent_back() -> None:
    body = completion({"content": "4", "reasoning_content": "2 + 2 is 4."})
    fake = FakeProvider(ok(body), ok(TEXT))
    model = model_for(fake)
    reply = await model.achat([ChatMessage.user("2+2?")])
    assert [t.text for t in reply.thinking] == ["2 + 2 is 4."]
    assert reply.thinking[0].signature is None
    await model.achat([ChatMessage.user("2+2?"), reply, ChatMessage.user("and 3+3?")])
    assert fake.bodies[1]["messages"][1] == {"role": "assistant", "content": "4"}
