"""TaskExecutor: steps as a DAG, inputs seeded, process mode; and the plan types' checks."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterable
from typing import Any

import pytest
from plan_helpers import call, finish, text_of

from weft.errors import PlanValidationError
from weft.llm import AssistantMessage, ChatMessage, ChatModelBase, ScriptedChatModel, ToolSpec
from weft.memory import AgentMemory
from weft.plan import Step, Task, TaskExecutor, TaskPlan


def by_step(answers: dict[str, Any]) -> ScriptedChatModel:
    """A model that finishes each step with ``answers[<step title>]`` (any order)."""

    def reply(messages: list[ChatMessage], tools: list[ToolSpec]) -> Any:
        user = messages[1].content or ""
        for title, answer in answers.items():
            if user.startswith((f"# Step: {title}\n", f"# Step: {title} [item")):
                return finish(answer(user) if callable(answer) else answer)
        raise AssertionError(f"no scripted answer for {user[:80]!r}")

    return ScriptedChatModel(reply)


def test_steps_run_after_what_they_depend_on_and_name_it() -> None:
    task = Task(
        id="t",
        steps=[
            Step(id="outline", instructions="Outline."),
            Step(id="draft", instructions="Draft.", depends_on=("outline",)),
        ],
    )
    model = by_step({"outline": ["intro", "body"], "draft": "text"})
    memory = AgentMemory()
    result = TaskExecutor(task, model=model, memory=memory).execute()
    assert result.ok and result.result == "text"
    assert result.report.completed == ("outline", "draft")
    draft_call = model.calls[1]
    assert "- step:outline" in (draft_call.messages[1].content or "")
    assert "intro" not in text_of(draft_call)


def test_inputs_are_seeded_as_input_keys() -> None:
    task = Task(id="t", steps=[Step(id="s", instructions="Go.")])
    memory = AgentMemory()
    TaskExecutor(task, model=by_step({"s": 1}), memory=memory, inputs={"topic": "otters"}).execute()
    assert memory.get_value("input:topic") == "otters"
    assert memory.get("input:topic").kind == "input"  # type: ignore[union-attr]


def test_only_the_finishing_step_writes_the_task_result() -> None:
    task = Task(id="t", steps=[Step(id="a", instructions="A."), Step(id="b", instructions="B.")])
    memory = AgentMemory()
    TaskExecutor(
        task, model=by_step({"a": "A", "b": "B"}), memory=memory, max_concurrency=1
    ).execute()
    assert memory.get_value("task:t") == "B"
    assert [e.key for e in memory.list(kind="task_result")] == ["task:t"]


def test_process_mode_fans_out_over_the_discover_list_and_aggregates() -> None:
    task = Task(
        id="t",
        steps=[
            Step(id="discover", instructions="List the pages."),
            Step(id="summarize", instructions="Summarize one page.", process_from="discover"),
        ],
    )

    def summarize(user: str) -> str:
        item = json.loads(user.split("# Item to process\n", 1)[1].split("\n\n")[0])
        return f"summary of {item}"

    memory = AgentMemory()
    model = by_step({"discover": ["p1", "p2", "p3"], "summarize": summarize})
    result = TaskExecutor(task, model=model, memory=memory).execute()
    expected = ["summary of p1", "summary of p2", "summary of p3"]
    assert memory.get_value("step:summarize") == expected
    assert memory.get_value("step:summarize[1]") == "summary of p2"
    assert result.result == expected


def test_process_mode_refuses_a_discover_result_that_is_not_a_list() -> None:
    task = Task(
        id="t",
        steps=[
            Step(id="discover", instructions="List."),
            Step(id="each", instructions="Do one.", process_from="discover"),
        ],
    )
    result = TaskExecutor(task, model=by_step({"discover": "not a list"})).execute()
    assert not result.ok
    assert "is not a list" in result.report.failed["each"]


def test_a_failed_step_blocks_the_steps_after_it() -> None:
    task = Task(
        id="t",
        steps=[
            Step(id="a", instructions="A."),
            Step(id="b", instructions="B.", depends_on=("a",)),
            Step(id="c", instructions="C.", depends_on=("b",)),
        ],
    )
    model = ScriptedChatModel([call("memory_list")])  # never finishes
    result = TaskExecutor(task, model=model, max_iterations=1).execute()
    assert not result.ok and result.result is None
    assert "did not call finish_step" in result.report.failed["a"]
    assert result.report.blocked == {
        "b": result.report.blocked["b"],
        "c": result.report.blocked["c"],
    }
    assert "depends on 'a', which failed" in result.report.blocked["b"]


def test_task_problems_are_all_listed() -> None:
    with pytest.raises(PlanValidationError) as caught:
        Task(
            id="t",
            steps=[
                Step(id="a", instructions="A.", depends_on=("ghost",)),
                Step(id="a", instructions="again"),
                Step(id="b", instructions="B.", output_schema={"type": 5}),
            ],
        )
    problems = "\n".join(map(str, caught.value.problems))
    assert "depends on 'ghost'" in problems
    assert "the step id 'a' is used 2 times" in problems
    assert "output_schema is not a JSON Schema" in problems


def test_a_step_cycle_is_refused() -> None:
    with pytest.raises(PlanValidationError, match="form a cycle"):
        Task(
            id="t",
            steps=[
                Step(id="a", instructions="A.", depends_on=("b",)),
                Step(id="b", instructions="B.", depends_on=("a",)),
                Step(id="c", instructions="C."),
            ],
        )
    Task(  # a dependency named twice is no cycle
        id="t",
        steps=[
            Step(id="a", instructions="A."),
            Step(id="b", instructions="B.", depends_on=("a", "a")),
        ],
    )


def test_the_finishing_step_cannot_have_dependents() -> None:
    with pytest.raises(PlanValidationError, match="no step may depend on it"):
        Task(
            id="t",
            steps=[
                Step(id="a", instructions="A.", depends_on=("b",)),
                Step(id="b", instructions="B."),
            ],
        )


def test_task_plan_refuses_unknown_dependencies_cycles_and_shared_step_ids() -> None:
    with pytest.raises(PlanValidationError) as caught:
        TaskPlan(
            tasks=[
                Task(id="a", depends_on=("b",), steps=[Step(id="s", instructions=".")]),
                Task(id="b", depends_on=("a",), steps=[Step(id="s", instructions=".")]),
                Task(id="c", depends_on=("Z",), steps=[Step(id="z", instructions=".")]),
            ]
        )
    problems = "\n".join(map(str, caught.value.problems))
    assert "step id 's' is used by tasks 'a' and 'b'" in problems
    assert "depends on 'Z', which is no task" in problems
    assert "form a cycle" in problems


def test_task_plan_from_dict_accepts_camel_case() -> None:
    plan = TaskPlan.from_dict(
        {
            "tasks": [
                {
                    "id": "a",
                    "dependsOn": [],
                    "steps": [{"id": "s", "instructions": "x", "outputSchema": {"type": "string"}}],
                }
            ]
        }
    )
    assert plan.tasks[0].steps[0].output_schema == {"type": "string"}


class SlowStep(ChatModelBase):
    """Finishes every step; the steps named in ``slow`` take a while first."""

    def __init__(self, slow: Iterable[str], fail: Iterable[str] = ()) -> None:
        self.slow = frozenset(slow)
        self.fail = frozenset(fail)

    async def achat(self, messages: Any, *, tools: Any = None, **options: Any) -> AssistantMessage:
        title = (messages[1].content or "").split("\n", 1)[0].removeprefix("# Step: ")
        if title in self.slow:
            await asyncio.sleep(0.05)
        if title in self.fail:
            return call("memory_list")  # never finishes
        return finish(title.upper())


def test_the_finishing_step_runs_after_every_other_step_even_without_dependencies() -> None:
    task = Task(id="t", steps=[Step(id="a", instructions="A."), Step(id="b", instructions="B.")])
    memory = AgentMemory()
    written: list[str] = []
    memory.subscribe(lambda event: written.append(event.key))
    result = TaskExecutor(task, model=SlowStep(["a"]), memory=memory).execute()
    assert result.ok and result.result == "B"
    assert written == ["step:a", "step:b", "task:t"]
    assert result.report.completed == ("a", "b")


def test_the_finishing_step_is_blocked_when_another_step_failed() -> None:
    task = Task(id="t", steps=[Step(id="a", instructions="A."), Step(id="b", instructions="B.")])
    memory = AgentMemory()
    result = TaskExecutor(
        task, model=SlowStep((), fail=["a"]), memory=memory, max_iterations=1
    ).execute()
    assert not result.ok
    assert "depends on 'a', which failed" in result.report.blocked["b"]
    assert not memory.has("task:t") and not memory.has("step:b")  # not marked done


class Counting(ChatModelBase):
    """Finishes every step after a pause, counting how many run at once."""

    def __init__(self, result: Any) -> None:
        self.result = result
        self.running = 0
        self.most = 0

    async def achat(self, messages: Any, *, tools: Any = None, **options: Any) -> AssistantMessage:
        self.running += 1
        self.most = max(self.most, self.running)
        await asyncio.sleep(0.01)
        self.running -= 1
        return finish(self.result)


def test_process_mode_fans_out_at_most_max_concurrency_items_at_once() -> None:
    task = Task(
        id="t",
        steps=[
            Step(id="discover", instructions="List."),
            Step(id="each", instructions="Do one.", process_from="discover"),
        ],
    )
    model = Counting(["x"] * 5)
    memory = AgentMemory()
    result = TaskExecutor(task, model=model, memory=memory, max_concurrency=2).execute()
    assert result.ok and model.most == 2
    assert memory.get_value("step:each") == [["x"] * 5] * 5
