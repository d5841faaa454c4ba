"""The Task and ParallelTask executors on the one run model: with a run id every task and
every step is recorded as it settles, and running again with that id (in this process,
or in a new one on a durable store) runs only what did not complete."""

from __future__ import annotations

import collections
import re
import uuid
from pathlib import Path
from typing import Any

import pytest
from plan_helpers import call, finish

from crash_helpers import drop_schema, open_backend
from weft.errors import ExecutorError
from weft.llm import AssistantMessage, ChatMessage, ScriptedChatModel, ToolSpec
from weft.memory import AgentMemory
from weft.persist import DurableRun
from weft.plan import ParallelTaskExecutor, Step, Task, TaskExecutor, TaskPlan


class ByStep:
    """A chat model that finishes each step with ``<step>-done``, counting its calls per
    step; the steps named in ``down`` never finish (with ``max_iterations=1`` they fail)."""

    def __init__(self, *down: str) -> None:
        self.calls: collections.Counter[str] = collections.Counter()
        self.down = set(down)
        self.model = ScriptedChatModel(self.reply)

    def reply(self, messages: list[ChatMessage], tools: list[ToolSpec]) -> AssistantMessage:
        found = re.search(r"# Step: (.+)\n", messages[1].content or "")
        assert found is not None
        step = found.group(1)
        self.calls[step] += 1
        if step in self.down:
            return call("memory_list")
        return finish(f"{step}-done")


def plan() -> TaskPlan:
    return TaskPlan(
        tasks=[
            Task(id="A", steps=[Step(id="research", instructions="Research.")]),
            Task(
                id="B",
                depends_on=("A",),
                steps=[
                    Step(id="draft", instructions="Draft."),
                    Step(id="report", instructions="Report.", depends_on=("draft",)),
                ],
            ),
        ]
    )


def executor(model: ByStep, memory: AgentMemory | None = None) -> ParallelTaskExecutor:
    return ParallelTaskExecutor(plan(), model=model.model, memory=memory, max_iterations=1)


def test_a_rerun_with_the_run_id_runs_only_what_did_not_complete() -> None:
    memory = AgentMemory()
    model = ByStep("report")
    first = executor(model, memory).execute(run_id="plan-1")
    assert first.completed == ("A",) and "B" in first.failed
    model.down.clear()
    again = executor(model, memory).execute(run_id="plan-1")
    assert again.ok and again.skipped == ("A",) and again.completed == ("B",)
    assert again.tasks["B"].report.skipped == ("draft",)  # finished inside the failed task
    assert model.calls == {"research": 1, "draft": 1, "report": 2}
    assert again.final_result == memory.get_value("task:B") == "report-done"


def test_a_completed_run_runs_nothing_again() -> None:
    memory = AgentMemory()
    model = ByStep()
    assert executor(model, memory).execute(run_id="plan-1").ok
    again = executor(model, memory).execute(run_id="plan-1")
    assert again.skipped == ("A", "B") and again.final_result == "report-done"
    assert model.calls == {"research": 1, "draft": 1, "report": 1}


def test_without_a_run_id_nothing_is_recorded_and_everything_runs() -> None:
    memory = AgentMemory()
    model = ByStep()
    executor(model, memory).execute()
    again = executor(model, memory).execute()
    assert again.completed == ("A", "B") and not again.skipped
    assert model.calls == {"research": 2, "draft": 2, "report": 2}
    assert not [e for e in memory.store.entries(kind="step") if "/" in e.path]  # no records


@pytest.fixture(params=["sqlite", "postgres"])
def backend_spec(request: pytest.FixtureRequest, tmp_path: Path) -> Any:
    if request.param == "sqlite":
        yield f"sqlite:{tmp_path / 'weft.db'}"
        return
    schema = f"plan_{uuid.uuid4().hex[:10]}"
    yield f"postgres:{schema}"
    drop_schema(schema)


def test_a_new_process_resumes_from_a_durable_store(backend_spec: str) -> None:
    model = ByStep("report")
    run = DurableRun.open(open_backend(backend_spec), "thread-1")
    assert not executor(model, AgentMemory(run.store)).execute(run_id="plan-1").ok
    run.close()

    model.down.clear()
    run = DurableRun.open(open_backend(backend_spec), "thread-1")  # as a new process would
    memory = AgentMemory(run.store)
    again = executor(model, memory).execute(run_id="plan-1")
    assert again.ok and again.skipped == ("A",) and again.completed == ("B",)
    assert model.calls == {"research": 1, "draft": 1, "report": 2}
    assert memory.get_value("task:A") == "research-done"
    assert memory.get_value("task:B") == "report-done"
    run.close()


def test_a_run_id_of_another_plan_is_an_executor_error() -> None:
    memory = AgentMemory()
    executor(ByStep(), memory).execute(run_id="plan-1")
    other = TaskPlan(tasks=[Task(id="Z", steps=[Step(id="z", instructions=".")])])
    with pytest.raises(ExecutorError, match=r"run 'plan-1' was recorded for .*use a new run_id"):
        ParallelTaskExecutor(other, model=ByStep().model, memory=memory).execute(run_id="plan-1")
    with pytest.raises(ExecutorError, match="without '/'"):
        executor(ByStep(), memory).execute(run_id="a/b")


def test_a_task_executor_resumes_its_steps() -> None:
    task = plan().tasks[1]
    memory = AgentMemory()
    model = ByStep("report")
    assert (
        not TaskExecutor(task, model=model.model, memory=memory, max_iterations=1)
        .execute(run_id="task-1")
        .ok
    )
    model.down.clear()
    result = TaskExecutor(task, model=model.model, memory=memory).execute(run_id="task-1")
    assert result.ok and result.result == "report-done"
    assert result.report.skipped == ("draft",) and model.calls == {"draft": 1, "report": 2}


def test_a_process_step_reruns_only_its_items_that_failed() -> None:
    task = Task(
        id="T",
        steps=[
            Step(id="find", instructions="Find."),
            Step(id="each", instructions="Each.", process_from="find"),
        ],
    )
    down = {"bad"}
    calls: collections.Counter[str] = collections.Counter()

    def reply(messages: list[ChatMessage], tools: list[ToolSpec]) -> AssistantMessage:
        text = messages[1].content or ""
        if "# Step: find\n" in text:
            calls["find"] += 1
            return finish(["good", "bad"])
        item = "bad" if "bad" in text else "good"
        calls[item] += 1
        return call("memory_list") if item in down else finish(f"{item}!")

    memory = AgentMemory()
    model = ScriptedChatModel(reply)
    first = TaskExecutor(task, model=model, memory=memory, max_iterations=1).execute(run_id="t")
    assert "1 of 2 items failed: each[1]" in first.report.failed["each"]
    down.clear()
    again = TaskExecutor(task, model=model, memory=memory, max_iterations=1).execute(run_id="t")
    assert again.ok and again.result == ["good!", "bad!"]
    assert calls == {"find": 1, "good": 1, "bad": 2}
