"""StepExecutor: the seed-001 contract of one step."""

from __future__ import annotations

import json
from typing import Any

import pytest
from plan_helpers import call, finish, text_of, tool_results

from weft.calls import Tool
from weft.errors import ExecutorError, ScriptExhaustedError
from weft.llm import ScriptedChatModel
from weft.memory import AgentMemory, memory_tools_prompt_section
from weft.plan import Step, StepExecutor, StepResult

SCHEMA = {
    "type": "object",
    "properties": {"summary": {"type": "string"}},
    "required": ["summary"],
}


def run(
    step: Step, replies: list[Any], *, memory: AgentMemory | None = None, **options: Any
) -> tuple[StepResult, ScriptedChatModel, AgentMemory]:
    memory = memory if memory is not None else AgentMemory()
    model = ScriptedChatModel(replies)
    result = StepExecutor(step, model=model, memory=memory, **options).execute()
    return result, model, memory


def test_default_system_prompt_carries_the_memory_tools_section() -> None:
    _, model, _ = run(Step(id="s", instructions="Go."), [finish(1)])
    system = model.calls[0].messages[0]
    assert system.role == "system"
    assert memory_tools_prompt_section() in (system.content or "")
    assert "finish_step" in (system.content or "")


def test_a_custom_system_prompt_is_a_preamble_not_a_replacement() -> None:
    _, model, _ = run(Step(id="s", instructions="Go."), [finish(1)], system_prompt="You are terse.")
    system = model.calls[0].messages[0].content or ""
    assert system.startswith("You are terse.")
    assert memory_tools_prompt_section() in system


def test_the_user_message_names_upstream_keys_without_values() -> None:
    memory = AgentMemory()
    memory.set("step:search", {"hits": ["SECRET-VALUE-123"]}, title="Search hits")
    step = Step(id="write", instructions="Write it.", depends_on=("search",))
    _, model, _ = run(step, [finish("ok")], memory=memory, upstream_memory_keys=["task:research"])
    user = model.calls[0].messages[1].content or ""
    assert "- step:search — Search hits" in user
    assert "- task:research" in user
    assert "SECRET-VALUE-123" not in text_of(model.calls[0])


def test_the_three_memory_tools_and_finish_step_are_always_attached() -> None:
    _, model, _ = run(Step(id="s", instructions="Go."), [finish(1)])
    assert model.calls[0].tool_names == (
        "memory_list",
        "memory_read",
        "memory_write",
        "finish_step",
    )


def test_caller_tools_are_attached_and_called() -> None:
    tool = Tool(
        name="add",
        fn=lambda a, b: a + b,
        parameters={
            "type": "object",
            "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
        },
    )
    result, model, _ = run(
        Step(id="s", instructions="Add."), [call("add", {"a": 2, "b": 3}), finish(5)], tools=[tool]
    )
    assert "add" in model.calls[0].tool_names
    assert tool_results(model.calls[1])[0] == "5"  # the tool's result, as the model reads it
    assert result.ok


def test_a_refused_tool_call_reaches_the_model_as_an_error_tool_message() -> None:
    _, model, _ = run(Step(id="s", instructions="Go."), [call("search", {}), finish(1)])
    refusal = model.calls[1].messages[-1]
    assert refusal.role == "tool" and refusal.is_error
    assert "there is no tool named 'search'" in json.loads(refusal.content or "")["error"]


def test_finish_step_writes_the_step_result() -> None:
    _result, _, memory = run(Step(id="s", instructions="Go."), [finish({"summary": "x"})])
    assert memory.get_value("step:s") == {"summary": "x"}
    assert memory.get("step:s").source == "s"  # type: ignore[union-attr]
    assert not memory.has("task:t")


def test_the_finishing_step_also_writes_the_task_result() -> None:
    result, _, memory = run(
        Step(id="s", instructions="Go."), [finish(7)], task_id="t", finish_task=True, task=("T", "")
    )
    assert memory.get_value("task:t") == 7
    assert memory.get("task:t").title == "T"  # type: ignore[union-attr]
    assert result.task_result


def test_an_invalid_result_goes_back_to_the_model_to_fix() -> None:
    step = Step(id="s", instructions="Summarize.", output_schema=SCHEMA)
    result, model, memory = run(step, [finish({"summary": 3}), finish({"summary": "fixed"})])
    error = json.loads(tool_results(model.calls[1])[0])
    assert error["ok"] is False and "does not match the step's JSON Schema" in error["error"]
    assert "3 is not of type 'string'" in error["error"]
    assert memory.get_value("step:s") == {"summary": "fixed"}
    assert result.iterations == 2


def test_past_ninety_percent_of_the_budget_only_finish_step_is_offered() -> None:
    replies = [call("memory_list", total_tokens=95), finish("done")]
    _, model, _ = run(Step(id="s", instructions="Go."), replies, max_token_budget=100)
    assert model.calls[0].tool_names[-1] == "finish_step" and len(model.calls[0].tool_names) == 4
    assert model.calls[1].tool_names == ("finish_step",)
    assert "only tool" in text_of(model.calls[1])


def test_a_tool_called_in_the_conclusion_stage_is_refused() -> None:
    replies = [call("memory_list", total_tokens=95), call("memory_list"), finish(1)]
    _, model, _ = run(Step(id="s", instructions="Go."), replies, max_token_budget=100)
    refusal = json.loads(tool_results(model.calls[2])[-1])
    assert "finish_step is the only tool left" in refusal["error"]


def test_exhausted_iterations_write_an_error_result() -> None:
    result, _, memory = run(
        Step(id="s", instructions="Go."),
        [call("memory_list"), call("memory_list")],
        max_iterations=2,
    )
    assert not result.ok
    assert "did not call finish_step" in memory.get_value("step:s")["error"]


def test_a_plain_text_reply_is_nudged_towards_finish_step() -> None:
    _, model, _ = run(Step(id="s", instructions="Go."), ["I think it is 4.", finish(4)])
    assert "does not end this step" in (model.calls[1].messages[-1].content or "")


def test_a_model_that_fails_fails_the_step_with_the_reason() -> None:
    result, _, memory = run(Step(id="s", instructions="Go."), [])
    assert not result.ok
    assert "the model failed on call 1" in memory.get_value("step:s")["error"]
    assert ScriptExhaustedError.__name__ not in (result.error or "")


def test_memory_write_of_a_task_key_is_refused_and_writes_nothing() -> None:
    replies = [call("memory_write", {"key": "task:bogus", "value": {"spoof": True}}), finish(1)]
    _, model, memory = run(Step(id="s", instructions="Go."), replies)
    refusal = json.loads(tool_results(model.calls[1])[0])
    assert refusal["ok"] is False and "nothing was written" in refusal["error"]
    assert not memory.has("task:bogus") and not memory.has("shared:task:bogus")


def test_memory_writes_are_recorded_as_the_steps() -> None:
    replies = [call("memory_write", {"key": "note", "value": 1}), finish(1)]
    _, _, memory = run(Step(id="researcher", instructions="Go."), replies)
    assert memory.get("shared:note").source == "researcher"  # type: ignore[union-attr]


def test_a_step_limited_to_some_tools_is_offered_only_those() -> None:
    tools = [Tool(name="a", fn=lambda: 1), Tool(name="b", fn=lambda: 2)]
    _, model, _ = run(Step(id="s", instructions="Go.", tools=("b",)), [finish(1)], tools=tools)
    assert "b" in model.calls[0].tool_names and "a" not in model.calls[0].tool_names


@pytest.mark.parametrize(
    ("options", "named"),
    [({"max_iterations": 0}, "max_iterations=0"), ({"finish_task": True}, "task_id")],
)
def test_a_step_configured_wrong_is_an_executor_error_and_a_value_error(
    options: dict[str, Any], named: str
) -> None:
    with pytest.raises(ExecutorError, match=named) as caught:
        run(Step(id="s", instructions="Go."), [finish(1)], **options)
    assert isinstance(caught.value, ValueError)
