"""What one iteration works with: the reasoner's inputs, the context of its work, and the
pieces of the loop that do not need the agent (the default summarizer)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from weft.agent.types import ActionGroups, AgentAttachment, AgentResult, AgentStates

if TYPE_CHECKING:
    from weft.agent.agent import Agent
    from weft.store import RunLog

Summarizer = Callable[..., Any]
"""``summarizer(*branch_results: AgentResult) -> merged value`` (sync or async)."""

NextActions = ActionGroups | Callable[..., Any]
"""What ``create_next_actions`` returns: action groups, or a callable run as it is."""


@dataclass(frozen=True, slots=True, kw_only=True)
class AgentInputs:
    """Everything one iteration's reasoner input is built from."""

    iteration: int
    user_input: Any
    user_profile: Any
    context: Any
    action_results: Any
    attachments: tuple[AgentAttachment, ...]
    states: AgentStates


@dataclass(frozen=True, slots=True, kw_only=True)
class IterationContext:
    """What the work of one iteration may use: passed to ``create_next_actions``."""

    agent: Agent
    iteration: int
    action_results: Any
    attachments: tuple[AgentAttachment, ...]
    user_profile: Any = None
    context: Any = None
    log: RunLog | None = None
    """In a run with a ``run_id``: the iteration's units (``iter/<n>/...`` in the agent's
    store), what finished before the run was interrupted and where its work records what
    finishes (``weft.agent.resume``)."""
    calls: RunLog | None = None
    """The same units on the run's store, where keyed calls are recorded (a branch's
    ``log`` is in its fork, its keyed calls are not)."""


def default_summarizer(*branch_results: AgentResult) -> list[Any]:
    """Merge a parallel group: every branch's ``action_results``, in the actions' order."""
    return [result.action_results for result in branch_results]
