"""The agent layer: the loop of seeds 000/002, prompt-based agents, and the planning agent."""

from weft.agent.agent import Agent
from weft.agent.context import AgentInputs, IterationContext, default_summarizer
from weft.agent.parsing import ResponseProblem, parse_structured_response
from weft.agent.planning import (
    ProblemPlan,
    PromptBasedActionPlanningAgent,
    parse_problem_graph,
)
from weft.agent.prompt_agents import PromptBasedActionAgent, PromptBasedAgent
from weft.agent.types import (
    AgentAction,
    AgentAttachment,
    AgentResponse,
    AgentResult,
    AgentStateItem,
    AgentStates,
    AgentTaskStatusFlags,
)

__all__ = [
    "Agent",
    "AgentAction",
    "AgentAttachment",
    "AgentInputs",
    "AgentResponse",
    "AgentResult",
    "AgentStateItem",
    "AgentStates",
    "AgentTaskStatusFlags",
    "IterationContext",
    "ProblemPlan",
    "PromptBasedActionAgent",
    "PromptBasedActionPlanningAgent",
    "PromptBasedAgent",
    "ResponseProblem",
    "default_summarizer",
    "parse_problem_graph",
    "parse_structured_response",
]
