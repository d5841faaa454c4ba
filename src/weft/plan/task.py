"""``TaskExecutor``: a task's steps as a DAG by ``depends_on``, each a ``StepExecutor``.

The steps run as jobs (``weft.plan.jobs``). The finishing step writes ``task:<id>``,
which marks the task done, so it runs after every other step, never after one that
failed. A process step (``process_from``) runs once per item of its discover step's
list, the items as the jobs of a nested run, and writes their results in item order
(a failed item is ``{"error": ...}`` there, and fails the step).
"""

from __future__ import annotations

from collections.abc import Awaitable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from weft._sync import run_sync
from weft.calls import Tool
from weft.graph import Paused
from weft.llm import ChatModel
from weft.memory import AgentMemory, memory_keys
from weft.plan.jobs import DagReport, run_jobs, sub_run_id
from weft.plan.step import StepExecutor, StepResult, write_task_result
from weft.plan.types import Step, Task
from weft.store import MISSING, Store


@dataclass(frozen=True, slots=True, kw_only=True)
class TaskResult:
    """How a task ended: its result (``task:<id>``, None if it failed), each step's
    ``StepResult`` (a process step's items under ``<id>[<i>]``) and the steps' report."""

    task_id: str
    ok: bool
    result: Any
    steps: Mapping[str, StepResult] = field(default_factory=dict)
    report: DagReport = field(default_factory=DagReport)


class TaskExecutor:
    """Run one ``Task`` with ``model`` on ``memory``.

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

    def execute(
        self, *, run_id: str | None = None, answers: Mapping[str, Any] | None = None
    ) -> TaskResult | Paused:
        """The blocking form of ``aexecute``."""
        return run_sync(self.aexecute(run_id=run_id, answers=answers))

    async def aexecute(
        self, *, run_id: str | None = None, answers: Mapping[str, Any] | None = None
    ) -> TaskResult | Paused:
        """Seed the inputs, run the steps (skipping those on record under ``run_id``), report;
        ``Paused`` when a step's tool asked a person, and ``answers=`` go on from there."""
        for name, value in self.inputs.items():
            self.memory.set(memory_keys.input(name), value, source="caller", title=name)
        task = self.task

        async def run_step(step_id: str, store: Store | None) -> str | None:
            step, finishing = task.step(step_id), step_id == task.final_step.id
            if step.process_from is None:
                return await self._run(step, store, finishing=finishing)
            assert store is not None
            return await self._process(step, finishing, store, sub_run_id(run_id, step_id))

        report = await run_jobs(
            [step.id for step in task.steps],
            _waits_for(task),
            run_step,
            what=f"the steps of task {task.id!r}",
            store=self.memory.store,
            run_id=run_id,
            max_concurrency=self.max_concurrency,
            answers=answers,
        )
        if isinstance(report, Paused):
            return report
        key = memory_keys.task(task.id)
        ok = report.ok and self.memory.has(key)
        return TaskResult(
            task_id=task.id,
            ok=ok,
            result=self.memory.get_value(key) if ok else None,
            steps=dict(self.results),
            report=report,
        )

    async def _run(
        self, step: Step, store: Store | None, *, finishing: bool = False, item: Any = MISSING
    ) -> str | None:
        """One step (or item) on its fork: None when it completed, else why it failed."""
        assert store is not None
        result = await StepExecutor(
            step,
            model=self.model,
            memory=AgentMemory(store),
            tools=self.tools,
            system_prompt=self.system_prompt,
            upstream_memory_keys=self.upstream_memory_keys,
            task_id=self.task.id,
            task=(self.task.label, self.task.description),
            finish_task=finishing,
            item=item,
            max_iterations=self.max_iterations,
            max_token_budget=self.max_token_budget,
        ).aexecute()
        self.results[step.id] = result
        return None if result.ok else result.error

    async def _process(
        self, step: Step, finishing: bool, store: Store, run_id: str | None
    ) -> str | None:
        """Process mode: one job per item of the discover step's list, results in order."""
        assert step.process_from is not None
        memory = AgentMemory(store)
        items = memory.get_value(memory_keys.step(step.process_from))
        if not isinstance(items, list):
            problem = (
                f"step {step.id!r} processes the items of step {step.process_from!r}, whose "
                f"result is not a list ({type(items).__name__}); make the discover step's "
                "output_schema an array"
            )
            memory.set(memory_keys.step(step.id), {"error": problem}, source=step.id)
            return problem
        others = tuple(d for d in step.depends_on if d != step.process_from)
        subs = {f"{step.id}[{index}]": index for index in range(len(items))}

        def run_item(sub_id: str, fork: Store | None) -> Awaitable[str | None]:
            index = subs[sub_id]
            title = f"{step.label} [item {index}]"
            sub = replace(step, id=sub_id, title=title, process_from=None, depends_on=others)
            return self._run(sub, fork, item=items[index])

        report: DagReport | Paused = DagReport()
        if subs:
            report = await run_jobs(
                list(subs),
                {},
                run_item,
                what=f"the items of step {step.id!r}",
                store=self.memory.store,  # each item on record as it settles
                run_id=run_id,
                max_concurrency=self.max_concurrency,
            )
        assert not isinstance(report, Paused), "an item's pause goes up to its step's job"
        results = [self.memory.get_value(memory_keys.step(sub_id)) for sub_id in subs]
        memory.set(
            memory_keys.step(step.id),
            results,
            source=step.id,
            title=step.label,
            description=f"{len(results)} results, one per item of step:{step.process_from}",
        )
        if failed := [sub_id for sub_id in subs if sub_id in report.failed]:
            return f"{len(failed)} of {len(results)} items failed: {', '.join(failed)}"
        if finishing:
            write_task_result(memory, self.task.id, results, self.task.label, self.task.description)
        return None


def _waits_for(task: Task) -> dict[str, tuple[str, ...]]:
    """Each step's dependencies; the finishing step waits for every other step too."""
    final = task.final_step.id
    waits = {step.id: step.depends_on for step in task.steps}
    others = tuple(step.id for step in task.steps if step.id != final)
    waits[final] = tuple(dict.fromkeys((*waits[final], *others)))
    return waits
