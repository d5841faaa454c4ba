"""``AgentStepExecutor``: a WorkGraph node that runs an agent step on shared memory.

The node writes each input it receives as ``input:<node_id>.<key>`` (positional ones as
``arg0``, ``arg1`` ...; ``None`` is skipped), runs the step, and returns its result
(also in ``step:<node_id>``); a failed step raises ``ExecutorError``.

>>> from weft.graph import WorkGraph
>>> from weft.llm import ScriptedChatModel
>>> memory = AgentMemory()
>>> model = ScriptedChatModel([ScriptedChatModel.tool_call("finish_step", {"result": "ok"})])
>>> node = AgentStepExecutor(Step(id="check", instructions="Check the draft."),
...                          model=model, memory=memory).node()
>>> WorkGraph(start_nodes=[node]).run(draft="text"), memory.get_value("input:check.draft")
('ok', 'text')
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace
from typing import Any

from weft.calls import Tool
from weft.errors import ExecutorError
from weft.graph import PassDown, ResultPassDownMode, WorkGraphNode
from weft.llm import ChatModel
from weft.memory import AgentMemory, memory_keys
from weft.plan.step import StepExecutor, StepResult
from weft.plan.types import Step


class AgentStepExecutor:
    """The bridge from a WorkGraph node to a ``Step`` (see the module docstring)."""

    def __init__(
        self,
        step: Step,
        *,
        model: ChatModel,
        memory: AgentMemory,
        tools: Iterable[Tool] = (),
        node_id: str | None = None,
        system_prompt: str | None = None,
        max_iterations: int = 20,
        max_token_budget: int | None = None,
    ) -> None:
        self.node_id = node_id or step.id
        self.step = replace(step, id=self.node_id) if step.id != self.node_id else step
        self.model = model
        self.memory = memory
        self.tools = tuple(tools)
        self.system_prompt = system_prompt
        self.max_iterations = max_iterations
        self.max_token_budget = max_token_budget
        self.last: StepResult | None = None

    async def __call__(self, *args: Any, **inputs: Any) -> Any:
        """Run as a node: write the edge inputs, run the step, return its result."""
        keys = []
        for key, value in {**{f"arg{i}": arg for i, arg in enumerate(args)}, **inputs}.items():
            if value is not None:
                name = f"{self.node_id}.{key}"
                self.memory.set(memory_keys.input(name), value, source=self.node_id, title=name)
                keys.append(memory_keys.input(name))
        result = await StepExecutor(
            self.step,
            model=self.model,
            memory=self.memory,
            tools=self.tools,
            system_prompt=self.system_prompt,
            upstream_memory_keys=keys,
            max_iterations=self.max_iterations,
            max_token_budget=self.max_token_budget,
        ).aexecute()
        self.last = result
        if not result.ok:
            raise ExecutorError(f"agent step {self.node_id!r} failed: {result.error}")
        return result.result

    def node(
        self, result_pass_down_mode: PassDown = ResultPassDownMode.NoPassDown
    ) -> WorkGraphNode:
        """This executor as a WorkGraph node with the node id as its label."""
        return WorkGraphNode(self, result_pass_down_mode, id=self.node_id)
