"""The agent layer: the loop of seeds 000/002, prompt-based agents, the planning agent, and
the tool-calling agent."""

from weft.agent.agent import Agent
from weft.agent.context import AgentInputs, IterationContext, default_summarizer
from weft.agent.parsing import ResponseProblem, parse_structured_response
from weft.agent.planning import (
    ProblemPlan,
    PromptBasedActionPlanningAgent,
    parse_problem_graph,
)
from weft.agent.prompt_agents import PromptBasedActionAgent, PromptBasedAgent
from weft.agent.tool_agent import ToolAgent
from weft.agent.tool_types import (
    IterationFinished,
    IterationStarted,
    RunFinished,
    ToolAgentEvent,
    ToolAgentResult,
    ToolAgentStopReason,
    ToolCallFinished,
)
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
    "IterationFinished",
    "IterationStarted",
    "ProblemPlan",
    "PromptBasedActionAgent",
    "PromptBasedActionPlanningAgent",
    "PromptBasedAgent",
    "ResponseProblem",
    "RunFinished",
    "ToolAgent",
    "ToolAgentEvent",
    "ToolAgentResult",
    "ToolAgentStopReason",
    "ToolCallFinished",
    "default_summarizer",
    "parse_problem_graph",
    "parse_structured_response",
]
