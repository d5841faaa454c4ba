"""Conversations in the providers' own dict forms, read in one place; malformed ones refused."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from llm_fakes import FakeProvider, ok

from weft.errors import ModelInputError
from weft.llm import AnthropicChatModel, ChatMessage, OpenAIChatModel, ToolCall
from weft.llm.messages import Thinking, as_chat_messages

OPENAI_CONVERSATION: list[dict[str, Any]] = [
    {"role": "developer", "content": "Be brief."},
    {"role": "user", "content": [{"type": "text", "text": "Weather in Paris?"}], "name": "ann"},
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "call_1",
                "type": "function",
                "function": {"name": "get_weather", "arguments": '{"location": "Paris"}'},
            }
        ],
    },
    {"role": "tool", "tool_call_id": "call_1", "content": '{"temp_c": 18}'},
]

ANTHROPIC_CONVERSATION: list[dict[str, Any]] = [
    {"role": "user", "content": "Weather in Paris?"},
    {
        "role": "assistant",
        "content": [
            {"type": "thinking", "thinking": "Call the tool.", "signature": "sig=="},
            {"type": "redacted_thinking", "data": "enc=="},
            {"type": "text", "text": "Checking."},
            {
                "type": "tool_use",
                "id": "toolu_1",
                "name": "get_weather",
                "input": {"location": "P"},
            },
        ],
    },
    {
        "role": "user",
        "content": [
            {
                "type": "tool_result",
                "tool_use_id": "toolu_1",
                "content": [{"type": "text", "text": "service down"}],
                "is_error": True,
            },
            {"type": "text", "text": "Try again?"},
        ],
    },
]


def test_openai_dicts_become_chat_messages() -> None:
    assert as_chat_messages(OPENAI_CONVERSATION) == [
        ChatMessage.system("Be brief."),
        ChatMessage.user("Weather in Paris?", name="ann"),
        ChatMessage.assistant(
            tool_calls=[ToolCall.create("get_weather", {"location": "Paris"}, id="call_1")]
        ),
        ChatMessage.tool('{"temp_c": 18}', tool_call_id="call_1"),
    ]


def test_anthropic_dicts_become_chat_messages_one_tool_message_per_result() -> None:
    call = ToolCall.parse(id="toolu_1", name="get_weather", raw={"location": "P"})
    assert as_chat_messages(ANTHROPIC_CONVERSATION) == [
        ChatMessage.user("Weather in Paris?"),
        ChatMessage.assistant(
            "Checking.",
            tool_calls=[call],
            thinking=[Thinking(text="Call the tool.", signature="sig=="), Thinking(data="enc==")],
        ),
        ChatMessage.tool("service down", tool_call_id="toolu_1", is_error=True),
        ChatMessage.user("Try again?"),
    ]


async def test_an_anthropic_dict_conversation_is_sent_back_as_it_was_given() -> None:
    fake = FakeProvider(ok({"content": [{"type": "text", "text": "ok"}], "stop_reason": "x"}))
    model = AnthropicChatModel("claude-sonnet-4-5", api_key="k", transport=fake.transport)
    await model.achat(ANTHROPIC_CONVERSATION)
    sent = fake.body["messages"]
    assert sent[1] == ANTHROPIC_CONVERSATION[1]
    assert sent[2]["content"][0] == {
        "type": "tool_result",
        "tool_use_id": "toolu_1",
        "content": "service down",
        "is_error": True,
    }


async def test_an_openai_dict_conversation_sends_what_chat_messages_send() -> None:
    ok_body = {"choices": [{"message": {"role": "assistant", "content": "ok"}}]}
    fake = FakeProvider(ok(ok_body), ok(ok_body))
    model = OpenAIChatModel("gpt-4o-mini", api_key="k", transport=fake.transport)
    await model.achat(OPENAI_CONVERSATION)
    await model.achat(as_chat_messages(OPENAI_CONVERSATION))
    first, second = fake.bodies
    assert first == second
    assert first["messages"][0] == {"role": "system", "content": "Be brief."}


def test_dicts_and_chat_messages_mix_in_one_conversation() -> None:
    mixed: list[Any] = [ChatMessage.system("s"), {"role": "user", "content": "u"}]
    assert as_chat_messages(mixed) == [ChatMessage.system("s"), ChatMessage.user("u")]


def test_an_openai_refusal_dict_keeps_the_refusal_as_its_text() -> None:
    (message,) = as_chat_messages([{"role": "assistant", "content": None, "refusal": "No."}])
    assert message.content == "No."


@pytest.mark.parametrize(
    ("message", "error"),
    [
        ({"content": "hi"}, r"messages\[0\] has role None"),
        ({"role": "robot", "content": "hi"}, "has role 'robot'"),
        ({"role": "user"}, "user message without content"),
        ({"role": "user", "content": 42}, "content of type int"),
        (
            {"role": "user", "content": [{"text": "no type"}]},
            r"content\[0\] is not a content block",
        ),
        (
            {"role": "user", "content": [{"type": "image", "source": {}}]},
            r"messages\[0\]\.content\[0\] is a 'image' block",
        ),
        ({"role": "user", "content": [{"type": "text", "text": 5}]}, "needs a string 'text'"),
        ({"role": "tool", "content": "r"}, "without a tool_call_id"),
        ({"role": "user", "content": [{"type": "tool_result"}]}, "without a tool_use_id"),
        (
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": "t", "is_error": 1}],
            },
            "is_error must be true or false",
        ),
        ({"role": "assistant", "tool_calls": "call"}, "tool_calls must be a list"),
        ({"role": "assistant", "tool_calls": [{"id": "c"}]}, r"tool_calls\[0\] is not a tool call"),
        (
            {"role": "assistant", "tool_calls": [{"function": {"arguments": "{}"}}]},
            "needs a string 'name'",
        ),
        (
            {"role": "assistant", "content": [{"type": "tool_use", "id": "t", "input": {}}]},
            "needs a string 'name'",
        ),
        (
            {"role": "assistant", "content": [{"type": "thinking", "signature": "s"}]},
            "needs a string 'thinking'",
        ),
        (
            {"role": "assistant", "content": [{"type": "redacted_thinking"}]},
            "needs a string 'data'",
        ),
        ({"role": "user", "content": "x", "name": 3}, r"messages\[0\]\.name must be a string"),
    ],
)
def test_a_malformed_dict_is_a_model_input_error_naming_the_place(
    message: dict[str, Any], error: str
) -> None:
    with pytest.raises(ModelInputError, match=error):
        as_chat_messages([message])


def test_malformed_arguments_in_a_dict_are_kept_raw_like_a_models() -> None:
    raw = {
        "role": "assistant",
        "tool_calls": [{"id": "c", "function": {"name": "f", "arguments": "{"}}],
    }
    ((call,),) = [m.tool_calls for m in as_chat_messages([raw])]
    assert call.raw_arguments == "{"
    assert call.parse_error is not None


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=5),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)
keys = st.sampled_from(
    ["role", "content", "tool_calls", "tool_call_id", "name", "refusal", "type", "text", "id"]
)
roles = st.sampled_from(["system", "developer", "user", "assistant", "tool", "x"])


@settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.dictionaries(keys, json_values | roles, max_size=5))
def test_any_dict_is_read_or_refused_with_a_model_input_error(message: dict[str, Any]) -> None:
    try:
        result = as_chat_messages([message])
    except ModelInputError:
        return
    assert all(isinstance(each, ChatMessage) for each in result)
