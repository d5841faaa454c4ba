"""A branch that does not start as new inherits its parent's states up to and including
the iteration that spawned it: that iteration's user input, reply and state."""

from __future__ import annotations

import json
from typing import Any

from weft.agent import AgentResult, PromptBasedActionAgent
from weft.llm import ScriptedReasoner

SPAWN = json.dumps(
    {
        "instant_response": "splitting the work",
        "task_status": "Ongoing",
        "task_status_description": "searching two sources",
        "next_actions": [[{"type": "B1"}, {"type": "B2"}]],
    }
)
DONE = json.dumps({"instant_response": "done", "task_status": "Completed"})


def spawning_agent(template: str, branches: list[AgentResult]) -> PromptBasedActionAgent:
    def summarize(*results: AgentResult) -> list[Any]:
        branches.extend(results)
        return [r.action_results for r in results]

    reasoner = ScriptedReasoner(lambda p: SPAWN if p.startswith("User: go|") else DONE)
    return PromptBasedActionAgent(
        reasoner,
        template=template,
        actor=lambda action: action.type,
        branching_agent_start_as_new=False,
        summarizer=summarize,
    )


def test_a_branch_of_the_first_iteration_sees_the_iteration_that_spawned_it() -> None:
    branches: list[AgentResult] = []
    agent = spawning_agent("{conversation}|{current_state}", branches)
    agent.run("go")
    prompts = agent.reasoner.prompts[1:3]  # type: ignore[attr-defined]
    conversation = "User: go\nAgent: splitting the work"
    assert [p.split("|")[0] for p in prompts] == [conversation, conversation]
    assert all("searching two sources" in p.split("|")[1] for p in prompts)


def test_the_parent_keeps_one_state_per_iteration_with_its_merged_results() -> None:
    branches: list[AgentResult] = []
    agent = spawning_agent("{conversation}|", branches)
    result = agent.run("go")
    assert [len(b.states) for b in branches] == [1, 1]  # a result lists its own iterations
    assert [s.iteration for s in agent.states] == [0, 1]
    assert agent.states[0].user_input == "go"
    assert agent.states[0].action_results == result.states[0].action_results
    assert [a.result for a in agent.states[0].action_results] == ["B1", "B2"]
