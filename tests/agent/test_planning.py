"""The planning agent: ProblemGraph parsing, the WorkGraph it builds, attachments, retries."""

from __future__ import annotations

import json
from typing import Any

import pytest

from weft.agent import (
    Agent,
    AgentAction,
    AgentAttachment,
    ProblemPlan,
    PromptBasedActionPlanningAgent,
    PromptBasedAgent,
    ResponseProblem,
    parse_problem_graph,
)
from weft.errors import AgentBuildError, AgentResponseError
from weft.llm import ScriptedReasoner

IDS = ["SUGGEST_RECIPE_STARBUCKS", "ORDER_STARBUCKS", "ORDER_MCDONALDS"]
DONE = json.dumps({"instant_response": "done", "task_status": "Completed"})


def plan(graph: str | None, ids: list[str] = IDS) -> str:
    reply: dict[str, Any] = {"problems": [{"request": f"do {i}", "problem_id": i} for i in ids]}
    if graph is not None:
        reply["problem_graph"] = graph
    return json.dumps(reply)


def test_one_path_per_line() -> None:
    text = "SUGGEST_RECIPE_STARBUCKS -> ORDER_STARBUCKS\n  ORDER_MCDONALDS  \n\n"
    assert parse_problem_graph(text, IDS) == (
        ("SUGGEST_RECIPE_STARBUCKS", "ORDER_STARBUCKS"),
        ("ORDER_MCDONALDS",),
    )


def test_alternatives_expand_as_a_cartesian_product() -> None:
    assert parse_problem_graph("A, B -> C -> D, E", list("ABCDE")) == (
        ("A", "C", "D"),
        ("A", "C", "E"),
        ("B", "C", "D"),
        ("B", "C", "E"),
    )


def test_problems_left_out_of_the_graph_run_on_their_own() -> None:
    assert parse_problem_graph("A -> B", list("ABC")) == (("A", "B"), ("C",))


def test_no_graph_runs_the_problems_in_order() -> None:
    assert parse_problem_graph(None, list("ABC")) == (("A", "B", "C"),)


def test_an_unknown_problem_id_is_named_with_the_known_ones() -> None:
    with pytest.raises(ResponseProblem) as caught:
        parse_problem_graph("SUGGEST_RECIPE_STARBUCKS -> ORDER_STARBUX", IDS)
    assert str(caught.value) == (
        "ProblemGraph names ORDER_STARBUX, which is not one of the ProblemIDs: "
        "SUGGEST_RECIPE_STARBUCKS, ORDER_STARBUCKS, ORDER_MCDONALDS"
    )


def test_a_cycle_is_named_along_its_path() -> None:
    with pytest.raises(ResponseProblem, match="the ProblemGraph has a cycle: A -> B -> C -> A"):
        parse_problem_graph("A -> B -> C\nC -> A", list("ABC"))


def test_a_self_loop_is_a_cycle() -> None:
    with pytest.raises(ResponseProblem, match="cycle: A -> A"):
        parse_problem_graph("A -> A", ["A"])


def test_an_empty_step_is_a_problem() -> None:
    with pytest.raises(ResponseProblem, match="has an empty step"):
        parse_problem_graph("A -> -> B", ["A", "B"])


def test_a_graph_without_problems_is_a_problem() -> None:
    with pytest.raises(ResponseProblem, match="has a <ProblemGraph> but no <Problems>"):
        parse_problem_graph("A -> B", [])


def planner_with(reasoner: Any, solver: Any, **kwargs: Any) -> PromptBasedActionPlanningAgent:
    return PromptBasedActionPlanningAgent(reasoner, solver=solver, name="planner", **kwargs)


def test_the_plan_becomes_a_workgraph_labelled_by_problem_id() -> None:
    planner = planner_with(ScriptedReasoner([]), solver=lambda request: request)
    response = planner.parse_response(
        plan("SUGGEST_RECIPE_STARBUCKS -> ORDER_STARBUCKS\nORDER_MCDONALDS")
    )
    from weft.agent import IterationContext

    step = IterationContext(agent=planner, iteration=0, action_results=None, attachments=())
    work = planner.create_next_actions(response, step)
    assert isinstance(work, ProblemPlan)
    assert callable(work)
    assert [n.id for n in work.graph.start_nodes] == ["SUGGEST_RECIPE_STARBUCKS", "ORDER_MCDONALDS"]
    assert work.graph.to_mermaid().splitlines()[1:] == [
        '    n0["SUGGEST_RECIPE_STARBUCKS"]',
        '    n1["ORDER_MCDONALDS"]',
        '    n2["ORDER_STARBUCKS"]',
        "    n0 --> n2",
    ]


def test_a_node_with_several_parents_gets_one_attachment_per_parent() -> None:
    seen: dict[str, list[AgentAttachment]] = {}

    def solver(request: str, target: str, attachments: tuple[AgentAttachment, ...]) -> str:
        seen[target] = list(attachments)
        return f"{target} done"

    planner = planner_with(ScriptedReasoner([plan("A, B -> C", list("ABC")), DONE]), solver)
    result = planner.run("join")
    assert [(a.id, a.content) for a in seen["C"]] == [("A", "A done"), ("B", "B done")]
    assert seen["A"] == seen["B"] == []
    assert result.states[0].action_results.result == "C done"


def test_an_agent_solver_sees_every_parent_result_in_its_prompt() -> None:
    solver_reasoner = ScriptedReasoner(lambda p: f"solved {p.splitlines()[-1]}")
    solver = PromptBasedAgent(solver_reasoner, template="{attachments}\n{user_input}")
    planner = planner_with(ScriptedReasoner([plan("A -> C\nB -> C", list("ABC")), DONE]), solver)
    planner.run("join")
    prompt_c = next(p for p in solver_reasoner.prompts if p.endswith("do C"))
    assert prompt_c.count("<Attachment>") == 2
    assert prompt_c.index("<ID>A</ID>") < prompt_c.index("<ID>B</ID>")
    assert '"instant_response": "solved do A"' in prompt_c


def test_problem_forks_merge_in_plan_order_with_one_record_each() -> None:
    def solver(request: str, target: str, store: Any) -> str:
        store.write("state", f"notes/{target}", request)
        return target

    planner = planner_with(ScriptedReasoner([plan("B -> A\nC", list("ABC")), DONE]), solver)
    planner.run("x")
    records = planner.store.value("state", "agent/planner/actions")
    assert [r["action"]["id"] for r in records] == ["A", "B", "C"]
    assert planner.store.value("state", "notes/B") == "do B"


def test_an_unknown_problem_id_gets_one_corrective_retry() -> None:
    bad = plan("SUGGEST_RECIPE_STARBUCKS -> ORDER_STARBUX")
    good = plan("SUGGEST_RECIPE_STARBUCKS -> ORDER_STARBUCKS")
    reasoner = ScriptedReasoner([bad, good, DONE])
    planner_with(reasoner, solver=lambda request: request).run("lunch")
    assert (
        "Your previous reply could not be used: ProblemGraph names ORDER_STARBUX, which is not "
        "one of the ProblemIDs: SUGGEST_RECIPE_STARBUCKS, ORDER_STARBUCKS, ORDER_MCDONALDS"
    ) in reasoner.prompts[1]


def test_a_cyclic_graph_twice_raises_with_the_raw_reply() -> None:
    cyclic = plan("A -> B\nB -> A", ["A", "B"])
    with pytest.raises(AgentResponseError) as caught:
        planner_with(ScriptedReasoner([cyclic, cyclic]), solver=str).run("x")
    assert caught.value.raw == cyclic
    assert caught.value.problem.startswith("the ProblemGraph has a cycle: A -> B -> A")


def test_a_solver_that_raises_becomes_an_error_result_for_its_successors() -> None:
    got: dict[str, Any] = {}

    def solver(request: str, target: str, previous_agent_results: Any = None) -> str:
        if target == "A":
            raise RuntimeError("no coffee")
        got[target] = previous_agent_results
        return "ok"

    result = planner_with(ScriptedReasoner([plan("A -> B", ["A", "B"]), DONE]), solver).run("x")
    assert isinstance(got["B"], AgentAction)
    assert got["B"].result == {"error": "RuntimeError: no coffee", "type": "Problem"}
    assert result.stop_reason == "completed"


def test_an_agent_solver_that_fails_becomes_an_error_result() -> None:
    solver = Agent(ScriptedReasoner(["junk", "junk again"]))
    result = planner_with(ScriptedReasoner([plan(None, ["A"]), DONE]), solver).run("x")
    error = result.states[0].action_results.result["error"]
    assert error.startswith("AgentResponseError: agent 'planner/0.A'")


def test_a_reply_with_both_actions_and_problems_is_a_problem() -> None:
    both = json.dumps({**json.loads(plan(None, ["A"])), "next_actions": [[{"type": "Search"}]]})
    planner = planner_with(ScriptedReasoner([]), solver=str, actor={"Search": str})
    with pytest.raises(ResponseProblem, match="has both <NextActions> and <Problems>"):
        planner.parse_response(both)


def test_a_reply_without_problems_runs_its_actions() -> None:
    reply = json.dumps({"next_actions": [[{"type": "Search"}]]})
    planner = planner_with(ScriptedReasoner([reply, DONE]), solver=str, actor={"Search": lambda: 7})
    assert planner.run("x").states[0].action_results.result == 7


def test_a_planner_needs_a_solver() -> None:
    with pytest.raises(AgentBuildError, match="a planning agent needs solver="):
        PromptBasedActionPlanningAgent(ScriptedReasoner([]), solver=None)


def test_the_default_template_documents_problems() -> None:
    planner = planner_with(ScriptedReasoner([]), solver=str)
    assert "<ProblemGraph>" in planner.template
    assert "<ActionGroup>" in planner.template
