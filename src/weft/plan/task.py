"""``TaskExecutor``: a task's steps as a DAG by ``depends_on``, each a ``StepExecutor``.

On start it seeds the caller's ``inputs`` as ``input:<name>``. The steps compile to a
WorkGraph (``weft.plan.jobs``): a step runs as soon as the steps it depends on completed
(``max_concurrency`` at once); a failed step blocks the steps after it, and the task
fails. The finishing step (``Task.final_step``) writes ``task:<id>``, which marks the
task done, so it runs after *every* other step of the task, whether it names them in
``depends_on`` or not, and never after one that failed. ``upstream_memory_keys``
(``task:<id>`` of the tasks this one depends on, from a ``ParallelTaskExecutor``) are
named to every step as hints.

Process mode: a step with ``process_from="discover"`` reads the list ``step:discover``
holds, runs once per item (the item in its user message; each run writes
``step:<id>[<i>]``), the items as the start nodes of a WorkGraph with the executor's
``max_concurrency``, and writes the list of the items' results, in item order, to
``step:<id>``; an item that failed is ``{"error": ...}`` in that list, and the step
fails if any item did.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from weft._sync import run_sync
from weft.calls import Tool
from weft.graph import WorkGraph, WorkGraphNode
from weft.llm import ChatModel
from weft.memory import AgentMemory, memory_keys
from weft.plan.jobs import DagReport, run_jobs
from weft.plan.step import StepExecutor, StepResult
from weft.plan.types import Step, Task


@dataclass(frozen=True, slots=True, kw_only=True)
class TaskResult:
    """How a task ended: ``ok``, its result (``task:<id>``, None if it failed), each
    step's ``StepResult`` (a process step's per-item results under ``<id>[<i>]``) and
    the steps' report (completed, failed, blocked)."""

    task_id: str
    ok: bool
    result: Any
    steps: Mapping[str, StepResult] = field(default_factory=dict)
    report: DagReport = field(default_factory=DagReport)


class TaskExecutor:
    """Run one ``Task`` with ``model`` on ``memory`` (see the module docstring).

    >>> from weft.llm import ScriptedChatModel
    >>> task = Task(id="greet", steps=[Step(id="hello", instructions="Say hello.")])
    >>> model = ScriptedChatModel([ScriptedChatModel.tool_call("finish_step", {"result": "hi"})])
    >>> memory = AgentMemory()
    >>> TaskExecutor(task, model=model, memory=memory).execute().result
    'hi'
    >>> memory.get_value("task:greet")
    'hi'
    """

    def __init__(
        self,
        task: Task,
        *,
        model: ChatModel,
        memory: AgentMemory | None = None,
        tools: Iterable[Tool] = (),
        inputs: Mapping[str, Any] | None = None,
        upstream_memory_keys: Sequence[str] = (),
        system_prompt: str | None = None,
        max_concurrency: int | None = None,
        max_iterations: int = 20,
        max_token_budget: int | None = None,
    ) -> None:
        self.task = task
        self.model = model
        self.memory = memory if memory is not None else AgentMemory()
        self.tools = tuple(tools)
        self.inputs = dict(inputs or {})
        self.upstream_memory_keys = tuple(upstream_memory_keys)
        self.system_prompt = system_prompt
        self.max_concurrency = max_concurrency
        self.max_iterations = max_iterations
        self.max_token_budget = max_token_budget
        self.results: dict[str, StepResult] = {}

    def execute(self) -> TaskResult:
        """The blocking form of ``aexecute``."""
        return run_sync(self.aexecute())

    async def aexecute(self) -> TaskResult:
        """Seed the inputs, run the steps, and report."""
        for name, value in self.inputs.items():
            self.memory.set(memory_keys.input(name), value, source="caller", title=name)
        task = self.task
        report = await run_jobs(
            [step.id for step in task.steps],
            _waits_for(task),
            self._run_step,
            what=f"the steps of task {task.id!r}",
            max_concurrency=self.max_concurrency,
        )
        key = memory_keys.task(task.id)
        ok = report.ok and self.memory.has(key)
        return TaskResult(
            task_id=task.id,
            ok=ok,
            result=self.memory.get_value(key) if ok else None,
            steps=dict(self.results),
            report=report,
        )

    async def _run_step(self, step_id: str) -> str | None:
        step = self.task.step(step_id)
        finishing = step.id == self.task.final_step.id
        if step.process_from is not None:
            return await self._process(step, finishing)
        result = await self._executor(step, finishing=finishing).aexecute()
        self.results[step.id] = result
        return None if result.ok else result.error

    def _executor(self, step: Step, *, finishing: bool, item: Any = None) -> StepExecutor:
        options: dict[str, Any] = {} if item is None else {"item": item[0]}
        return StepExecutor(
            step,
            model=self.model,
            memory=self.memory,
            tools=self.tools,
            system_prompt=self.system_prompt,
            upstream_memory_keys=self.upstream_memory_keys,
            task_id=self.task.id,
            task=(self.task.label, self.task.description),
            finish_task=finishing,
            max_iterations=self.max_iterations,
            max_token_budget=self.max_token_budget,
            **options,
        )

    async def _process(self, step: Step, finishing: bool) -> str | None:
        """Process mode: one run per item of the discover step's list, results in order."""
        assert step.process_from is not None
        items = self.memory.get_value(memory_keys.step(step.process_from))
        if not isinstance(items, list):
            problem = (
                f"step {step.id!r} processes the items of step {step.process_from!r}, whose "
                f"result is not a list ({type(items).__name__}); make the discover step's "
                "output_schema an array"
            )
            self.memory.set(memory_keys.step(step.id), {"error": problem}, source=step.id)
            return problem
        runs = await self._items(step, items)
        for run in runs:
            self.results[run.step_id] = run
        self.memory.set(
            memory_keys.step(step.id),
            [run.result for run in runs],
            source=step.id,
            title=step.label,
            description=f"{len(runs)} results, one per item of step:{step.process_from}",
        )
        failed = [run.step_id for run in runs if not run.ok]
        if failed:
            return f"{len(failed)} of {len(runs)} items failed: {', '.join(failed)}"
        if finishing:
            self.memory.set(
                memory_keys.task(self.task.id),
                [run.result for run in runs],
                source=self.task.id,
                title=self.task.label,
                description=self.task.description or None,
            )
        return None

    async def _items(self, step: Step, items: list[Any]) -> list[StepResult]:
        """One run of ``step`` per item, as the start nodes of one WorkGraph (item order)."""
        if not items:
            return []
        others = tuple(d for d in step.depends_on if d != step.process_from)
        runs: list[StepResult | None] = [None] * len(items)

        def one(index: int, item: Any) -> WorkGraphNode:
            sub = replace(
                step,
                id=f"{step.id}[{index}]",
                title=f"{step.label} [item {index}]",
                process_from=None,
                depends_on=others,
            )
            executor = self._executor(sub, finishing=False, item=(item,))

            async def run_item() -> None:
                runs[index] = await executor.aexecute()

            return WorkGraphNode(run_item, id=sub.id)

        nodes = [one(index, item) for index, item in enumerate(items)]
        await WorkGraph(start_nodes=nodes, max_concurrency=self.max_concurrency).arun()
        finished = [run for run in runs if run is not None]
        assert len(finished) == len(items), "every item node ran"
        return finished


def _waits_for(task: Task) -> dict[str, tuple[str, ...]]:
    """Each step's dependencies; the finishing step waits for every other step too."""
    final = task.final_step.id
    waits = {step.id: step.depends_on for step in task.steps}
    others = tuple(step.id for step in task.steps if step.id != final)
    waits[final] = tuple(dict.fromkeys((*waits[final], *others)))
    return waits
