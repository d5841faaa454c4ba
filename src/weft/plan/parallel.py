"""``ParallelTaskExecutor``: a ``TaskPlan``'s tasks as a DAG, on one AgentMemory.

The tasks run as jobs (``weft.plan.jobs``), each a ``TaskExecutor`` whose steps have a
run of their own (``<run id>.<task id>``). After a task completed comes the idempotent
task write: ``task:<id>`` from its finishing step's result unless it is there already,
on the task's fork, so it commits with the task's record.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, fields
from typing import Any

from weft._sync import run_sync
from weft.calls import Tool
from weft.graph import Paused
from weft.llm import ChatModel
from weft.memory import AgentMemory, memory_keys
from weft.plan.jobs import DagReport, run_jobs, sub_run_id
from weft.plan.step import write_task_result
from weft.plan.task import TaskExecutor, TaskResult
from weft.plan.types import TaskPlan
from weft.store import Store


@dataclass(frozen=True, slots=True, kw_only=True)
class PlanReport(DagReport):
    """What a task plan's run did: the tasks' ``DagReport``, each run task's ``TaskResult``
    and the final result."""

    tasks: Mapping[str, TaskResult] = field(default_factory=dict)
    final_result: Any = None

    @property
    def report(self) -> DagReport:
        """The tasks' report alone."""
        return DagReport(**{f.name: getattr(self, f.name) for f in fields(DagReport)})


class ParallelTaskExecutor:
    """Run a ``TaskPlan`` with ``model`` on ``memory`` (the README's "Executors" shows one)."""

    def __init__(
        self,
        plan: TaskPlan,
        *,
        model: ChatModel,
        memory: AgentMemory | None = None,
        tools: Iterable[Tool] = (),
        inputs: Mapping[str, Any] | None = None,
        system_prompt: str | None = None,
        max_concurrency: int | None = 4,
        max_iterations: int = 20,
        max_token_budget: int | None = None,
    ) -> None:
        self.plan = plan
        self.model = model
        self.memory = memory if memory is not None else AgentMemory()
        self.tools = tuple(tools)
        self.inputs = dict(inputs or {})
        self.system_prompt = system_prompt
        self.max_concurrency = max_concurrency
        self.max_iterations = max_iterations
        self.max_token_budget = max_token_budget
        self._results: dict[str, TaskResult] = {}

    def execute(
        self, *, run_id: str | None = None, answers: Mapping[str, Any] | None = None
    ) -> PlanReport | Paused:
        """The blocking form of ``aexecute``."""
        return run_sync(self.aexecute(run_id=run_id, answers=answers))

    async def aexecute(
        self, *, run_id: str | None = None, answers: Mapping[str, Any] | None = None
    ) -> PlanReport | Paused:
        """Run the tasks (those ``run_id`` recorded as completed are skipped); report;
        ``Paused`` when a step's tool asked a person, and ``answers=`` go on from there."""
        for name, value in self.inputs.items():
            self.memory.set(memory_keys.input(name), value, source="caller", title=name)
        tasks = self.plan.tasks
        report = await run_jobs(
            [t.id for t in tasks],
            {t.id: t.depends_on for t in tasks},
            lambda task_id, fork: self._run_task(task_id, fork, sub_run_id(run_id, task_id)),
            what=f"the tasks of plan {self.plan.title!r}" if self.plan.title else "the tasks",
            store=self.memory.store,
            run_id=run_id,
            kind="task",
            max_concurrency=self.max_concurrency,
            answers=answers,
        )
        if isinstance(report, Paused):
            return report
        return PlanReport(
            **{f.name: getattr(report, f.name) for f in fields(report)},
            tasks=dict(self._results),
            final_result=self.get_final_result(),
        )

    async def _run_task(self, task_id: str, fork: Store | None, run_id: str | None) -> str | None:
        """Run one task, then the idempotent task write on its fork (see the module docstring)."""
        assert fork is not None
        task = self.plan.task(task_id)
        executor = TaskExecutor(
            task,
            model=self.model,
            memory=self.memory,
            tools=self.tools,
            upstream_memory_keys=[memory_keys.task(dep) for dep in task.depends_on],
            system_prompt=self.system_prompt,
            max_iterations=self.max_iterations,
            max_token_budget=self.max_token_budget,
        )
        result = await executor.aexecute(run_id=run_id)
        assert not isinstance(result, Paused), "a step's pause goes up to its task's job"
        self._results[task_id] = result
        if not result.report.ok:
            return result.report.summary()
        if not self.memory.has(memory_keys.task(task_id)):  # the idempotent task write
            last = self.memory.get_value(memory_keys.step(task.final_step.id))
            write_task_result(AgentMemory(fork), task_id, last, task.label, task.description)
        return None

    def get_final_result(self) -> Any:
        """The result of the last task listed (None until it completed)."""
        return self.memory.get_value(memory_keys.task(self.plan.tasks[-1].id))

    def get_task_result(self, task_id: str) -> Any:
        """The result of one task (None until it completed)."""
        return self.memory.get_value(memory_keys.task(task_id))

    def get_all_results(self) -> dict[str, Any]:
        """Every task result in memory, by task id, oldest write first."""
        return {
            entry.key.removeprefix("task:"): entry.value
            for entry in self.memory.list(kind="task_result")
        }
