"""``StepExecutor``: one step as a tool-calling loop over a chat model, on AgentMemory.

It keeps seed 001's contract of a step, as the README's "Executors" lists it.

>>> from weft.llm import ScriptedChatModel
>>> from weft.memory import AgentMemory
>>> memory = AgentMemory()
>>> model = ScriptedChatModel([ScriptedChatModel.tool_call("finish_step", {"result": 42})])
>>> result = StepExecutor(Step(id="answer", instructions="Answer."), model=model,
...                       memory=memory).execute()
>>> result.ok, memory.get_value("step:answer")
(True, 42)
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Final

from weft._sync import run_sync
from weft.agent.tool_agent import CONCLUSION_SHARE
from weft.agent.toolbox import AgentTools, LoopTool, Outcome, error
from weft.calls import Tool
from weft.errors import ExecutorError, ModelError
from weft.graph.pause import Asking, enclosing
from weft.llm import AssistantMessage, ChatMessage, ChatModel, ToolCall, Usage, as_tool_spec
from weft.llm.watch import achat
from weft.memory import AgentMemory, memory_keys
from weft.plan.prompts import (
    CONCLUSION_NOTE,
    FINISH_STEP,
    NO_TEXT_ENDING,
    execution_system_prompt,
    step_user_message,
)
from weft.plan.types import Step
from weft.refs.schemas import schema_problems
from weft.store import MISSING, NOT_DONE

logger: Final = logging.getLogger("weft.plan")


@dataclass(frozen=True, slots=True, kw_only=True)
class StepResult:
    """How a step ended: ``ok``, its result (``{"error": ...}`` when it failed), the
    number of model calls, the tokens they cost, and the whole conversation."""

    step_id: str
    ok: bool
    result: Any
    error: str | None
    iterations: int
    usage: Usage | None
    messages: tuple[ChatMessage, ...]
    task_result: bool = False


class StepExecutor:
    """Run one ``Step`` with ``model`` on ``memory``. With ``finish_task=True`` the step
    writes ``task:<task_id>`` too; ``task`` is its task's ``(title, description)``, shown
    to the model, and ``item`` the work item of a process step."""

    def __init__(
        self,
        step: Step,
        *,
        model: ChatModel,
        memory: AgentMemory,
        tools: Iterable[Tool] = (),
        system_prompt: str | None = None,
        upstream_memory_keys: Sequence[str] = (),
        task_id: str | None = None,
        task: tuple[str, str] | None = None,
        finish_task: bool = False,
        item: Any = MISSING,
        max_iterations: int = 20,
        max_token_budget: int | None = None,
    ) -> None:
        if max_iterations < 1:
            raise ExecutorError(f"max_iterations={max_iterations}; a step needs at least one call")
        if finish_task and task_id is None:
            raise ExecutorError(f"step {step.id!r}: finish_task=True needs the task_id to write")
        self.step = step
        self.model = model
        self.memory = memory
        self.task_id = task_id
        self.task = task
        self.finish_task = finish_task
        self.item = item
        self.max_iterations = max_iterations
        self.max_token_budget = max_token_budget
        self.upstream_keys = [
            *(memory_keys.step(dep) for dep in step.depends_on if dep != step.process_from),
            *upstream_memory_keys,
        ]
        self.system_prompt = execution_system_prompt(
            preamble=system_prompt, finish_task=finish_task
        )
        finish = self._finish_tool()
        self.tools = AgentTools(
            tools,
            memory=memory,
            source=step.id,
            allowed=step.tools,
            builtins=[finish],
            error=ExecutorError,
        )
        self._concluding = [as_tool_spec(finish)]

    def _finish_tool(self) -> LoopTool:
        schema = dict(self.step.output_schema) if self.step.output_schema is not None else {}
        return LoopTool(
            name=FINISH_STEP,
            description=(
                f"Finish the step {self.step.label!r} and report its result. Call it once the "
                "step is done; the result must match the schema of `result`."
            ),
            parameters={
                "type": "object",
                "properties": {"result": schema or {"description": "The step's result."}},
                "required": ["result"],
            },
        )  # no handler: the loop answers it

    def user_message(self) -> str:
        """The first user message (instructions and upstream keys, never their values)."""
        return step_user_message(
            self.step,
            upstream_keys=self.upstream_keys,
            memory=self.memory,
            task=self.task,
            item=self.item,
        )

    def execute(self) -> StepResult:
        """The blocking form of ``aexecute``."""
        return run_sync(self.aexecute())

    async def aexecute(self) -> StepResult:
        """Run the loop until ``finish_step`` succeeds or the iterations run out.

        Run as a job of an executor run with a run id, the step records each model reply
        and each result of a caller's tool as keyed calls of that job: run again (after a
        crash, or with the answer to a question a tool asked), it replays them instead of
        asking the model or calling the tool again; memory tools run again on the job's
        new fork."""
        job = enclosing()
        messages = [ChatMessage.system(self.system_prompt), ChatMessage.user(self.user_message())]
        usage: Usage | None = None
        spent = 0
        concluding = False
        for iteration in range(1, self.max_iterations + 1):
            budget = self.max_token_budget
            if not concluding and budget is not None and spent >= CONCLUSION_SHARE * budget:
                concluding = True
                messages.append(ChatMessage.user(CONCLUSION_NOTE))
            offered = self._concluding if concluding else self.tools.specs
            try:
                reply = await self._reply(job, iteration, messages, offered)
            except ModelError as exc:
                problem = f"the model failed on call {iteration}: {exc}"
                return self._end(iteration, usage, messages, problem=problem)
            if reply.usage is not None:
                usage = reply.usage if usage is None else usage + reply.usage
                spent += _tokens(reply.usage)
            messages.append(reply.to_message())
            if not reply.tool_calls:
                messages.append(ChatMessage.user(NO_TEXT_ENDING))
                continue
            for k, call in enumerate(reply.tool_calls):
                if call.name == FINISH_STEP:
                    if (wrong := self._problem(call)) is None:
                        return self._end(iteration, usage, messages, call.arguments["result"])
                    outcome = error(wrong, "invalid_arguments")
                else:
                    outcome = await self._answer(job, f"tool/{iteration}.{k}", call, concluding)
                messages.append(outcome.to_message(call))
        problem = (
            f"step {self.step.id!r} did not call {FINISH_STEP} with a valid result within "
            f"{self.max_iterations} model calls"
        )
        return self._end(self.max_iterations, usage, messages, problem=problem)

    async def _reply(
        self, job: Asking | None, n: int, messages: list[ChatMessage], offered: Any
    ) -> AssistantMessage:
        """The model's ``n``-th reply: asked now, or replayed from the job's record."""
        if job is None:
            return await achat(self.model, messages, tools=offered)
        reply: AssistantMessage = await job.log.aonce(
            job.unit,
            f"model/{n}",
            achat,
            self.model,
            list(messages),
            tools=offered,
            reconcile=_again,
        )
        return reply

    async def _answer(
        self, job: Asking | None, key: str, call: ToolCall, concluding: bool
    ) -> Outcome:
        """The result of a tool call: a caller tool's is replayed from the job's record."""
        refused = self.tools.check(call, only=FINISH_STEP if concluding else None)
        if refused is not None:
            return refused
        if job is None or not self.tools.is_caller(call.name):
            return await self.tools.run(call)
        record = await job.log.aonce(
            job.unit, key, _run_recorded, self.tools, call, reconcile=_again
        )
        return Outcome.from_record(record)

    def _problem(self, call: ToolCall) -> str | None:
        """What is wrong with a ``finish_step`` call (sent back to the model), or None."""
        if call.parse_error is not None:
            return f'{call.parse_error}; call {FINISH_STEP} with {{"result": ...}}'
        if "result" not in call.arguments:
            return f"{FINISH_STEP} needs the argument 'result' holding the step's result"
        schema = self.step.output_schema
        if schema is not None and (found := schema_problems(schema, call.arguments["result"])):
            return (
                f"the result does not match the step's JSON Schema: {'; '.join(found)}. "
                f"Call {FINISH_STEP} again with a corrected result"
            )
        return None

    def _end(
        self,
        iterations: int,
        usage: Usage | None,
        messages: list[ChatMessage],
        result: Any = None,
        *,
        problem: str | None = None,
    ) -> StepResult:
        """Write the step's result (``{"error": problem}`` if it failed), and the task's."""
        step, ok = self.step, problem is None
        key = memory_keys.step(step.id)
        description = " ".join(step.instructions.split())[:200] or None
        if not ok:
            logger.info("step %s failed: %s", step.id, problem)
            result, description = {"error": problem}, None
        self.memory.set(key, result, source=step.id, title=step.label, description=description)
        if ok and self.finish_task and self.task_id is not None:
            title, description = self.task or (self.task_id, "")
            write_task_result(self.memory, self.task_id, result, title or self.task_id, description)
        return StepResult(
            step_id=step.id,
            ok=ok,
            result=self.memory.get_value(key) if ok else result,
            error=problem,
            iterations=iterations,
            usage=usage,
            messages=tuple(messages),
            task_result=ok and self.finish_task,
        )


def write_task_result(
    memory: AgentMemory, task_id: str, result: Any, title: str, description: str
) -> None:
    """Write ``task:<task_id>``, the result that marks a task done, by the task."""
    key = memory_keys.task(task_id)
    memory.set(key, result, source=task_id, title=title, description=description or None)


def _tokens(usage: Usage) -> int:
    if usage.total_tokens is not None:
        return usage.total_tokens
    return (usage.input_tokens or 0) + (usage.output_tokens or 0)


async def _run_recorded(tools: AgentTools, call: ToolCall) -> dict[str, Any]:
    return (await tools.run(call)).to_record()


def _again(_key: str) -> Any:
    """The keyed calls of a step replay it, they guard no effect: a model reply or a tool
    call that a crash interrupted is made again (a tool's effect is at least once, as in
    a job that runs again)."""
    return NOT_DONE
