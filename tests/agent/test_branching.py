"""Action groups: sequential accumulation, parallel branches, summarizing, forks."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from weft.agent import Agent, AgentResult, PromptBasedActionAgent
from weft.agent.branching import build_action_graph
from weft.agent.context import IterationContext
from weft.agent.parsing import parse_structured_response
from weft.errors import ScriptExhaustedError
from weft.llm import ScriptedReasoner
from weft.store import Store


def groups(*gs: list[str]) -> str:
    return json.dumps({"next_actions": [[{"type": t} for t in g] for g in gs]})


DONE = json.dumps({"instant_response": "done", "task_status": "Completed"})


def first_then_done(reply: str) -> Any:
    """A script: ``reply`` to the user's prompt ('go ...'), DONE to every other prompt."""
    return ScriptedReasoner(lambda prompt: reply if prompt.startswith("go") else DONE)


def recording(seen: dict[str, Any], value: Any = None) -> Any:
    def make(name: str) -> Any:
        def act(previous_action_results: Any) -> Any:
            seen[name] = previous_action_results
            return name if value is None else value

        return act

    return make


def test_the_mixed_case_gives_c1_the_initial_value_a1_and_the_merged_b_results() -> None:
    seen: dict[str, Any] = {}
    make = recording(seen)
    agent = Agent(
        first_then_done(groups(["A1"], ["B1", "B2"], ["C1"])),
        actor={n: make(n) for n in ("A1", "B1", "B2", "C1")},
    )
    agent.run("go", action_results="init")
    assert seen["C1"] == ["init", "A1", ["B1", "B2"]]


def test_list_results_are_one_item_each_never_flattened() -> None:
    seen: dict[str, Any] = {}
    agent = Agent(
        first_then_done(groups(["A"], ["B"])),
        actor={"A": lambda: [1, 2], "B": recording(seen)("B")},
    )
    agent.run("go")
    assert seen["B"] == [None, [1, 2]]


def test_the_shared_list_an_actor_holds_never_changes_afterwards() -> None:
    held: list[Any] = []

    def keep(previous_action_results: Any) -> str:
        held.append(previous_action_results)
        return "x"

    agent = Agent(first_then_done(groups(["A"], ["B"], ["C"])), actor=dict.fromkeys("ABC", keep))
    agent.run("go")
    assert held == [[None], [None, "x"], [None, "x", "x"]]
    with pytest.raises(TypeError, match="read-only"):
        held[0].append("mutated")


def test_branches_run_concurrently() -> None:
    started: list[str] = []
    both = asyncio.Event()

    async def meet(action: Any) -> str:
        started.append(action.type)
        if len(started) == 2:
            both.set()
        await asyncio.wait_for(both.wait(), timeout=5)  # sequential branches would time out
        return action.type

    agent = Agent(first_then_done(groups(["B1", "B2"])), actor=meet)
    result = agent.run("go")
    assert sorted(started) == ["B1", "B2"]
    assert [a.result for a in result.states[0].action_results] == ["B1", "B2"]


def test_the_summary_follows_action_order_not_completion_order() -> None:
    async def later(action: Any) -> str:
        await asyncio.sleep(0.05 if action.type == "B1" else 0)  # B2 finishes first
        return action.type

    agent = Agent(first_then_done(groups(["B1", "B2", "B3"])), actor=later)
    merged = agent.run("go").states[0].action_results
    assert [a.result for a in merged] == ["B1", "B2", "B3"]
    records = [r["action"]["type"] for r in agent.store.value("state", "agent/agent/actions", [])]
    assert records == []  # branch actions are recorded under the branches' own names
    branch_records = [
        agent.store.value("state", f"agent/agent/0.0.{k}/actions")[0]["action"]["result"]
        for k in range(3)
    ]
    assert branch_records == ["B1", "B2", "B3"]


def test_a_custom_summarizer_gets_every_branch_result_in_action_order() -> None:
    got: list[AgentResult] = []

    def summarize(*results: AgentResult) -> str:
        got.extend(results)
        return "+".join(r.action_results.result for r in results)

    seen: dict[str, Any] = {}
    agent = Agent(
        first_then_done(groups(["B1", "B2"], ["C"])),
        actor={"B1": lambda: "b1", "B2": lambda: "b2", "C": recording(seen)("C")},
        summarizer=summarize,
    )
    agent.run("go")
    assert [r.agent for r in got] == ["agent/0.0.0", "agent/0.0.1"]
    assert seen["C"] == [None, "b1+b2"]


def test_each_branch_works_on_a_fork_not_a_copy(monkeypatch: pytest.MonkeyPatch) -> None:
    forks: list[tuple[Store, Store]] = []
    real_fork = Store.fork

    def spy(self: Store, *, name: str | None = None) -> Store:
        child = real_fork(self, name=name)
        forks.append((self, child))
        return child

    monkeypatch.setattr(Store, "fork", spy)
    import copy

    monkeypatch.setattr(copy, "deepcopy", lambda *a, **k: pytest.fail("deep copy"))
    stores: dict[str, Store] = {}

    def act(action: Any, store: Store) -> str:
        stores[action.type] = store
        return action.type

    agent = Agent(first_then_done(groups(["B1", "B2"])), actor=act, name="p")
    agent.run("go")
    assert sorted((parent is agent.store, child.name) for parent, child in forks) == [
        (True, "p/0.0.0"),
        (True, "p/0.0.1"),
    ]
    assert stores["B1"].name == "p/0.0.0"
    assert stores["B2"].name == "p/0.0.1"
    assert {id(stores["B1"]), id(stores["B2"])} == {id(child) for _, child in forks}


def test_a_branch_starts_as_new_by_default() -> None:
    reasoner = ScriptedReasoner(lambda p: groups(["B1", "B2"]) if p.endswith("User: go") else DONE)
    agent = PromptBasedActionAgent(
        reasoner, template="{conversation}", actor=lambda action: action.type
    )
    agent.run("go")
    branch_prompts = reasoner.prompts[1:3]
    assert branch_prompts == ["", ""]


def test_a_branch_can_inherit_the_parent_states() -> None:
    def script(prompt: str) -> str:
        return groups(["B1", "B2"]) if prompt == "User: first\nAgent: done\nUser: go|" else DONE

    reasoner = ScriptedReasoner(script)
    agent = PromptBasedActionAgent(
        reasoner,
        template="{conversation}|{action_result}",
        actor=lambda action: action.type,
        branching_agent_start_as_new=False,
    )
    agent.run("first")
    agent.run("go")
    branch_prompts = sorted(reasoner.prompts[2:4])
    inherited = "User: first\nAgent: done\nUser: go"  # the spawning iteration's input too
    assert [p.split("|")[0] for p in branch_prompts] == [inherited] * 2
    assert ">B1<" in branch_prompts[0]
    assert ">B2<" in branch_prompts[1]


def test_a_branch_continues_its_own_loop() -> None:
    def script(prompt: str) -> str:
        if prompt.startswith("go"):
            return groups(["B1", "B2"])
        if '"B1"' in prompt or ">B1<" in prompt:
            return groups(["more"])  # branch B1 asks for one more action
        return DONE

    agent = Agent(ScriptedReasoner(script), actor=lambda action: action.type)
    merged = agent.run("go").states[0].action_results
    assert [a.type for a in merged] == ["more", "B2"]
    assert len(agent.store.value("state", "agent/agent/0.0.0/states")) == 2


def test_a_group_inside_a_branch_nests_its_names() -> None:
    def script(prompt: str) -> str:
        if prompt.startswith("go"):
            return groups(["B1", "B2"])
        if ">B1<" in prompt:
            return groups(["X", "Y"])
        return DONE

    agent = Agent(ScriptedReasoner(script), actor=lambda action: action.type)
    agent.run("go")
    nested = sorted(e.key for e in agent.store.entries(kind="state") if e.key.endswith("/actions"))
    assert nested == [
        "state:agent/agent/0.0.0/0.0.0/actions",
        "state:agent/agent/0.0.0/0.0.1/actions",
        "state:agent/agent/0.0.0/actions",
        "state:agent/agent/0.0.1/actions",
    ]


def test_a_failing_branch_raises_the_original_error() -> None:
    calls = {"n": 0}

    def script(prompt: str) -> str:
        calls["n"] += 1
        if prompt.startswith("go"):
            return groups(["B1", "B2"])
        raise ScriptExhaustedError("no reply for the branch")

    with pytest.raises(ScriptExhaustedError) as caught:
        Agent(ScriptedReasoner(script), actor=lambda action: action.type).run("go")
    assert any("raised inside the actions of agent 'agent'" in n for n in caught.value.__notes__)


def test_the_action_graph_mirrors_the_seed() -> None:
    response, _ = parse_structured_response(groups(["A"], ["B", "C", "D"], ["E"]))
    agent = Agent(ScriptedReasoner([]), actor=lambda action: None)
    step = IterationContext(agent=agent, iteration=0, action_results=None, attachments=())
    graph = build_action_graph(response.next_actions, step)
    assert graph.to_mermaid().splitlines()[1:] == [
        '    n0["Actioner:A"]',
        '    n1["Actioner:B"]',
        '    n2["Actioner:C"]',
        '    n3["Actioner:D"]',
        '    n4["Agent:agent/0.1.0"]',
        '    n5["Agent:agent/0.1.1"]',
        '    n6["Agent:agent/0.1.2"]',
        '    n7["Summarizer"]',
        '    n8["Actioner:E"]',
        "    n0 --> n1",
        "    n0 --> n2",
        "    n0 --> n3",
        "    n1 --> n4",
        "    n2 --> n5",
        "    n3 --> n6",
        "    n4 --> n7",
        "    n5 --> n7",
        "    n6 --> n7",
        "    n7 --> n8",
    ]
