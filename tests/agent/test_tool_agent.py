"""ToolAgent's loop: tools called and answered, several side by side, the memory tools and
the prompt, errors and hostile calls answered to the model, limits and the conclusion
stage, and the mistakes refused when the agent is built."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from weft.agent import ToolAgent, ToolAgentResult
from weft.calls import Tool, tool
from weft.errors import AgentBuildError, PauseError
from weft.graph import interrupt
from weft.llm import (
    AssistantMessage,
    ChatMessage,
    ChatModelBase,
    ScriptedChatModel,
    ToolCall,
    Usage,
)
from weft.llm.tools import ToolLike
from weft.memory import AgentMemory
from weft.store import Store

call = ScriptedChatModel.tool_call


def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


def calls_of(*calls: tuple[str, dict[str, Any]]) -> AssistantMessage:
    """One reply calling several tools (ids c0, c1, ...)."""
    made = [ToolCall.create(name, args, id=f"c{i}") for i, (name, args) in enumerate(calls)]
    return AssistantMessage(tool_calls=tuple(made))


def finished(result: object) -> ToolAgentResult:
    assert isinstance(result, ToolAgentResult), result
    return result


def tool_messages(result: ToolAgentResult) -> list[ChatMessage]:
    return [m for m in result.messages if m.role == "tool"]


# ---------------------------------------------------------------- the loop


def test_a_tool_result_goes_back_to_the_model_until_it_answers_in_text() -> None:
    model = ScriptedChatModel([call("add", {"a": 2, "b": 3}, id="c1"), "2 + 3 = 5"])
    result = finished(ToolAgent(model, tools=[add]).run("What is 2 + 3?"))
    assert (result.answer, result.stop_reason, result.iterations) == ("2 + 3 = 5", "answered", 2)
    seen = model.calls[1].messages
    assert [m.role for m in seen] == ["system", "user", "assistant", "tool"]
    assert (seen[-1].content, seen[-1].tool_call_id, seen[-1].is_error) == ("5", "c1", False)
    assert result.messages == (*seen, ChatMessage.assistant("2 + 3 = 5"))
    assert (result.tool_calls, result.failed_calls, result.rejected_calls) == (1, 0, 0)
    assert result.run_id is None and result.answered


async def test_the_calls_of_one_reply_run_side_by_side() -> None:
    barrier = asyncio.Barrier(2)  # each waits for the other: one at a time would hang

    async def left() -> str:
        await asyncio.wait_for(barrier.wait(), 5)
        return "left"

    async def right() -> str:
        await asyncio.wait_for(barrier.wait(), 5)
        return "right"

    model = ScriptedChatModel([calls_of(("right", {}), ("left", {})), "both"])
    result = finished(await ToolAgent(model, tools=[left, right]).arun("go"))
    assert [m.content for m in tool_messages(result)] == ["right", "left"]  # in call order
    assert [m.tool_call_id for m in tool_messages(result)] == ["c0", "c1"]


def test_blocking_tools_of_one_reply_run_on_threads_side_by_side() -> None:
    barrier = threading.Barrier(3, timeout=5)
    threads: set[str] = set()

    def wait(n: int) -> int:
        threads.add(threading.current_thread().name)
        barrier.wait()
        return n

    replies = [calls_of(("wait", {"n": 1}), ("wait", {"n": 2}), ("wait", {"n": 3})), "done"]
    result = finished(ToolAgent(ScriptedChatModel(replies), tools=[wait]).run("go"))
    assert [m.content for m in tool_messages(result)] == ["1", "2", "3"]
    assert len(threads) == 3


def test_tools_are_tool_objects_decorated_functions_or_plain_functions() -> None:
    @tool
    def shout(text: str) -> str:
        """Say it loudly."""
        return text.upper()

    typed = Tool(
        name="mul",
        fn=lambda a, b: a * b,
        description="Multiply.",
        parameters={"type": "object", "properties": {"a": {"type": "integer"}}},
    )
    reply = calls_of(
        ("shout", {"text": "hi"}), ("mul", {"a": 6, "b": 7}), ("add", {"a": 1, "b": 1})
    )
    model = ScriptedChatModel([reply, "ok"])
    result = finished(ToolAgent(model, tools=[shout, typed, add], memory_tools=False).run("go"))
    assert [m.content for m in tool_messages(result)] == ["HI", "42", "2"]
    assert model.calls[0].tool_names == ("shout", "mul", "add")


def test_results_that_are_not_text_are_sent_as_json() -> None:
    def when() -> dict[str, Any]:
        return {"at": datetime(2026, 5, 7, tzinfo=UTC), "n": [1, 2]}

    model = ScriptedChatModel([call("when"), "ok"])
    result = finished(ToolAgent(model, tools=[when]).run("go"))
    assert json.loads(tool_messages(result)[0].content or "") == {
        "at": "2026-05-07T00:00:00+00:00",
        "n": [1, 2],
    }


def test_a_conversation_can_be_given_instead_of_text() -> None:
    model = ScriptedChatModel(["Paris, still."])
    history = [
        ChatMessage.user("Capital of France?"),
        ChatMessage.assistant("Paris."),
        ChatMessage.user("And now?"),
    ]
    result = finished(ToolAgent(model).run(history))
    assert [m.content for m in model.calls[0].messages[1:]] == [
        "Capital of France?",
        "Paris.",
        "And now?",
    ]
    assert result.answer == "Paris, still."


async def test_the_blocking_run_works_inside_a_running_loop() -> None:
    model = ScriptedChatModel([call("add", {"a": 1, "b": 2}), "3"])
    assert finished(ToolAgent(model, tools=[add]).run("1 + 2?")).answer == "3"


# ------------------------------------------------------- memory and the prompt


def test_memory_tools_are_attached_and_their_section_is_in_the_system_prompt() -> None:
    model = ScriptedChatModel(
        [
            call("memory_write", {"key": "fact", "value": 42, "title": "The answer"}),
            call("memory_list", {}),
            call("memory_read", {"keys": ["shared:fact"]}),
            "42",
        ]
    )
    agent = ToolAgent(model, tools=[add], name="researcher")
    result = finished(agent.run("Remember 42"))
    assert model.calls[0].tool_names == ("memory_list", "memory_read", "memory_write", "add")
    system = model.calls[0].messages[0].content or ""
    assert "## Memory Tools (progressive disclosure)" in system
    assert "## Working with tools" in system
    entry = agent.memory.get("shared:fact") if agent.memory else None
    assert entry is not None and (entry.value, entry.source) == (42, "researcher")
    listing, read = (json.loads(m.content or "") for m in tool_messages(result)[1:])
    assert [e["key"] for e in listing["entries"]] == ["shared:fact"]
    assert read["entries"]["shared:fact"]["value"] == 42
    assert agent.store.value("shared", "fact") == 42  # memory is the agent's store


def test_a_memory_tool_that_refuses_is_an_error_result() -> None:
    model = ScriptedChatModel([call("memory_write", {"key": "task:x", "value": 1}), "ok"])
    result = finished(ToolAgent(model).run("go"))
    refused = tool_messages(result)[0]
    assert refused.is_error and "cannot write" in (refused.content or "")
    assert result.failed_calls == result.rejected_calls == 0  # the tool answered itself


def test_the_callers_system_prompt_is_a_preamble_never_a_replacement() -> None:
    model = ScriptedChatModel(["ok"])
    ToolAgent(model, system_prompt="You are a careful librarian.").run("go")
    system = model.calls[0].messages[0].content or ""
    assert system.startswith("You are a careful librarian.\n\n## Working with tools")
    assert "memory_list" in system


def test_without_memory_tools_there_is_no_memory_section() -> None:
    model = ScriptedChatModel(["ok"])
    ToolAgent(model, tools=[add], memory_tools=False).run("go")
    assert model.calls[0].tool_names == ("add",)
    assert "Memory" not in (model.calls[0].messages[0].content or "")


def test_upstream_keys_and_inputs_are_named_in_the_first_message_never_their_values() -> None:
    memory = AgentMemory()
    memory.set("task:research", {"secret": "s3cr3t"}, title="Research findings")
    model = ScriptedChatModel(["ok"])
    agent = ToolAgent(model, memory=memory)
    agent.run("Write the report.", upstream_memory_keys=["task:research"], inputs={"topic": "owls"})
    first = model.calls[0].messages[1].content or ""
    assert first.startswith("Write the report.\n\n# Required upstream memory")
    assert "- task:research — Research findings" in first
    assert "- input:topic — topic" in first
    assert "s3cr3t" not in first and "owls" not in first
    assert memory.get_value("input:topic") == "owls"


# ------------------------------------------------ errors and hostile output


def test_a_tool_that_raises_is_an_error_result_and_the_loop_goes_on() -> None:
    def fetch(url: str) -> str:
        raise ConnectionError(f"{url} is down")

    model = ScriptedChatModel([call("fetch", {"url": "http://x"}), "could not fetch"])
    result = finished(ToolAgent(model, tools=[fetch]).run("go"))
    failed = tool_messages(result)[0]
    assert failed.is_error
    assert json.loads(failed.content or "") == {
        "ok": False,
        "error": "fetch failed: ConnectionError: http://x is down",
    }
    assert (result.failed_calls, result.rejected_calls, result.answer) == (1, 0, "could not fetch")


def test_a_huge_error_message_is_cut_for_the_model() -> None:
    def noisy() -> None:
        raise ValueError("x" * 100_000)

    model = ScriptedChatModel([call("noisy"), "ok"])
    result = finished(ToolAgent(model, tools=[noisy]).run("go"))
    error = json.loads(tool_messages(result)[0].content or "")["error"]
    assert error.startswith("noisy failed: ValueError: xxx") and error.endswith(" ...")
    assert len(error) < 2100


def test_hostile_calls_are_error_results_and_are_counted() -> None:
    schema = {
        "type": "object",
        "properties": {"n": {"type": "integer", "minimum": 0}},
        "required": ["n"],
        "additionalProperties": False,
    }
    ran: list[int] = []
    count = Tool(name="count", fn=lambda n: ran.append(n) or n, parameters=schema)
    same = ToolCall.create("count", {"n": 1}, id="dup")
    reply = AssistantMessage(
        tool_calls=(
            ToolCall.create("no_such_tool", {}, id="a"),
            ToolCall.parse(id="b", name="count", raw='{"n": 1'),  # not JSON
            ToolCall.parse(id="c", name="count", raw="[1, 2]"),  # not an object
            ToolCall.create("count", {"n": -1}, id="d"),  # fails the schema
            ToolCall.create("add", {"a": 1, "c": 2}, id="e"),  # fails the signature
            same,
            same,  # the same id again
        )
    )
    model = ScriptedChatModel([reply, "ok"])
    result = finished(ToolAgent(model, tools=[count, add]).run("go"))
    results = tool_messages(result)
    assert [m.is_error for m in results] == [True, True, True, True, True, False, True]
    errors = [json.loads(m.content or "")["error"] if m.is_error else "" for m in results]
    assert "there is no tool named 'no_such_tool'; the tools are: memory_list" in errors[0]
    assert "send the arguments as one JSON object" in errors[1]
    assert "are a JSON array; expected a JSON object" in errors[2]
    assert "argument 'n' is invalid (-1)" in errors[3] and "minimum of 0" in errors[3]
    assert "missing required argument 'b'" in errors[4]
    assert "unknown argument 'c'; this tool takes only: a, b" in errors[4]
    assert "used by another call of this reply" in errors[6]
    assert ran == [1]  # only the one good call ran
    ids = [c.id for c in result.messages[2].tool_calls]
    assert ids == ["a", "b", "c", "d", "e", "dup", "dup~6"]  # every result answers one call
    assert [m.tool_call_id for m in results] == ids
    assert (result.tool_calls, result.rejected_calls, result.failed_calls) == (7, 6, 0)


def test_calls_past_the_limit_of_a_reply_are_refused() -> None:
    many = calls_of(*[("add", {"a": i, "b": 0}) for i in range(5)])
    model = ScriptedChatModel([many, "ok"])
    result = finished(ToolAgent(model, tools=[add], max_calls_per_reply=3).run("go"))
    assert [m.is_error for m in tool_messages(result)] == [False, False, False, True, True]
    assert result.rejected_calls == 2


def test_interrupt_without_a_run_id_is_the_developers_error_not_the_models() -> None:
    def ask() -> str:
        return str(interrupt("May I?"))

    model = ScriptedChatModel([call("ask"), "ok"])
    with pytest.raises(PauseError, match="outside a unit of a recorded run"):
        ToolAgent(model, tools=[ask]).run("go")


names = st.sampled_from(["add", "memory_read", "memory_write", "finish", "nope", "", "x" * 300])
raw_arguments = st.one_of(
    st.just(""),
    st.text(max_size=40),
    st.recursive(
        st.none() | st.booleans() | st.integers() | st.text(max_size=10),
        lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner),
        max_leaves=8,
    ).map(json.dumps),
)
hostile_calls = st.lists(
    st.tuples(st.sampled_from(["i", "j", ""]), names, raw_arguments), min_size=1, max_size=6
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(replies=st.lists(hostile_calls, min_size=1, max_size=3))
def test_any_tool_calls_a_model_makes_never_crash_the_run(
    replies: list[list[tuple[str, str, str]]],
) -> None:
    script: list[Any] = [
        AssistantMessage(
            tool_calls=tuple(ToolCall.parse(id=i, name=name, raw=raw) for i, name, raw in reply)
        )
        for reply in replies
    ]
    model = ScriptedChatModel([*script, "done"])
    result = finished(ToolAgent(model, tools=[add], max_iterations=10).run("go"))
    assert result.stop_reason in ("answered", "finished")
    made = sum(len(reply) for reply in replies[: result.iterations])
    assert result.tool_calls <= made
    for message in result.messages:
        if message.role == "tool" and message.is_error:
            assert json.loads(message.content or "")["ok"] is False
    ids = [c.id for m in result.messages for c in m.tool_calls]
    answered = [m.tool_call_id for m in result.messages if m.role == "tool"]
    assert sorted(answered) == sorted(ids)
    for message in result.messages:
        if message.tool_calls:
            own = [c.id for c in message.tool_calls]
            assert len(own) == len(set(own))


# ------------------------------------------------- limits and the conclusion


def test_the_last_call_is_offered_only_finish_and_finish_ends_the_run() -> None:
    model = ScriptedChatModel(
        [call("add", {"a": 1, "b": 1}), call("finish", {"answer": "It is 2."})]
    )
    result = finished(ToolAgent(model, tools=[add], max_iterations=2).run("go"))
    assert model.calls[0].tool_names == ("memory_list", "memory_read", "memory_write", "add")
    assert model.calls[1].tool_names == ("finish",)
    assert "`finish` is now the only tool" in (model.calls[1].messages[-1].content or "")
    assert (result.answer, result.stop_reason, result.iterations) == ("It is 2.", "finished", 2)


def test_max_iterations_ends_the_run_with_a_stop_reason() -> None:
    model = ScriptedChatModel([call("add", {"a": 1, "b": 1}, content="Adding."), call("add")])
    result = finished(ToolAgent(model, tools=[add], max_iterations=2).run("go"))
    assert (result.stop_reason, result.iterations, result.answer) == (
        "max_iterations",
        2,
        "Adding.",  # the last text the model wrote
    )
    refused = tool_messages(result)[-1]
    assert refused.is_error and "finish is the only tool left" in (refused.content or "")
    assert result.rejected_calls == 1


def test_near_the_token_budget_only_finish_is_offered_and_then_the_run_stops() -> None:
    spend = Usage(input_tokens=40, output_tokens=6, total_tokens=46)
    model = ScriptedChatModel(
        [
            call("add", {"a": 1, "b": 1}, usage=spend),  # 46 of 100
            call("add", {"a": 2, "b": 2}, usage=spend),  # 92: past 90%
            call("add", {"a": 3, "b": 3}, usage=spend),  # 138: refused, and over
        ]
    )
    result = finished(ToolAgent(model, tools=[add], max_tokens=100).run("go"))
    assert [c.tool_names[-1] for c in model.calls] == ["add", "add", "finish"]
    assert result.stop_reason == "max_tokens"
    assert result.usage == Usage(input_tokens=120, output_tokens=18, total_tokens=138)
    assert result.iterations == 3


def test_the_time_limit_stops_a_slow_tool_and_ends_the_run() -> None:
    async def slow() -> str:
        await asyncio.sleep(30)
        return "never"

    model = ScriptedChatModel([call("slow")])
    started = time.monotonic()
    result = finished(ToolAgent(model, tools=[slow], max_seconds=0.3).run("go"))
    assert time.monotonic() - started < 5
    assert result.stop_reason == "max_time"
    late = tool_messages(result)[0]
    assert late.is_error and "did not finish before the run's time limit" in (late.content or "")
    assert result.failed_calls == 1


def test_the_time_limit_stops_a_model_that_does_not_answer() -> None:
    class Stuck(ChatModelBase):
        async def achat(
            self,
            messages: Sequence[ChatMessage | AssistantMessage],
            *,
            tools: Sequence[ToolLike] | None = None,
            **options: Any,
        ) -> AssistantMessage:
            await asyncio.sleep(30)
            raise AssertionError("unreachable")

    result = finished(ToolAgent(Stuck(), max_seconds=0.2).run("go"))
    assert (result.stop_reason, result.iterations, result.answer) == ("max_time", 0, None)


def test_finish_with_wrong_arguments_is_refused_and_the_model_tries_again() -> None:
    model = ScriptedChatModel([call("finish", {"text": "x"}), call("finish", {"answer": "y"})])
    result = finished(ToolAgent(model).run("go"))
    assert tool_messages(result)[0].is_error
    assert (result.answer, result.stop_reason, result.rejected_calls) == ("y", "finished", 1)


# --------------------------------------------------------- built wrong


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"tools": [Tool(name="finish", fn=add)]}, "the name of a built-in tool"),
        ({"tools": [Tool(name="memory_read", fn=add)]}, "the name of a built-in tool"),
        ({"tools": [add, add]}, "two tools are named 'add'"),
        ({"tools": add}, "expected a list of tools"),
        ({"tools": [42]}, r"tools\[0\] is 42"),
        ({"tools": [Tool(name="t")]}, "has no function to run"),
        ({"max_iterations": 0}, "max_iterations=0"),
        ({"max_tokens": -5}, "max_tokens=-5"),
        ({"max_seconds": 0}, "max_seconds=0"),
        ({"name": "a/b"}, "an agent name is letters"),
        ({"memory": AgentMemory(), "store": Store()}, "two different stores"),
        ({"memory": AgentMemory(), "memory_tools": False}, "drop one of them"),
    ],
)
def test_an_agent_built_wrong_is_refused_when_it_is_built(
    kwargs: dict[str, Any], message: str
) -> None:
    with pytest.raises(AgentBuildError, match=message):
        ToolAgent(ScriptedChatModel([]), **kwargs)


def test_a_model_that_is_not_a_chat_model_is_refused() -> None:
    with pytest.raises(AgentBuildError, match="is not a chat model"):
        ToolAgent(lambda prompt: "hi")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("task", "message"),
    [
        ("  ", "the task is empty"),
        ([ChatMessage.system("x"), ChatMessage.user("y")], "give it as system_prompt="),
        ([ChatMessage.assistant("x")], "has no user message"),
        (["hi"], r"task\[0\] is a str"),
        (None, "no task"),
    ],
)
def test_a_task_given_wrong_is_refused(task: Any, message: str) -> None:
    with pytest.raises(AgentBuildError, match=message):
        ToolAgent(ScriptedChatModel(["x"])).run(task)
