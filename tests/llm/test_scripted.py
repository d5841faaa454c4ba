"""ScriptedReasoner and ScriptedChatModel: scripts, recording, exhaustion, sync and async use."""

from __future__ import annotations

import asyncio
import doctest
import threading

import pytest
from llm_fakes import WeatherTool

import weft.llm.scripted
from weft.errors import ModelConfigError, ScriptExhaustedError
from weft.llm import (
    AssistantMessage,
    ChatMessage,
    ChatModel,
    Completion,
    ScriptedChatModel,
    ScriptedReasoner,
    ToolCall,
    ToolSpec,
    Usage,
    areason,
    reason,
)


def test_the_docstring_examples_run() -> None:
    assert doctest.testmod(weft.llm.scripted).failed == 0


def test_a_reasoner_answers_in_order_and_records_prompts() -> None:
    reasoner = ScriptedReasoner(["first", Completion("second", usage=Usage(output_tokens=2))])
    assert reasoner("p1") == "first"
    assert reason(reasoner, "p2") == Completion("second", usage=Usage(output_tokens=2))
    assert reasoner.prompts == ["p1", "p2"]
    assert reasoner.remaining == 0


async def test_a_reasoner_works_from_async_code() -> None:
    reasoner = ScriptedReasoner(["a", "b"])
    assert await areason(reasoner, "p1") == Completion("a")
    assert await reasoner.areason("p2") == Completion("b")
    assert reasoner.prompts == ["p1", "p2"]


def test_a_reasoner_script_can_be_a_function_of_the_prompt() -> None:
    reasoner = ScriptedReasoner(lambda prompt: f"echo: {prompt}")
    assert [reason(reasoner, p).text for p in ("x", "y", "z")] == ["echo: x", "echo: y", "echo: z"]
    assert reasoner.prompts == ["x", "y", "z"]
    assert reasoner.remaining is None


def test_running_out_says_how_many_replies_and_quotes_the_prompt() -> None:
    reasoner = ScriptedReasoner(["only"])
    reasoner("first prompt")
    long_prompt = "Summarise the findings of task a. " + "x" * 500
    with pytest.raises(ScriptExhaustedError) as info:
        reasoner(long_prompt)
    message = str(info.value)
    assert "ScriptedReasoner had 1 reply and all were used" in message
    assert "call #2" in message
    assert "'Summarise the findings of task a. xxx" in message
    assert "x" * 200 not in message
    assert "pass a function of the prompt" in message
    assert reasoner.prompts == ["first prompt", long_prompt]


def test_a_reasoner_is_safe_to_share_between_threads() -> None:
    reasoner = ScriptedReasoner([str(i) for i in range(200)])
    answers: list[str] = []

    def work() -> None:
        for _ in range(50):
            answers.append(reason(reasoner, "p").text)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(answers, key=int) == [str(i) for i in range(200)]


def test_a_single_string_is_refused_as_a_script() -> None:
    with pytest.raises(ModelConfigError, match=r"wrap a single reply in a list"):
        ScriptedReasoner("just one")  # type: ignore[arg-type]


def test_a_chat_model_answers_in_order_and_records_messages_tools_and_options() -> None:
    model = ScriptedChatModel(
        [
            ScriptedChatModel.tool_call("get_weather", {"location": "Paris"}, id="call_1"),
            "It is sunny in Paris.",
        ]
    )
    first = model.chat([ChatMessage.user("Weather in Paris?")], tools=[WeatherTool()], seed=1)
    assert first.tool_calls == (
        ToolCall(
            id="call_1",
            name="get_weather",
            arguments={"location": "Paris"},
            raw_arguments='{"location": "Paris"}',
        ),
    )
    assert first.stop_reason == "tool_calls"
    history = [
        ChatMessage.user("Weather in Paris?"),
        first,
        ChatMessage.tool({"sky": "clear"}, tool_call_id="call_1"),
    ]
    second = model.chat(history, tools=[WeatherTool()])
    assert second == AssistantMessage(
        content="It is sunny in Paris.", stop_reason="stop", model="scripted"
    )
    assert [call.tool_names for call in model.calls] == [("get_weather",), ("get_weather",)]
    assert model.calls[0].options == {"seed": 1}
    assert model.calls[1].messages == (
        ChatMessage.user("Weather in Paris?"),
        ChatMessage.assistant(tool_calls=first.tool_calls),
        ChatMessage(role="tool", content='{"sky": "clear"}', tool_call_id="call_1"),
    )


async def test_a_chat_model_works_from_async_code_and_satisfies_the_protocol() -> None:
    model = ScriptedChatModel(["hello"])
    assert isinstance(model, ChatModel)
    reply = await model.achat([ChatMessage.user("Hi")])
    assert reply.text == "hello"


def test_a_chat_model_script_can_be_a_function_of_messages_and_tools() -> None:
    def answer(messages: list[ChatMessage], tools: list[ToolSpec]) -> str:
        return f"{len(messages)} messages, tools: {[tool.name for tool in tools]}"

    model = ScriptedChatModel(answer)
    reply = model.chat([ChatMessage.system("s"), ChatMessage.user("u")], tools=[WeatherTool()])
    assert reply.content == "2 messages, tools: ['get_weather']"
    assert model.remaining is None


def test_dict_replies_script_text_tool_calls_usage_and_malformed_arguments() -> None:
    model = ScriptedChatModel(
        [
            {
                "content": "Let me look.",
                "tool_calls": [
                    {"name": "memory_read", "arguments": {"keys": ["task:a"]}, "id": "c1"},
                    {"name": "memory_write", "arguments": '{"key": '},
                ],
                "usage": {"input_tokens": 5, "output_tokens": 3},
            }
        ]
    )
    reply = model.chat([ChatMessage.user("go")])
    good, bad = reply.tool_calls
    assert (good.id, good.name, good.arguments) == ("c1", "memory_read", {"keys": ["task:a"]})
    assert (bad.arguments, bad.raw_arguments) == ({}, '{"key": ')
    assert bad.parse_error is not None
    assert bad.id.startswith("call_")
    assert reply.usage == Usage(input_tokens=5, output_tokens=3)
    assert reply.stop_reason == "tool_calls"


def test_a_dict_reply_with_unknown_keys_is_refused() -> None:
    model = ScriptedChatModel([{"text": "hi"}])
    with pytest.raises(ModelConfigError, match=r"unknown keys \['text'\]"):
        model.chat([ChatMessage.user("go")])


@pytest.mark.parametrize(
    ("reply", "problem"),
    [
        (42, r"reply #1 is a int"),
        ({"tool_calls": ["memory_read"]}, r"each tool call is a ToolCall or a dict"),
        ({"content": "hi", "usage": {"tokens": 3}}, r"usage .* is not a Usage"),
    ],
)
def test_a_malformed_scripted_reply_is_a_model_config_error(reply: object, problem: str) -> None:
    model = ScriptedChatModel([reply])  # type: ignore[list-item]
    with pytest.raises(ModelConfigError, match=problem):
        model.chat([ChatMessage.user("go")])


def test_a_chat_model_running_out_quotes_the_last_user_message() -> None:
    model = ScriptedChatModel([])
    with pytest.raises(ScriptExhaustedError) as info:
        model.chat([ChatMessage.system("s"), ChatMessage.user("What next?")])
    assert "ScriptedChatModel had 0 replies" in str(info.value)
    assert "'What next?'" in str(info.value)
    assert len(model.calls) == 1


def test_a_chat_model_is_a_reasoner_in_sync_code() -> None:
    model = ScriptedChatModel([AssistantMessage(content="42", usage=Usage(total_tokens=9))])
    assert model("What is the answer?") == Completion("42", usage=Usage(total_tokens=9))
    assert model.prompts == ["What is the answer?"]


async def test_a_chat_model_is_a_reasoner_in_async_code() -> None:
    model = ScriptedChatModel(["a", "b"])
    assert await areason(model, "p1") == Completion("a")
    assert await asyncio.to_thread(reason, model, "p2") == Completion("b")
    assert model.prompts == ["p1", "p2"]


def test_tool_call_ids_are_fresh_unless_given() -> None:
    one = ScriptedChatModel.tool_call("t", {})
    two = ScriptedChatModel.tool_call("t", {})
    assert one.tool_calls[0].id != two.tool_calls[0].id
    assert ScriptedChatModel.tool_call("t", id="x").tool_calls[0].id == "x"
