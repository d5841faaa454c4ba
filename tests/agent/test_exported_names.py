"""The public names of weft.agent are a contract (DESIGN.md, "Names")."""

from __future__ import annotations

import weft.agent

CONTRACT = {
    "Agent",
    "AgentAction",
    "AgentAttachment",
    "AgentResponse",
    "AgentStateItem",
    "AgentStates",
    "AgentTaskStatusFlags",
    "PromptBasedActionAgent",
    "PromptBasedActionPlanningAgent",
    "PromptBasedAgent",
    "ToolAgent",
}


def test_the_contract_names_are_exported() -> None:
    assert set(weft.agent.__all__) >= CONTRACT


def test_all_is_sorted_and_every_name_resolves() -> None:
    assert weft.agent.__all__ == sorted(weft.agent.__all__)
    for name in weft.agent.__all__:
        assert getattr(weft.agent, name) is not None


def test_the_exported_names_are_exactly_these() -> None:
    assert set(weft.agent.__all__) == CONTRACT | {
        "AgentInputs",
        "AgentResult",
        "IterationContext",
        "IterationFinished",
        "IterationStarted",
        "ProblemPlan",
        "ResponseProblem",
        "RunFinished",
        "ToolAgentEvent",
        "ToolAgentResult",
        "ToolAgentStopReason",
        "ToolCallFinished",
        "default_summarizer",
        "parse_problem_graph",
        "parse_structured_response",
    }


def test_the_docstring_examples_run() -> None:
    import doctest

    from weft.agent import agent, planning, prompt_agents, tool_agent

    for module in (agent, prompt_agents, planning, tool_agent):
        failed, attempted = doctest.testmod(module)
        assert attempted and not failed, module.__name__
