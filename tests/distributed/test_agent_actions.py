"""An agent's actions, its branches' included, run on Ray inside ``offload_to``: the
agent ends with the same states and the same store events as the same run in one
process, and an actor that raised on a worker is the same failed action result."""

from __future__ import annotations

import json
import os
from typing import Any

import ray_nodes

from weft.agent import AgentAction, PromptBasedActionAgent
from weft.distributed import RayExecutor, offload_to
from weft.llm import ScriptedReasoner
from weft.store import CallIntent, RunLog, RunRecord, StepRecord, Store

SPAWN = json.dumps(
    {
        "instant_response": "splitting the work",
        "task_status": "Ongoing",
        "next_actions": [
            [{"type": "Square", "args": {"n": 3}}],
            [
                {"type": "Square", "args": {"n": 4}},
                {"type": "Fetch", "args": {"url": "https://example.org/x"}},
                {"type": "Note", "args": {"text": "seen"}},
                {"type": "Square", "args": {"n": 5}},
            ],
        ],
    }
)
DONE = json.dumps({"instant_response": "done", "task_status": "Completed"})
ACTORS = {"Square": ray_nodes.square, "Fetch": ray_nodes.fetch_page, "Note": ray_nodes.note}


def reply(prompt: str) -> str:
    # the parent's first iteration branches; every later call (the branches' loops, the
    # parent's second iteration) completes, in whatever order they come
    return SPAWN if prompt.startswith("User: go|") else DONE


def run(
    actor: Any, executor: RayExecutor | None, run_id: str | None = None
) -> PromptBasedActionAgent:
    agent = PromptBasedActionAgent(
        ScriptedReasoner(reply),
        template="{conversation}|{action_result}",
        actor=actor,
        branching_agent_start_as_new=False,
        store=Store(),
    )
    if executor is None:
        agent.run("go", run_id=run_id)
    else:
        with offload_to(executor):
            agent.run("go", run_id=run_id)
    return agent


def ended(agent: PromptBasedActionAgent) -> dict[str, Any]:
    """What the run left: the agent's states, its store's events in order (but for their
    clock readings), and the prompts its reasoner saw."""
    return {
        "states": [s.to_dict() for s in agent.states],
        "events": [(e.op, e.kind, e.path, e.value, e.source) for e in agent.store.events()],
        "prompts": sorted(agent.reasoner.prompts),  # type: ignore[attr-defined]
    }


def test_branched_actions_on_ray_end_as_in_one_process(ray_executor: RayExecutor) -> None:
    local = run(ACTORS, None)
    before = ray_executor.submitted
    remote = run(ACTORS, ray_executor)
    # the four plain actions went to Ray; the note (it takes the store) stayed here
    assert ray_executor.submitted - before == 4
    assert ended(remote) == ended(local)
    assert remote.store.value("state", "notes/last") == "seen"  # merged from its branch

    (sequential,) = remote.store.value("state", remote.actions_path)
    assert sequential["action"]["result"] == {"square": 3 * 3}
    branches = remote.states[0].action_results  # the branched group's, in action order
    assert [a.result for a in branches] == [
        {"square": 16},
        {"error": "LookupError: no page at https://example.org/x", "type": "Fetch"},
        "noted seen",
        {"square": 25},
    ]
    assert branches[1].error == "LookupError: no page at https://example.org/x"


def test_a_single_actor_gets_its_action_on_the_worker(ray_executor: RayExecutor) -> None:
    remote = run(ray_nodes.act, ray_executor)
    executed: list[AgentAction] = list(remote.states[0].action_results)
    assert [(a.result["type"], a.result["args"]) for a in executed] == [
        ("Square", {"n": 4}),
        ("Fetch", {"url": "https://example.org/x"}),
        ("Note", {"text": "seen"}),
        ("Square", {"n": 5}),
    ]
    assert all(a.result["pid"] != os.getpid() for a in executed)  # each ran on a worker


def test_an_actor_that_asks_a_person_on_a_worker_is_told_to_stay_in_process(
    ray_executor: RayExecutor,
) -> None:
    spawn = json.dumps(
        {
            "instant_response": "asking",
            "task_status": "Ongoing",
            "next_actions": [[{"type": "Ask", "args": {"question": "ship it?"}}]],
        }
    )
    agent = PromptBasedActionAgent(
        ScriptedReasoner([spawn, DONE]), template="{conversation}", actor={"Ask": ray_nodes.ask}
    )
    with offload_to(ray_executor):
        agent.run("go")
    asked = agent.states[0].action_results  # a sequential action: its own result
    assert asked.error is not None
    assert asked.error.startswith("PauseError: the actor for Ask called interrupt() on the")
    assert "give it an extra" in asked.error


RECORDS = (StepRecord, RunRecord, CallIntent)


def recorded(agent: PromptBasedActionAgent) -> dict[str, Any]:
    """A recorded run's events (but for its records, which hold clock readings) and its
    records (without them)."""
    return {
        "states": [s.to_dict() for s in agent.states],
        "events": [
            (e.op, e.kind, e.path, e.value, e.source)
            for e in agent.store.events()
            if not isinstance(e.value, RECORDS)
        ],
        "records": {
            unit: (r.kind, r.label, r.result, r.flag)
            for unit, r in RunLog(agent.store, "r1").recorded().items()
        },
    }


def test_a_recorded_run_on_ray_records_what_it_records_in_one_process(
    ray_executor: RayExecutor,
) -> None:
    local = run(ACTORS, None, "r1")
    before = ray_executor.submitted
    remote = run(ACTORS, ray_executor, "r1")
    assert ray_executor.submitted - before == 4
    assert recorded(remote) == recorded(local)
    fetch = recorded(remote)["records"]["iter/0/branch/1.1"]  # the failed fetch's branch
    assert fetch[2]["action"]["error"] == "LookupError: no page at https://example.org/x"
