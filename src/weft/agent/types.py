"""The agent's records: actions, responses, attachments, state items and the run result.

All are frozen and hold frozen values, so a record one reader holds never changes under it;
the agent stores them as plain JSON dicts (``to_dict()`` / ``from_dict()``).
"""

from __future__ import annotations

import dataclasses
import enum
import json
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Literal, overload

from weft.store import MISSING, FrozenDict, FrozenList, freeze

_NO_ARGS: Final = FrozenDict()
_BIG: Final = 2**63
_KEPT: Final = frozenset({bool, type(None), FrozenDict, FrozenList})


class AgentTaskStatusFlags(enum.Enum):
    """Where the task stands after an iteration: ``Completed`` ends the loop (after its
    actions ran); ``Pending`` waits for something outside the agent."""

    Completed = "Completed"
    Ongoing = "Ongoing"
    Pending = "Pending"

    @classmethod
    def parse(cls, text: str) -> AgentTaskStatusFlags | None:
        """The flag named by ``text`` (any case, surrounding space ignored), or None."""
        return _STATUS_BY_NAME.get(text.strip().lower())


_STATUS_BY_NAME: Final = {flag.value.lower(): flag for flag in AgentTaskStatusFlags}


@dataclass(frozen=True, slots=True, kw_only=True)
class AgentAction:
    """One action the reasoner asked for, and once it ran, its ``result`` (``MISSING``
    until then; an actor that raised leaves an error result and the message in ``error``)."""

    type: str
    target: str | None = None
    args: Mapping[str, Any] = field(default_factory=FrozenDict)
    reasoning: str | None = None
    id: str | None = None
    result: Any = MISSING
    error: str | None = None

    def __init__(
        self,
        *,
        type: str,
        target: str | None = None,
        args: Mapping[str, Any] = _NO_ARGS,
        reasoning: str | None = None,
        id: str | None = None,
        result: Any = MISSING,
        error: str | None = None,
    ) -> None:
        # the slots set through their descriptors: what the generated frozen __init__ does
        # through object.__setattr__, at half the cost (an agent makes two per iteration)
        if args.__class__ is not FrozenDict:
            args = freeze(dict(args), where=f"{type} args")
        slots = _ACTION_SLOTS
        slots[0](self, type)
        slots[1](self, target)
        slots[2](self, args)
        slots[3](self, reasoning)
        slots[4](self, id)
        slots[5](self, result)
        slots[6](self, error)

    @property
    def executed(self) -> bool:
        """Whether the action ran (it has a result, possibly an error result)."""
        return self.result is not MISSING

    def with_result(self, result: Any, *, error: str | None = None) -> AgentAction:
        """This action, executed: a new record with ``result`` (frozen) and ``error``."""
        cls = result.__class__
        if not (  # what freeze keeps as it is, seen before its message is made
            (cls is int and -_BIG < result < _BIG)
            or (cls is str and result.isascii())
            or cls in _KEPT
        ):
            result = freeze(result, where=f"result of {self.type}")
        return AgentAction(
            type=self.type,
            target=self.target,
            args=self.args,
            reasoning=self.reasoning,
            id=self.id,
            result=result,
            error=error,
        )

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"type": self.type}
        if self.target is not None:
            out["target"] = self.target
        out["args"] = self.args
        if self.reasoning is not None:
            out["reasoning"] = self.reasoning
        if self.id is not None:
            out["id"] = self.id
        if self.result is not MISSING:
            out["result"] = self.result
        if self.error is not None:
            out["error"] = self.error
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> AgentAction:
        return cls(
            type=data["type"],
            target=data.get("target"),
            args=data.get("args") or FrozenDict(),
            reasoning=data.get("reasoning"),
            id=data.get("id"),
            result=data.get("result", MISSING),
            error=data.get("error"),
        )


def slot_setters(cls: type) -> tuple[Callable[[Any, Any], None], ...]:
    """The ``__set__`` of each field's slot of the frozen dataclass ``cls``, in field order:
    what its hand-written ``__init__`` sets them with (a test holds it to the fields)."""
    return tuple(getattr(cls, f.name).__set__ for f in dataclasses.fields(cls))


_ACTION_SLOTS: Final = slot_setters(AgentAction)

ActionGroups = tuple[tuple[AgentAction, ...], ...]
"""``next_actions``: a group of one runs in sequence, a group of several in branches."""


@dataclass(frozen=True, slots=True, kw_only=True)
class AgentResponse:
    """A reasoner's reply, parsed; a plan's ``problems`` are actions with the ProblemID in
    ``id`` and the request in ``args["request"]``."""

    instant_response: str | None = None
    instant_learnings: str | None = None
    task_status: AgentTaskStatusFlags = AgentTaskStatusFlags.Ongoing
    task_status_description: str | None = None
    task_status_description_extended: str | None = None
    next_actions: ActionGroups = ()
    problems: tuple[AgentAction, ...] = ()
    problem_graph: tuple[tuple[str, ...], ...] | None = None

    def __init__(
        self,
        *,
        instant_response: str | None = None,
        instant_learnings: str | None = None,
        task_status: AgentTaskStatusFlags = AgentTaskStatusFlags.Ongoing,
        task_status_description: str | None = None,
        task_status_description_extended: str | None = None,
        next_actions: ActionGroups = (),
        problems: tuple[AgentAction, ...] = (),
        problem_graph: tuple[tuple[str, ...], ...] | None = None,
    ) -> None:
        slots = _RESPONSE_SLOTS  # as AgentAction's: one per iteration
        slots[0](self, instant_response)
        slots[1](self, instant_learnings)
        slots[2](self, task_status)
        slots[3](self, task_status_description)
        slots[4](self, task_status_description_extended)
        slots[5](self, next_actions)
        slots[6](self, problems)
        slots[7](self, problem_graph)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "instant_response": self.instant_response,
            "task_status": self.task_status.value,
        }
        for name in (
            "instant_learnings",
            "task_status_description",
            "task_status_description_extended",
        ):
            value = getattr(self, name)
            if value is not None:
                out[name] = value
        out["next_actions"] = [[a.to_dict() for a in group] for group in self.next_actions]
        if self.problems:
            out["problems"] = [p.to_dict() for p in self.problems]
        if self.problem_graph is not None:
            out["problem_graph"] = [list(path) for path in self.problem_graph]
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> AgentResponse:
        graph = data.get("problem_graph")
        return cls(
            instant_response=data.get("instant_response"),
            instant_learnings=data.get("instant_learnings"),
            task_status=AgentTaskStatusFlags(data.get("task_status", "Ongoing")),
            task_status_description=data.get("task_status_description"),
            task_status_description_extended=data.get("task_status_description_extended"),
            next_actions=tuple(
                tuple(AgentAction.from_dict(a) for a in group)
                for group in data.get("next_actions", ())
            ),
            problems=tuple(AgentAction.from_dict(p) for p in data.get("problems", ())),
            problem_graph=None if graph is None else tuple(tuple(path) for path in graph),
        )


_RESPONSE_SLOTS: Final = slot_setters(AgentResponse)


@dataclass(frozen=True, slots=True, kw_only=True)
class AgentAttachment:
    """Something the reasoner is shown beside the input (``str()`` gives its XML)."""

    id: str
    description: str
    content: Any

    def __str__(self) -> str:
        return (
            "<Attachment>\n"
            f"  <ID>{escape_xml(self.id)}</ID>\n"
            f"  <Description>{escape_xml(self.description)}</Description>\n"
            f"  <Content>{escape_xml(render_value(self.content))}</Content>\n"
            "</Attachment>"
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class AgentStateItem:
    """What one iteration was: the seed's fields, plus ``iteration`` (0, 1, ... per agent,
    across runs). ``new_task`` is true for the first iteration of a run given a user input."""

    iteration: int
    new_task: bool
    task_status: AgentTaskStatusFlags
    task_status_description: str | None
    task_status_description_extended: str | None
    user_input: Any
    reasoner_input: str
    raw_response: str
    response: AgentResponse
    action_results: Any = None

    def __init__(
        self,
        *,
        iteration: int,
        new_task: bool,
        task_status: AgentTaskStatusFlags,
        task_status_description: str | None,
        task_status_description_extended: str | None,
        user_input: Any,
        reasoner_input: str,
        raw_response: str,
        response: AgentResponse,
        action_results: Any = None,
    ) -> None:
        slots = _STATE_SLOTS  # as AgentAction's: one per iteration
        slots[0](self, iteration)
        slots[1](self, new_task)
        slots[2](self, task_status)
        slots[3](self, task_status_description)
        slots[4](self, task_status_description_extended)
        slots[5](self, user_input)
        slots[6](self, reasoner_input)
        slots[7](self, raw_response)
        slots[8](self, response)
        slots[9](self, action_results)

    def to_dict(self, response_record: Any = None) -> dict[str, Any]:
        """The record stored for this state (``response_record``: the response's, if known)."""
        return {
            "iteration": self.iteration,
            "new_task": self.new_task,
            "task_status": self.task_status.value,
            "task_status_description": self.task_status_description,
            "task_status_description_extended": self.task_status_description_extended,
            "user_input": self.user_input,
            "reasoner_input": self.reasoner_input,
            "raw_response": self.raw_response,
            "response": self.response.to_dict() if response_record is None else response_record,
            "action_results": to_plain_record(self.action_results),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> AgentStateItem:
        return cls(
            iteration=data["iteration"],
            new_task=data["new_task"],
            task_status=AgentTaskStatusFlags(data["task_status"]),
            task_status_description=data.get("task_status_description"),
            task_status_description_extended=data.get("task_status_description_extended"),
            user_input=data.get("user_input"),
            reasoner_input=data["reasoner_input"],
            raw_response=data["raw_response"],
            response=AgentResponse.from_dict(data["response"]),
            action_results=from_plain_record(data.get("action_results")),
        )


_STATE_SLOTS: Final = slot_setters(AgentStateItem)


class AgentStates(Sequence[AgentStateItem]):
    """The ordered, read-only list of an agent's state items: one per iteration."""

    __slots__ = ("_items",)

    def __init__(self, items: Iterable[AgentStateItem] = ()) -> None:
        self._items: tuple[AgentStateItem, ...] = tuple(items)

    @overload
    def __getitem__(self, index: int) -> AgentStateItem: ...
    @overload
    def __getitem__(self, index: slice) -> AgentStates: ...
    def __getitem__(self, index: int | slice) -> AgentStateItem | AgentStates:
        if isinstance(index, slice):
            return AgentStates(self._items[index])
        return self._items[index]

    def __len__(self) -> int:
        return len(self._items)

    def __iter__(self) -> Iterator[AgentStateItem]:
        return iter(self._items)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, AgentStates):
            return self._items == other._items
        if isinstance(other, (list, tuple)):
            return list(self._items) == list(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __add__(self, other: Iterable[AgentStateItem]) -> AgentStates:
        return AgentStates((*self._items, *other))

    @property
    def last(self) -> AgentStateItem | None:
        """The latest state item, or None."""
        return self._items[-1] if self._items else None

    def __repr__(self) -> str:
        return f"AgentStates({len(self._items)} items)"


StopReason = Literal["completed", "no_actions", "max_iterations"]


@dataclass(frozen=True, slots=True, kw_only=True)
class AgentResult:
    """What ``Agent.arun`` returns: how the run ended (``"no_actions"``: the reasoner asked
    for nothing more) and what it produced; ``states`` are the state items of this run."""

    agent: str
    response: AgentResponse | None
    action_results: Any
    states: AgentStates
    stop_reason: StopReason

    def __init__(
        self,
        *,
        agent: str,
        response: AgentResponse | None,
        action_results: Any,
        states: AgentStates,
        stop_reason: StopReason,
    ) -> None:
        slots = _RESULT_SLOTS  # as AgentAction's: one per run
        slots[0](self, agent)
        slots[1](self, response)
        slots[2](self, action_results)
        slots[3](self, states)
        slots[4](self, stop_reason)

    @property
    def instant_response(self) -> str | None:
        return None if self.response is None else self.response.instant_response

    @property
    def iterations(self) -> int:
        return len(self.states)

    @property
    def output(self) -> dict[str, Any]:
        """The run's answer as one JSON value, for whoever called the agent (a plan's node)."""
        return {
            "instant_response": self.instant_response,
            "action_results": plain_results(self.action_results),
        }


_RESULT_SLOTS: Final = slot_setters(AgentResult)


def plain_results(value: Any) -> Any:
    """Action results as plain data: an executed action becomes its ``result``."""
    if isinstance(value, AgentAction):
        return value.result if value.executed else None
    if isinstance(value, (list, tuple)):
        return FrozenList(plain_results(item) for item in value)
    return value


_ACTION_TAG: Final = "__agent_action__"


def to_plain_record(value: Any) -> Any:
    """``action_results`` as stored JSON: executed actions become tagged dicts."""
    if isinstance(value, AgentAction):
        return {_ACTION_TAG: value.to_dict()}
    if isinstance(value, (list, tuple)):
        return [to_plain_record(item) for item in value]
    return value


def from_plain_record(value: Any) -> Any:
    """The inverse of ``to_plain_record``."""
    if isinstance(value, Mapping) and len(value) == 1 and _ACTION_TAG in value:
        return AgentAction.from_dict(value[_ACTION_TAG])
    if isinstance(value, list):
        return FrozenList(from_plain_record(item) for item in value)
    return value


def action_record(
    chooser: str, iteration: int, group: int, index: int, action: AgentAction
) -> dict[str, Any]:
    """The record of one executed action in ``agent/<name>/actions``."""
    return {
        "agent": chooser,
        "iteration": iteration,
        "group": group,
        "index": index,
        "action": action.to_dict(),
    }


def render_value(value: Any) -> str:
    """A value as a reasoner reads it: text as it is, anything else as JSON."""
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, default=_json_fallback)


def _json_fallback(value: Any) -> Any:
    if isinstance(value, AgentAction):
        return value.to_dict()
    if isinstance(value, AgentResult):
        return value.output
    return str(value)


_XML_ESCAPES: Final = str.maketrans({"&": "&amp;", "<": "&lt;", ">": "&gt;"})


def escape_xml(text: str) -> str:
    """Escape ``&``, ``<`` and ``>`` so that text sits inside an element safely."""
    return text.translate(_XML_ESCAPES) if ("<" in text or ">" in text or "&" in text) else text
