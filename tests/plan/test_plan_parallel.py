"""ParallelTaskExecutor: the seed-001 propagation flow, the DAG with its cap, failures
that block, the idempotent task write, results, and resume with a run id after a crash
(more in test_plan_resume)."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from plan_helpers import call, finish, text_of, tool_results

from weft.llm import AssistantMessage, ChatMessage, ChatModelBase, ScriptedChatModel, ToolSpec
from weft.memory import AgentMemory
from weft.persist import DurableRun, InMemoryBackend
from weft.plan import ParallelTaskExecutor, Step, Task, TaskPlan

A_VALUE = {"findings": ["alpha-7f3e", "beta-91c2"]}


def two_tasks() -> TaskPlan:
    return TaskPlan(
        tasks=[
            Task(id="A", title="Research", steps=[Step(id="research", instructions="Research.")]),
            Task(
                id="B",
                title="Report",
                depends_on=("A",),
                steps=[Step(id="report", instructions="Write the report from A's findings.")],
            ),
        ]
    )


def test_seed_propagation_flow_end_to_end() -> None:
    model = ScriptedChatModel(
        [
            finish(A_VALUE),  # task A's only step
            call("memory_list"),  # task B: discover ...
            call("memory_read", {"keys": ["task:A"]}),  # ... read ...
            finish({"report": "two findings"}),  # ... finish
        ]
    )
    memory = AgentMemory()
    executor = ParallelTaskExecutor(two_tasks(), model=model, memory=memory)
    report = executor.execute()
    assert report.ok and report.completed == ("A", "B")
    b_first = model.calls[1]
    assert "- task:A — Research" in (b_first.messages[1].content or "")
    assert "alpha-7f3e" not in text_of(b_first)  # keys, never values
    listing = json.loads(tool_results(model.calls[2])[0])
    assert "task:A" in [e["key"] for e in listing["entries"]]
    read = json.loads(tool_results(model.calls[3])[-1])
    assert read["entries"]["task:A"]["value"] == A_VALUE
    assert memory.get_value("task:A") == A_VALUE
    assert memory.get_value("step:report") == {"report": "two findings"}
    assert executor.get_final_result() == {"report": "two findings"}


def test_get_all_results_and_get_task_result() -> None:
    model = ScriptedChatModel([finish(1), finish(2)])
    executor = ParallelTaskExecutor(two_tasks(), model=model)
    executor.execute()
    assert executor.get_all_results() == {"A": 1, "B": 2}
    assert executor.get_task_result("A") == 1


def test_inputs_are_seeded_once() -> None:
    memory = AgentMemory()
    ParallelTaskExecutor(
        two_tasks(), model=ScriptedChatModel([finish(1), finish(2)]), memory=memory, inputs={"q": 1}
    ).execute()
    assert memory.get_value("input:q") == 1


def test_a_failed_task_blocks_its_dependents_and_the_report_says_why() -> None:
    plan = TaskPlan(
        tasks=[
            Task(id="A", steps=[Step(id="a", instructions="A.")]),
            Task(id="B", depends_on=("A",), steps=[Step(id="b", instructions="B.")]),
            Task(id="C", depends_on=("B",), steps=[Step(id="c", instructions="C.")]),
            Task(id="D", steps=[Step(id="d", instructions="D.")]),
        ]
    )

    def reply(messages: list[ChatMessage], tools: list[ToolSpec]) -> AssistantMessage:
        if "# Step: a\n" in (messages[1].content or ""):
            return call("memory_list")  # never finishes
        return finish("ok")

    executor = ParallelTaskExecutor(plan, model=ScriptedChatModel(reply), max_iterations=2)
    report = executor.execute()
    assert not report.ok
    assert set(report.completed) == {"D"}
    assert "did not call finish_step" in report.failed["A"]
    assert "depends on 'A', which failed" in report.blocked["B"]
    assert "depends on 'B', which was blocked" in report.blocked["C"]
    assert executor.get_task_result("A") is None


class Counting(ChatModelBase):
    """Finishes every step after a pause, counting how many run at once."""

    def __init__(self) -> None:
        self.running = 0
        self.most = 0

    async def achat(self, messages: Any, *, tools: Any = None, **options: Any) -> AssistantMessage:
        self.running += 1
        self.most = max(self.most, self.running)
        await asyncio.sleep(0.01)
        self.running -= 1
        return finish("done")


def test_the_concurrency_cap_bounds_tasks_in_flight() -> None:
    plan = TaskPlan(
        tasks=[Task(id=f"t{i}", steps=[Step(id=f"s{i}", instructions=".")]) for i in range(6)]
    )
    model = Counting()
    ParallelTaskExecutor(plan, model=model, max_concurrency=2).execute()
    assert model.most == 2


def test_independent_tasks_run_concurrently() -> None:
    plan = TaskPlan(
        tasks=[Task(id=f"t{i}", steps=[Step(id=f"s{i}", instructions=".")]) for i in range(4)]
    )
    model = Counting()
    ParallelTaskExecutor(plan, model=model, max_concurrency=None).execute()
    assert model.most == 4


def test_the_idempotent_task_write_falls_back_to_the_last_step() -> None:
    memory = AgentMemory()
    plan = TaskPlan(tasks=[Task(id="A", steps=[Step(id="only", instructions=".")])])

    def drop_task_result(event: Any) -> None:  # as if the finishing step wrote no task:
        if event.op == "set" and event.key == "task:A" and event.source == "A" and not dropped:
            dropped.append(True)
            memory.delete("task:A")

    dropped: list[bool] = []
    memory.subscribe(drop_task_result)
    ParallelTaskExecutor(
        plan, model=ScriptedChatModel([finish("from the step")]), memory=memory
    ).execute()
    assert dropped and memory.get_value("task:A") == "from the step"


def test_resume_with_the_run_id_after_a_crash_skips_finished_tasks() -> None:
    backend = InMemoryBackend()
    first = DurableRun.open(backend, "plan-1")
    crashed = ScriptedChatModel([finish(A_VALUE)])  # runs out during task B
    report = ParallelTaskExecutor(
        two_tasks(), model=crashed, memory=AgentMemory(first.store)
    ).execute(run_id="plan-1")
    assert report.completed == ("A",) and "B" in report.failed
    first.close()

    again = DurableRun.open(backend, "plan-1")
    model = ScriptedChatModel([finish("report")])
    executor = ParallelTaskExecutor(two_tasks(), model=model, memory=AgentMemory(again.store))
    report = executor.execute(run_id="plan-1")
    assert report.skipped == ("A",) and report.completed == ("B",)
    assert len(model.calls) == 1
    assert executor.get_final_result() == "report"


def test_one_at_a_time_runs_in_the_order_listed_as_far_as_dependencies_allow() -> None:
    plan = TaskPlan(
        tasks=[
            Task(id="C", depends_on=("A",), steps=[Step(id="c", instructions=".")]),
            Task(id="A", steps=[Step(id="a", instructions=".")]),
            Task(id="D", depends_on=("C",), steps=[Step(id="d", instructions=".")]),
            Task(id="B", steps=[Step(id="b", instructions=".")]),
        ]
    )
    model = ScriptedChatModel([finish(i) for i in range(4)])
    report = ParallelTaskExecutor(plan, model=model, max_concurrency=1).execute()
    assert report.completed == ("A", "C", "D", "B")


def test_a_task_that_cannot_start_fails_alone() -> None:
    plan = TaskPlan(
        tasks=[
            Task(id="A", steps=[Step(id="a", instructions=".", tools=("broken",))]),
            Task(id="B", steps=[Step(id="b", instructions=".")]),
        ]
    )
    # step a names a tool the executor was not given: its StepExecutor refuses to start
    report = ParallelTaskExecutor(plan, model=ScriptedChatModel([finish("b")])).execute()
    assert report.completed == ("B",)
    assert "ExecutorError" in report.failed["A"] and "broken" in report.failed["A"]
