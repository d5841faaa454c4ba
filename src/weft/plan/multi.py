"""``MultiModeAgent``: one entry point that runs an objective as an agent loop
(``"loop"``, its output written as ``task:<name>``), a ``TaskPlan`` (``"plan"``: the
one given, or one the model submits through ``submit_plan``) or a team (``"team"``).
Memory behaves the same in all three: inputs as ``input:<name>``, results as
``task:<id>``, values read through ``memory_read``, never pasted into prompts.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, Literal

from weft._sync import run_sync
from weft.agent import Agent, AgentResult
from weft.agent.toolbox import AgentTools, LoopTool
from weft.calls import Tool
from weft.errors import ExecutorError, ModelError, PlanValidationError
from weft.graph import Paused
from weft.llm import ChatMessage, ChatModel, Completion
from weft.llm.watch import achat
from weft.memory import AgentMemory, memory_keys, memory_tools, memory_tools_prompt_section
from weft.memory.prompts import upstream_memory_hint
from weft.plan.parallel import ParallelTaskExecutor, PlanReport
from weft.plan.prompts import planner_system_prompt
from weft.plan.step import write_task_result
from weft.plan.team import TeamExecutor, TeamMember, TeamReport
from weft.plan.types import TaskPlan

Mode = Literal["loop", "plan", "team"]
MODES: tuple[Mode, ...] = ("loop", "plan", "team")

_TEXT: Final = {"type": "string"}
_IDS: Final = {"type": "array", "items": _TEXT}
_STEP: Final = {
    "type": "object",
    "properties": {
        "id": _TEXT,
        "instructions": _TEXT,
        "depends_on": _IDS,
        "output_schema": {"type": "object"},
    },
    "required": ["id", "instructions"],
}
_TASK: Final = {
    "type": "object",
    "properties": {
        "id": _TEXT,
        "title": _TEXT,
        "description": _TEXT,
        "depends_on": _IDS,
        "steps": {"type": "array", "minItems": 1, "items": _STEP},
    },
    "required": ["id", "steps"],
}
PLAN_SCHEMA: Final[dict[str, Any]] = {
    "type": "object",
    "properties": {"title": _TEXT, "tasks": {"type": "array", "minItems": 1, "items": _TASK}},
    "required": ["tasks"],
}


@dataclass(frozen=True, slots=True, kw_only=True)
class ModeResult:
    """What a run produced: the result (``task:<name>`` in loop mode, the last task's in plan
    mode, the completed board tasks' in team mode), the mode's report, the plan it ran."""

    mode: Mode
    ok: bool
    result: Any
    report: AgentResult | PlanReport | TeamReport
    plan: TaskPlan | None = None


class MultiModeAgent:
    """Run ``objective`` in ``mode`` (see the module docstring)."""

    def __init__(
        self,
        *,
        name: str,
        objective: str,
        model: ChatModel,
        mode: Mode = "loop",
        memory: AgentMemory | None = None,
        tools: Iterable[Tool] = (),
        inputs: Mapping[str, Any] | None = None,
        plan: TaskPlan | None = None,
        team: Sequence[TeamMember] = (),
        system_prompt: str | None = None,
        max_iterations: int = 10,
        max_concurrency: int | None = 4,
    ) -> None:
        if mode not in MODES:
            raise ExecutorError(f"mode={mode!r}; the modes are {', '.join(MODES)}")
        if mode == "team" and not team:
            raise ExecutorError("team mode needs team=[TeamMember(...), ...]")
        self.name = name
        self.objective = objective
        self.model = model
        self.mode: Mode = mode
        self.memory = memory if memory is not None else AgentMemory()
        self.tools = tuple(tools)
        self.inputs = dict(inputs or {})
        self.plan = plan
        self.team = tuple(team)
        self.system_prompt = system_prompt
        self.max_iterations = max_iterations
        self.max_concurrency = max_concurrency
        self.result: ModeResult | None = None

    def execute(self) -> ModeResult:
        """The blocking form of ``aexecute``."""
        return run_sync(self.aexecute())

    async def aexecute(self) -> ModeResult:
        for key, value in self.inputs.items():
            self.memory.set(memory_keys.input(key), value, source="caller", title=key)
        run = {"loop": self._loop, "plan": self._plan, "team": self._team}[self.mode]
        self.result = result = await run()
        return result

    def get_results(self) -> Any:
        """The last run's result (None before a run)."""
        return None if self.result is None else self.result.result

    async def _loop(self) -> ModeResult:
        tools = memory_tools(self.memory, source=self.name)
        actor: dict[str, Any] = {tool.name: _memory_actor(tool) for tool in tools}
        actor.update({tool.name: tool.fn for tool in self.tools if tool.fn is not None})

        async def reasoner(prompt: str) -> Completion:  # any chat model, as a reasoner
            reply = await achat(self.model, [ChatMessage.user(prompt)])
            return Completion(reply.text, usage=reply.usage)

        agent = Agent(
            reasoner,
            actor=actor,
            store=self.memory.store,
            name=self.name,
            max_iterations=self.max_iterations,
        )
        outcome = await agent.arun(self._loop_input([*tools, *self.tools]))
        assert not isinstance(outcome, Paused), "a run with no run id never returns Paused"
        write_task_result(self.memory, self.name, outcome.output, self.objective[:200], "")
        return ModeResult(
            mode="loop",
            ok=outcome.stop_reason == "completed",
            result=self.memory.get_value(memory_keys.task(self.name)),
            report=outcome,
        )

    def _loop_input(self, tools: Sequence[Any]) -> str:
        actions = "\n".join(
            f"- {t.name}: {t.description} Arguments (JSON Schema): {json.dumps(dict(t.parameters))}"
            for t in tools
        )
        parts = [
            self.system_prompt or "",
            f"# Objective\n{self.objective}",
            memory_tools_prompt_section(),
            f"# Actions (the action type is the tool's name; args are its arguments)\n{actions}",
            upstream_memory_hint(memory_keys.input(key) for key in self.inputs),
        ]
        return "\n\n".join(part for part in parts if part)

    async def _plan(self) -> ModeResult:
        plan = self.plan if self.plan is not None else await self._make_plan()
        executor = ParallelTaskExecutor(
            plan,
            model=self.model,
            memory=self.memory,
            tools=self.tools,
            system_prompt=self.system_prompt,
            max_concurrency=self.max_concurrency,
        )
        report = await executor.aexecute()
        assert not isinstance(report, Paused), "a run with no run id never returns Paused"
        return ModeResult(
            mode="plan",
            ok=report.ok,
            result=executor.get_final_result(),
            report=report,
            plan=plan,
        )

    async def _make_plan(self) -> TaskPlan:
        """Ask the model for a plan through ``submit_plan``, sending problems back."""
        made: list[TaskPlan] = []

        def submit(arguments: dict[str, Any]) -> dict[str, Any]:
            try:
                made.append(TaskPlan.from_dict(arguments))
            except PlanValidationError as exc:
                problems = "; ".join(map(str, exc.problems))
                return {"ok": False, "error": f"the plan has problems: {problems}"}
            return {"ok": True, "tasks": [t.id for t in made[-1].tasks]}

        toolbox = AgentTools(
            (),
            memory=self.memory,
            source=f"{self.name}/planner",
            builtins=[
                LoopTool(
                    name="submit_plan",
                    description="Submit the plan: tasks, each with steps and dependencies.",
                    parameters=PLAN_SCHEMA,
                    handler=submit,
                )
            ],
            error=ExecutorError,
        )
        messages = [
            ChatMessage.system(planner_system_prompt(preamble=self.system_prompt)),
            ChatMessage.user(f"# Objective\n{self.objective}"),
        ]
        for _ in range(self.max_iterations):
            try:
                reply = await achat(self.model, messages, tools=toolbox.specs)
            except ModelError as exc:
                raise ExecutorError(f"{self.name}: the planner's model failed: {exc}") from exc
            messages.append(reply.to_message())
            if not reply.tool_calls:
                messages.append(ChatMessage.user("Submit the plan with the `submit_plan` tool."))
            for call in reply.tool_calls:
                outcome = await toolbox.answer(call)
                if made:
                    return made[-1]
                messages.append(outcome.to_message(call))
        raise ExecutorError(
            f"{self.name}: the model did not submit a valid plan in {self.max_iterations} "
            "calls; pass plan=TaskPlan(...) or raise max_iterations"
        )

    async def _team(self) -> ModeResult:
        executor = TeamExecutor(
            self.objective,
            members=self.team,
            memory=self.memory,
            tasks=self.plan.tasks if self.plan is not None else (),
            tools=self.tools,
            system_prompt=self.system_prompt,
            max_rounds=self.max_iterations,
        )
        report = await executor.aexecute()
        results = {key: self.memory.get_value(memory_keys.task(key)) for key in report.completed}
        return ModeResult(mode="team", ok=report.ok, result=results, report=report)


def _memory_actor(tool: Any) -> Any:
    def act(**arguments: Any) -> Any:
        return tool(arguments)

    act.__name__ = tool.name
    return act
