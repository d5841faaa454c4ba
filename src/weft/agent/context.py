"""What one iteration works with: the reasoner's inputs, its work's context and agent."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final, Protocol

from weft.agent.actors import ActorTable
from weft.agent.types import (
    ActionGroups,
    AgentAction,
    AgentAttachment,
    AgentResult,
    AgentStates,
    slot_setters,
)
from weft.store import RunLog, Store

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


class LoopAgent(Protocol):
    """What an iteration's work uses of its agent (so its modules need not import ``Agent``)."""

    name: str
    actors: ActorTable
    summarizer: Summarizer
    branching_agent_start_as_new: bool
    states_path: str
    actions_path: str
    current_path: str

    @property
    def store(self) -> Store: ...
    def copy(self, *, name: str, store: Store, clear_states: bool) -> LoopAgent: ...
    def record_action(
        self, chooser: str, iteration: int, group: int, index: int, action: AgentAction
    ) -> None: ...
    async def arun_unit(
        self, step: IterationContext, unit: str, *, action_results: Any
    ) -> AgentResult: ...


@dataclass(frozen=True, slots=True, kw_only=True)
class IterationContext:
    """What the work of one iteration may use: passed to ``create_next_actions``."""

    agent: LoopAgent
    iteration: int
    action_results: Any
    attachments: tuple[AgentAttachment, ...]
    user_profile: Any = None
    context: Any = None
    log: RunLog | None = None
    """The iteration's units in the agent's store, in a run with a ``run_id``."""
    calls: RunLog | None = None
    """The same units on the run's store, where keyed calls are recorded."""

    def __init__(
        self,
        *,
        agent: LoopAgent,
        iteration: int,
        action_results: Any,
        attachments: tuple[AgentAttachment, ...],
        user_profile: Any = None,
        context: Any = None,
        log: RunLog | None = None,
        calls: RunLog | None = None,
    ) -> None:
        slots = _CONTEXT_SLOTS  # as weft.agent.types.AgentAction's: one per iteration
        slots[0](self, agent)
        slots[1](self, iteration)
        slots[2](self, action_results)
        slots[3](self, attachments)
        slots[4](self, user_profile)
        slots[5](self, context)
        slots[6](self, log)
        slots[7](self, calls)


_CONTEXT_SLOTS: Final = slot_setters(IterationContext)


def default_summarizer(*branch_results: AgentResult) -> list[Any]:
    """Merge a parallel group: every branch's ``action_results``, in the actions' order."""
    return [result.action_results for result in branch_results]


def next_iteration(agent: LoopAgent) -> int:
    """The number of ``agent``'s next iteration, from its last ``current`` record."""
    current = agent.store.value("state", agent.current_path, None)
    return 0 if current is None else int(current["iteration"]) + 1
