"""One test per memory pattern of seed 000, on the seed's own examples."""

from __future__ import annotations

from typing import Any

from weft.agent import (
    AgentAction,
    AgentTaskStatusFlags,
    PromptBasedActionAgent,
    PromptBasedActionPlanningAgent,
    PromptBasedAgent,
)
from weft.llm import ScriptedReasoner


def xml_reply(*groups: list[str], status: str = "Ongoing", say: str = "") -> str:
    """A structured reply whose NextActions are groups of action types."""
    body = "".join(
        "<ActionGroup>"
        + "".join(f"<Action><ActionType>{t}</ActionType></Action>" for t in group)
        + "</ActionGroup>"
        for group in groups
    )
    return (
        f"<StructuredResponse><InstantResponse>{say}</InstantResponse>"
        f"<TaskStatus>{status}</TaskStatus><NextActions>{body}</NextActions>"
        "</StructuredResponse>"
    )


DONE = xml_reply(status="Completed", say="done")


def test_pattern1_action_results_are_fed_back_as_xml_and_replaced() -> None:
    page = {"body_html_after": "<div>...", "source": "https://..."}
    search = {"search_results": ["a", "b"], "query": "weft"}
    reasoner = ScriptedReasoner(
        [xml_reply(["Navigation.VisitURL"]), xml_reply(["Search.Web"]), DONE]
    )
    agent = PromptBasedActionAgent(
        reasoner,
        template="{user_input}\n{action_result}",
        actor={"Navigation.VisitURL": lambda: page, "Search.Web": lambda: search},
    )
    agent.run("Find the page")
    first, second, third = reasoner.prompts
    assert "<ActionResults>" not in first
    assert second == (
        "\n<ActionResults>\n"
        "  <Action>\n"
        "    <ActionType>Navigation.VisitURL</ActionType>\n"
        '    <ActionResult>{"body_html_after": "&lt;div&gt;...", "source": "https://..."}'
        "</ActionResult>\n"
        "  </Action>\n"
        "</ActionResults>"
    )
    assert "Search.Web" in third
    assert "Navigation.VisitURL" not in third  # replaced, not accumulated


def test_pattern2_sequential_actions_accumulate_into_the_shared_list() -> None:
    seen: dict[str, list[Any]] = {}

    def actor(name: str) -> Any:
        def act(previous_action_results: list[Any]) -> str:
            seen[name] = previous_action_results
            return f"{name}_data"

        return act

    reasoner = ScriptedReasoner([xml_reply(["ActionA"], ["ActionB"], ["ActionC"]), DONE])
    agent = PromptBasedActionAgent(
        reasoner, actor={n: actor(n) for n in ("ActionA", "ActionB", "ActionC")}
    )
    result = agent.run("go", action_results="initial_value")
    assert seen["ActionA"] == ["initial_value"]
    assert seen["ActionB"] == ["initial_value", "ActionA_data"]
    assert seen["ActionC"] == ["initial_value", "ActionA_data", "ActionB_data"]
    assert result.action_results.result == "ActionC_data"


def test_pattern3_parallel_branches_are_isolated_and_merged_in_action_order() -> None:
    seen: dict[str, list[Any]] = {}

    def actor(name: str) -> Any:
        def act(previous_action_results: list[Any], store: Any) -> str:
            seen[name] = previous_action_results
            store.write("state", f"scratch/{name}", name)
            seen[f"{name} sees"] = [e.key for e in store.entries(key_prefix="state:scratch")]
            return name

        return act

    def script(prompt: str) -> str:
        return xml_reply(["A1"], ["B1", "B2"], ["C1"]) if prompt.startswith("go") else DONE

    agent = PromptBasedActionAgent(
        ScriptedReasoner(script),
        template="{user_input}{action_result}",
        actor={n: actor(n) for n in ("A1", "B1", "B2", "C1")},
    )
    result = agent.run("go", action_results="init")
    assert seen["C1"] == ["init", "A1", ["B1", "B2"]]  # the merged group is ONE item
    assert seen["B1"] == seen["B2"] == ["init", "A1"]
    assert seen["B1 sees"] == ["state:scratch/A1", "state:scratch/B1"]  # never a sibling's
    assert seen["B2 sees"] == ["state:scratch/A1", "state:scratch/B2"]
    assert result.states[0].action_results.result == "C1"
    assert agent.store.value("state", "scratch/B2") == "B2"  # forks merged at the join


STARBUCKS = """<StructuredResponse>
  <Problems>
    <Problem>
      <Request>Search for Starbucks recipe</Request>
      <ProblemID>SUGGEST_RECIPE_STARBUCKS</ProblemID>
    </Problem>
    <Problem>
      <Request>Order from Starbucks</Request>
      <ProblemID>ORDER_STARBUCKS</ProblemID>
    </Problem>
    <Problem>
      <Request>Order from McDonald's</Request>
      <ProblemID>ORDER_MCDONALDS</ProblemID>
    </Problem>
  </Problems>
  <ProblemGraph>
    SUGGEST_RECIPE_STARBUCKS -> ORDER_STARBUCKS
    ORDER_MCDONALDS
  </ProblemGraph>
</StructuredResponse>"""


def test_pattern4_the_starbucks_problem_graph_passes_results_as_attachments() -> None:
    solver_reasoner = ScriptedReasoner(lambda prompt: f"did: {prompt.splitlines()[-1]}")
    solver = PromptBasedAgent(solver_reasoner, template="{attachments}\n{user_input}")
    planner = PromptBasedActionPlanningAgent(
        ScriptedReasoner([STARBUCKS, DONE]), solver=solver, name="planner"
    )
    result = planner.run("Lunch, please")
    prompts = {p.splitlines()[-1]: p for p in solver_reasoner.prompts}
    assert prompts["Search for Starbucks recipe"] == "\nSearch for Starbucks recipe"
    assert prompts["Order from McDonald's"] == "\nOrder from McDonald's"
    assert prompts["Order from Starbucks"] == (
        "<Attachment>\n"
        "  <ID>SUGGEST_RECIPE_STARBUCKS</ID>\n"
        "  <Description>The result of the 'SUGGEST_RECIPE_STARBUCKS' agent</Description>\n"
        '  <Content>{"instant_response": "did: Search for Starbucks recipe", '
        '"action_results": null}</Content>\n'
        "</Attachment>\n"
        "Order from Starbucks"
    )
    plan = result.states[0].response
    assert plan.problem_graph == (
        ("SUGGEST_RECIPE_STARBUCKS", "ORDER_STARBUCKS"),
        ("ORDER_MCDONALDS",),
    )
    sinks = result.states[0].action_results
    assert [a.id for a in sinks] == ["ORDER_STARBUCKS", "ORDER_MCDONALDS"]


def test_pattern5_the_conversation_is_built_from_the_states() -> None:
    reasoner = ScriptedReasoner(
        [
            "Quantum computing is a type of computation...",
            "Qubits are the fundamental units...",
            "Unlike bits, qubits can be in superposition.",
        ]
    )
    agent = PromptBasedAgent(reasoner, template="{user_input}", use_conversational_user_input=True)
    agent.run("Tell me about quantum computing")
    agent.run("What are qubits?")
    agent.run("How do they differ from classical bits?")
    assert reasoner.prompts[-1] == (
        "User: Tell me about quantum computing\n"
        "Agent: Quantum computing is a type of computation...\n"
        "User: What are qubits?\n"
        "Agent: Qubits are the fundamental units...\n"
        "User: How do they differ from classical bits?"
    )
    assert [s.task_status for s in agent.states] == [AgentTaskStatusFlags.Completed] * 3


def test_pattern6_action_memory_gets_its_own_placeholder() -> None:
    found = {
        "action_memory": {"memory": "The user's name is Ada."},
        "body_html": "<p>long page</p>",
    }
    reasoner = ScriptedReasoner([xml_reply(["Profile.Read"]), DONE])
    agent = PromptBasedActionAgent(
        reasoner,
        template="memory: {action_memory}\nresults: {action_result}",
        actor={"Profile.Read": lambda: found},
    )
    agent.run("Who am I?")
    assert reasoner.prompts[0].startswith("memory: \nresults: ")
    assert reasoner.prompts[1].startswith(
        "memory: The user's name is Ada.\nresults: <ActionResults>"
    )
    assert isinstance(agent.states[0].action_results, AgentAction)
