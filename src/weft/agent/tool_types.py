"""What a ``ToolAgent`` run gives back: its result, why it stopped, and the events a caller
can follow as they happen (``ToolAgent.astream``).

The events of the model's reply are weft.llm's stream vocabulary (``TextDelta``,
``ThinkingDelta``, ``ToolCallStarted``, ``ToolCallDelta``, ``MessageDone``), passed on as
the model sends them; the loop adds its own: an iteration starting, a tool call's result,
an iteration ending, and the run ending.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal, TypeAlias

from weft.llm import ChatMessage, StreamEvent, Usage

if TYPE_CHECKING:
    from weft.graph.pause import Paused

ToolAgentStopReason: TypeAlias = Literal[
    "answered", "finished", "max_iterations", "max_tokens", "max_time"
]
"""Why a run ended: the model answered in text with no tool call (``answered``), it called
the ``finish`` tool with its answer (``finished``), or a limit was reached first."""

RejectedCall: TypeAlias = Literal[
    "unknown_tool",
    "bad_arguments",
    "invalid_arguments",
    "duplicate_id",
    "not_offered",
    "too_many_calls",
]
"""Why a tool call of the model was answered with an error without running anything."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolAgentResult:
    """How a run of a ``ToolAgent`` ended.

    ``run_id`` names the run's records (None for a run without a run id, which records
    nothing). ``answer`` is the model's final text (or the ``finish`` tool's ``answer``); a run
    stopped by a limit keeps the last text the model wrote, or None. ``messages`` is the
    whole conversation (system prompt first), ``usage`` the tokens of every model call
    added up, ``iterations`` the number of model calls. ``tool_calls`` counts the calls
    the model asked for, ``failed_calls`` the tools that raised (each answered with an
    error result), ``rejected_calls`` the calls refused before running (unknown tool,
    arguments that are not JSON or fail the tool's schema, a duplicate call id, a tool not
    offered at the time, one call too many in a reply).
    """

    answer: str | None
    stop_reason: ToolAgentStopReason
    messages: tuple[ChatMessage, ...]
    usage: Usage | None
    iterations: int
    run_id: str | None
    tool_calls: int = 0
    failed_calls: int = 0
    rejected_calls: int = 0

    @property
    def answered(self) -> bool:
        """Whether the model gave its answer (rather than a limit ending the run)."""
        return self.stop_reason in ("answered", "finished")


@dataclass(frozen=True, slots=True)
class IterationStarted:
    """Model call number ``iteration`` (1-based) begins; ``concluding`` when only the
    ``finish`` tool is offered to it (the budget is nearly spent)."""

    iteration: int
    concluding: bool = False


@dataclass(frozen=True, slots=True)
class ToolCallFinished:
    """The result of the call ``id`` (number ``index`` of the reply) of tool ``name``, as
    the model will read it; ``is_error`` when the call failed or was refused."""

    iteration: int
    index: int
    id: str
    name: str
    content: str
    is_error: bool


@dataclass(frozen=True, slots=True)
class IterationFinished:
    """Every tool call of ``iteration`` has its result; ``usage`` is the run's so far."""

    iteration: int
    usage: Usage | None


@dataclass(frozen=True, slots=True)
class RunFinished:
    """The last event: the run's ``ToolAgentResult``, or ``Paused`` when a tool asked a
    person (resume with ``run_id=`` and ``answers=``)."""

    result: ToolAgentResult | Paused


ToolAgentEvent: TypeAlias = (
    StreamEvent | IterationStarted | ToolCallFinished | IterationFinished | RunFinished
)
"""Everything ``ToolAgent.astream`` yields."""
