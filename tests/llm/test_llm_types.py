"""Messages, tool calls and tool definitions; the retry helpers; the package's public names."""

from __future__ import annotations

import email.utils
import subprocess
import sys
from typing import Any

import pytest
from llm_fakes import WeatherTool

import weft.llm
from weft.errors import ModelInputError
from weft.llm import AssistantMessage, ChatMessage, ToolCall, ToolSpec, as_tool_spec
from weft.llm._http import INITIAL_BACKOFF, MAX_BACKOFF, backoff_delay, retry_after
from weft.llm.messages import as_chat_messages
from weft.llm.tools import as_tool_specs


def test_public_names_are_pinned() -> None:
    assert weft.llm.__all__ == [
        "REFUSAL",
        "AnthropicChatModel",
        "AssistantMessage",
        "ChatMessage",
        "ChatModel",
        "ChatModelBase",
        "Completion",
        "MessageDone",
        "MessageLike",
        "OpenAIChatModel",
        "Reasoner",
        "ScriptedCall",
        "ScriptedChatModel",
        "ScriptedReasoner",
        "StreamEvent",
        "TextDelta",
        "Thinking",
        "ThinkingDelta",
        "ToolCall",
        "ToolCallDelta",
        "ToolCallStarted",
        "ToolDefinition",
        "ToolLike",
        "ToolSpec",
        "Usage",
        "areason",
        "as_tool_spec",
        "astream",
        "reason",
    ]
    for name in weft.llm.__all__:
        assert hasattr(weft.llm, name), name


def test_importing_the_model_layer_does_not_import_httpx() -> None:
    code = (
        "import sys, weft.llm; assert 'httpx' not in sys.modules, 'imported early'; "
        "weft.llm.OpenAIChatModel('m', base_url='http://localhost:1/v1'); "
        "assert 'httpx' not in sys.modules, 'imported by the constructor'"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_roles_are_checked() -> None:
    with pytest.raises(ModelInputError, match=r"unknown chat role 'bot'; .* system, user"):
        ChatMessage(role="bot", content="hi")  # type: ignore[arg-type]


def test_a_tool_message_must_name_its_call() -> None:
    with pytest.raises(ModelInputError, match="tool_call_id="):
        ChatMessage(role="tool", content="42")


def test_only_assistant_messages_carry_tool_calls() -> None:
    with pytest.raises(ModelInputError, match="only assistant messages carry tool_calls"):
        ChatMessage(role="user", content="hi", tool_calls=(ToolCall.create("t", {}),))


def test_tool_results_that_are_not_text_are_sent_as_json() -> None:
    message = ChatMessage.tool({"ok": True, "value": "é"}, tool_call_id="c")
    assert message.content == '{"ok": true, "value": "é"}'


def test_lists_of_tool_calls_are_stored_as_tuples() -> None:
    call = ToolCall.create("t", {"a": 1}, id="c")
    assert ChatMessage(role="assistant", tool_calls=[call]).tool_calls == (call,)  # type: ignore[arg-type]
    assert AssistantMessage(tool_calls=[call]).tool_calls == (call,)  # type: ignore[arg-type]


def test_a_single_message_instead_of_a_list_is_refused_with_the_fix() -> None:
    with pytest.raises(ModelInputError, match=r"wrap it: \[ChatMessage.user"):
        as_chat_messages(ChatMessage.user("hi"))  # type: ignore[arg-type]
    with pytest.raises(ModelInputError, match=r"messages\[1\] is a int"):
        as_chat_messages([ChatMessage.user("hi"), 7])  # type: ignore[list-item]


@pytest.mark.parametrize(
    ("raw", "arguments", "error"),
    [
        ('{"a": 1}', {"a": 1}, None),
        ({"a": 1}, {"a": 1}, None),
        ("", {}, None),
        ("{'a': 1}", {}, "not valid JSON"),
        ("null", {}, "a JSON null"),
        ("[1]", {}, "a JSON array"),
    ],
)
def test_tool_call_arguments_parse_without_raising(raw: Any, arguments: Any, error: Any) -> None:
    call = ToolCall.parse(id="c", name="t", raw=raw)
    assert call.arguments == arguments
    if error is None:
        assert call.parse_error is None
    else:
        assert error in (call.parse_error or "")
        assert call.raw_arguments == raw


def test_tool_definitions_in_every_accepted_form() -> None:
    schema = {"type": "object", "properties": {"q": {"type": "string"}}}
    expected = ToolSpec(name="search", description="Search.", parameters=schema)
    forms: list[Any] = [
        expected,
        {
            "type": "function",
            "function": {"name": "search", "description": "Search.", "parameters": schema},
        },
        {"name": "search", "description": "Search.", "input_schema": schema},
        {"name": "search", "description": "Search.", "parameters": schema},
    ]
    for form in forms:
        assert as_tool_spec(form) == expected
    assert as_tool_spec(WeatherTool()).name == "get_weather"


def test_a_tool_definition_in_no_known_form_is_refused() -> None:
    with pytest.raises(ValueError, match=r"in no known form; expected \{'type': 'function'"):
        as_tool_spec({"function": "search"})
    with pytest.raises(ValueError, match="has no name"):
        as_tool_spec({"name": "", "parameters": {}})
    with pytest.raises(ModelInputError, match="is not a tool definition"):
        as_tool_spec(42)  # type: ignore[arg-type]


def test_two_tools_of_one_name_are_refused() -> None:
    with pytest.raises(ValueError, match="two tools are named 'get_weather'"):
        as_tool_specs([WeatherTool(), WeatherTool()])


def test_weft_memory_tools_render_as_they_render_themselves() -> None:
    memory = pytest.importorskip("weft.memory")
    tools = memory.memory_tools(memory.AgentMemory())
    specs = as_tool_specs(tools)
    assert [spec.name for spec in specs] == ["memory_list", "memory_read", "memory_write"]
    assert [spec.openai() for spec in specs] == tools.openai()
    assert [spec.anthropic() for spec in specs] == tools.anthropic()


@pytest.mark.parametrize(
    ("headers", "seconds"),
    [
        ({"retry-after": "3"}, 3.0),
        ({"retry-after": "1.5"}, 1.5),
        ({"retry-after-ms": "200", "retry-after": "9"}, 0.2),
        ({"retry-after": "soon"}, None),
        ({}, None),
    ],
)
def test_retry_after_is_read_in_seconds(headers: dict[str, str], seconds: float | None) -> None:
    assert retry_after(headers) == seconds


def test_retry_after_may_be_an_http_date() -> None:
    header = email.utils.formatdate(1_000_030, usegmt=True)
    assert retry_after({"retry-after": header}, now=1_000_000) == pytest.approx(30)


def test_backoff_doubles_is_capped_and_jittered_within_three_quarters_to_full() -> None:
    assert backoff_delay(0, rand=lambda: 0.0) == INITIAL_BACKOFF
    assert backoff_delay(0, rand=lambda: 1.0) == INITIAL_BACKOFF * 0.75
    assert backoff_delay(2, rand=lambda: 0.0) == INITIAL_BACKOFF * 4
    assert backoff_delay(30, rand=lambda: 0.0) == MAX_BACKOFF
    assert backoff_delay(10_000, rand=lambda: 1.0) == MAX_BACKOFF * 0.75
