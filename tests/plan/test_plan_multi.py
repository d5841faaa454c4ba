"""MultiModeAgent: loop, plan and team modes, with memory the same in all three."""

from __future__ import annotations

import json

import pytest
from plan_helpers import call, finish

from weft.errors import ExecutorError
from weft.llm import ScriptedChatModel
from weft.memory import AgentMemory, memory_tools_prompt_section
from weft.plan import MultiModeAgent, Step, Task, TaskPlan, TeamMember


def test_loop_mode_runs_the_agent_loop_with_memory_actions() -> None:
    model = ScriptedChatModel(
        [
            '{"next_actions": [[{"type": "memory_read", "args": {"keys": ["input:topic"]}}]]}',
            '{"instant_response": "Otters hold hands.", "task_status": "Completed"}',
        ]
    )
    memory = AgentMemory()
    agent = MultiModeAgent(
        name="helper",
        objective="Tell me about the topic.",
        model=model,
        memory=memory,
        inputs={"topic": "otters"},
    )
    result = agent.execute()
    assert result.ok and result.mode == "loop"
    assert memory.get_value("task:helper")["instant_response"] == "Otters hold hands."
    prompt = model.calls[0].prompt or ""
    assert memory_tools_prompt_section() in prompt and "- input:topic" in prompt
    assert "otters" not in prompt  # the input's key is named, not its value
    assert "otters" in (model.calls[1].prompt or "")  # read through memory_read


def test_plan_mode_runs_a_given_plan_on_the_parallel_executor() -> None:
    plan = TaskPlan(tasks=[Task(id="only", steps=[Step(id="s", instructions="Do it.")])])
    agent = MultiModeAgent(
        name="p", objective="Do it.", model=ScriptedChatModel([finish(42)]), mode="plan", plan=plan
    )
    result = agent.execute()
    assert result.ok and result.result == 42 and agent.get_results() == 42
    assert agent.memory.get_value("task:only") == 42


def test_plan_mode_asks_the_model_for_a_plan_and_sends_problems_back() -> None:
    bad = {
        "tasks": [{"id": "a", "depends_on": ["zz"], "steps": [{"id": "s", "instructions": "."}]}]
    }
    good = {"tasks": [{"id": "a", "steps": [{"id": "s", "instructions": "Answer."}]}]}
    model = ScriptedChatModel([call("submit_plan", bad), call("submit_plan", good), finish("done")])
    result = MultiModeAgent(name="p", objective="Answer.", model=model, mode="plan").execute()
    assert result.ok and result.plan is not None and result.plan.tasks[0].id == "a"
    problem = json.loads(model.calls[1].messages[-1].content or "{}")
    assert problem["ok"] is False and "depends on 'zz'" in problem["error"]
    assert "memory_list" in model.calls[0].tool_names


def test_team_mode_runs_members_on_the_plans_tasks() -> None:
    member = ScriptedChatModel(
        [
            call("board_claim", {"task_id": "only"}),
            call("board_complete", {"task_id": "only", "result": "r"}),
            "done",
        ]
    )
    plan = TaskPlan(tasks=[Task(id="only", steps=[Step(id="s", instructions=".")])])
    result = MultiModeAgent(
        name="t",
        objective="x",
        model=member,
        mode="team",
        plan=plan,
        team=[TeamMember(name="solo", model=member)],
    ).execute()
    assert result.ok and result.result == {"only": "r"}


@pytest.mark.parametrize("mode", ["loop", "plan", "team"])
def test_memory_tools_and_inputs_are_the_same_in_every_mode(mode: str) -> None:
    memory = AgentMemory()
    model = ScriptedChatModel(
        lambda messages, tools: '{"task_status": "Completed"}' if not tools else "stop"
    )
    plan = TaskPlan(tasks=[Task(id="t1", steps=[Step(id="s1", instructions=".")])])
    agent = MultiModeAgent(
        name="m",
        objective="x",
        model=model,
        mode=mode,
        memory=memory,  # type: ignore[arg-type]
        inputs={"k": "v"},
        plan=plan,
        team=[TeamMember(name="solo", model=model)],
        max_iterations=1,
    )
    agent.execute()
    assert memory.get_value("input:k") == "v"
    first = model.calls[0]
    seen = (first.prompt or "") + " ".join(m.content or "" for m in first.messages)
    assert "memory_read" in seen and ("memory_list" in first.tool_names or mode == "loop")


def test_team_mode_needs_members() -> None:
    with pytest.raises(ExecutorError, match="team mode needs"):
        MultiModeAgent(name="t", objective="x", model=ScriptedChatModel([]), mode="team")
