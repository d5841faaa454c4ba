"""A task's finishing step writes ``task:<id>`` only after every other step of the task,
also when no step declares ``depends_on`` and the steps run concurrently."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from plan_helpers import finish

from weft.llm import AssistantMessage, ChatModelBase
from weft.memory import AgentMemory
from weft.plan import ParallelTaskExecutor, Step, Task, TaskExecutor, TaskPlan

DELAYS = {"facts": 0.04, "quotes": 0.02}


class Slow(ChatModelBase):
    """Finishes each step with its title; the earlier steps take longer than the last."""

    async def achat(self, messages: Any, *, tools: Any = None, **options: Any) -> AssistantMessage:
        title = (messages[1].content or "").split("\n", 1)[0].removeprefix("# Step: ")
        await asyncio.sleep(DELAYS.get(title, 0.0))
        return finish(title)


def brief(final_step_id: str | None) -> Task:
    ids = ["facts", "write", "quotes"] if final_step_id else ["facts", "quotes", "write"]
    steps = [Step(id=i, instructions=f"Do {i}.") for i in ids]
    return Task(id="brief", steps=steps, final_step_id=final_step_id)


@pytest.mark.parametrize("final_step_id", [None, "write"])
@pytest.mark.parametrize("max_concurrency", [None, 3])
@pytest.mark.parametrize("through_plan", [False, True])
def test_the_finishing_step_comes_last_without_depends_on(
    final_step_id: str | None, max_concurrency: int | None, through_plan: bool
) -> None:
    memory = AgentMemory()
    written: list[str] = []
    memory.subscribe(lambda event: written.append(event.key))
    task = brief(final_step_id)
    if through_plan:
        plan = TaskPlan(tasks=[task])
        ParallelTaskExecutor(
            plan, model=Slow(), memory=memory, max_concurrency=max_concurrency
        ).execute()
    else:
        TaskExecutor(task, model=Slow(), memory=memory, max_concurrency=max_concurrency).execute()
    assert sorted(written[:2]) == ["step:facts", "step:quotes"]
    assert written[2:] == ["step:write", "task:brief"]
    assert memory.get_value("task:brief") == "write"
