"""The structured reply of an action agent: the seed's XML, or JSON with the same fields.

The XML is the layout the prompts ask for (``ACTION_FORMAT`` in ``weft.agent.prompt_agents``,
``PLANNING_FORMAT`` in ``weft.agent.planning``), read tolerantly: tags in any case, text
around the element and unknown tags ignored, the ``<StructuredResponse>`` wrapper optional,
an ``<Action>`` outside an ``<ActionGroup>`` a group of one, ``<Type>`` for ``<ActionType>``,
and ``<Args>`` a JSON object or ``<name>value</name>`` elements. The JSON (bare, or in a
```json fence) has the same fields in snake case::

    {"task_status": "Ongoing", "next_actions": [[{"type": "Search", "target": "weft"}],
     [{"type": "A", "args": {"q": 1}}, {"type": "B"}]],
     "problems": [{"request": "...", "problem_id": "ORDER"}], "problem_graph": "A -> ORDER"}

A missing task status is ``Ongoing`` when there is something to do, else ``Completed``.
Every defect is a ``ResponseProblem`` whose message the reasoner is shown in the corrective
retry, so it says what was wrong and how to fix it.
"""

from __future__ import annotations

import html
import json
import re
from collections.abc import Callable, Collection, Mapping
from math import isfinite
from typing import Any, Final

from weft.agent.types import AgentAction, AgentResponse, AgentTaskStatusFlags
from weft.agent.xmlish import Element, Scanner, simple_children
from weft.errors import CodecError, ResponseProblem, ValueTypeError
from weft.store import FrozenDict, freeze
from weft.store.codec import parse

__all__ = ["ResponseProblem", "parse_structured_response"]

CONTAINERS: Final = frozenset(
    {"StructuredResponse", "NextActions", "ActionGroup", "Action", "Problems", "Problem"}
)
TEXTS: Final = frozenset(
    {
        "InstantResponse",
        "InstantLearnings",
        "TaskStatus",
        "TaskStatusDescription",
        "TaskStatusDescriptionExtended",
        "ActionType",
        "Type",
        "Target",
        "Args",
        "Arguments",
        "Reasoning",
        "ActionID",
        "Request",
        "ProblemID",
        "ProblemGraph",
    }
)
_SCANNER: Final = Scanner(containers=CONTAINERS, texts=TEXTS, aliases={"Type": "ActionType"})
_NO_ARGS: Final = FrozenDict()
_SCAN_ONCE: Final[Callable[[str, int], tuple[Any, int]]] = json.JSONDecoder().scan_once  # type: ignore[attr-defined]
_BIG: Final = 2**63
_WRAPPER: Final = re.compile(r"<structuredresponse", re.IGNORECASE)
_FENCE: Final = re.compile(r"^```[A-Za-z]*\s*\n(.*?)\n?```\s*$", re.DOTALL)
_STATUSES: Final = ", ".join(flag.value for flag in AgentTaskStatusFlags)
_STATUS_AS_WRITTEN: Final = {flag.value: flag for flag in AgentTaskStatusFlags}


def parse_structured_response(
    text: str, *, action_types: Collection[str] | None = None
) -> tuple[AgentResponse, str | None]:
    """``(response, problem_graph_text)`` of a reply; an action of a type not in
    ``action_types`` (when given) is a ``ResponseProblem``."""
    body = text.strip() if isinstance(text, str) else ""
    if not body:
        raise ResponseProblem(
            "the reply is empty; answer with a <StructuredResponse> element (or a JSON object)"
        )
    if not text.isascii():
        try:
            text.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise ResponseProblem(
                f"the reply holds a lone surrogate ({text[exc.start]!r} at character "
                f"{exc.start}), which is not Unicode text; reply in plain text"
            ) from None
    xml = "<StructuredResponse" in body or _WRAPPER.search(body) is not None
    if not xml and body.startswith("```"):
        fenced = _FENCE.match(body)
        if fenced:
            body = fenced.group(1).strip()
    try:
        if not xml and body.startswith("{"):
            response, graph = _from_json(body)
        else:
            response, graph = _from_xml(body)
    except ValueTypeError as exc:  # an action's arguments weft cannot keep
        raise ResponseProblem(f"the reply holds a value weft cannot store: {exc}") from None
    if action_types is not None:
        _check_types(response, action_types)
    return response, graph


def _from_xml(text: str) -> tuple[AgentResponse, str | None]:
    root = _SCANNER.scan(text)
    top = root.find("StructuredResponse")
    if top is None:
        if not root.children and not root.fields:
            raise ResponseProblem(
                "the reply has no <StructuredResponse> element and is not a JSON object; "
                "answer with <StructuredResponse>...</StructuredResponse> holding "
                "<InstantResponse>, <TaskStatus> and <NextActions>"
            )
        top = root  # the fields without their wrapper: accept them
    groups: list[tuple[AgentAction, ...]] = []
    next_actions = holder = None  # the first of each, found in one pass
    for child in top.children:
        if child.tag == "NextActions":
            if next_actions is None:
                next_actions = child
        elif child.tag == "Problems" and holder is None:
            holder = child
    if next_actions is not None:
        for number, child in enumerate(next_actions.children, start=1):
            if child.tag == "ActionGroup":
                actions: list[AgentAction] = []
                for element in child.children:
                    if element.tag == "Action":
                        actions.append(_xml_action(element, number, len(actions) + 1))
                if not actions:
                    raise ResponseProblem(
                        f"<ActionGroup> {number} of <NextActions> holds no <Action>; put one "
                        "or more <Action> elements in it, or leave the group out"
                    )
                groups.append(tuple(actions))
            elif child.tag == "Action":
                groups.append((_xml_action(child, number, 0),))
    problems: tuple[AgentAction, ...] = ()
    if holder is not None:
        problems = tuple(
            _problem(p.text("Request"), p.text("ProblemID"), f"<Problem> {n}", xml=True)
            for n, p in enumerate(holder.find_all("Problem"), start=1)
        )
    field = _texts(top.fields).get
    response = _response(
        instant_response=field("InstantResponse"),
        instant_learnings=field("InstantLearnings"),
        status=field("TaskStatus"),
        description=field("TaskStatusDescription"),
        extended=field("TaskStatusDescriptionExtended"),
        groups=tuple(groups),
        problems=problems,
        status_name="<TaskStatus>",
    )
    return response, field("ProblemGraph")


def _texts(fields: Mapping[str, str]) -> dict[str, str]:
    """``clean`` of every text an element holds (only those it holds: most are left out)."""
    out = {}
    for name, raw in fields.items():  # a loop, not a comprehension: one call fewer
        out[name] = (html.unescape(raw) if "&" in raw else raw).strip()
    return out


def _where(number: int, index: int) -> str:
    """How a problem names action ``index`` of group ``number`` (0: an ``<Action>`` that is
    item ``number`` of ``<NextActions>`` itself)."""
    if index:
        return f"action {index} of <ActionGroup> {number}"
    return f"<Action> {number} of <NextActions>"


def _xml_action(element: Element, number: int, index: int) -> AgentAction:
    fields = element.fields
    text = _texts(fields).get
    action_type = text("ActionType")  # or <Type>, whichever comes first
    if not action_type:
        raise ResponseProblem(
            f"{_where(number, index)} has no <ActionType>; give every <Action> an "
            "<ActionType> naming what to do"
        )
    args: Mapping[str, Any] = _NO_ARGS
    raw = fields.get("Args")
    if raw is None:
        raw = fields.get("Arguments")
    if raw is not None and (raw := raw.strip()):
        if raw[0] == "{":
            body = html.unescape(raw).strip() if "&" in raw else raw  # raw is stripped
            args = _json_args(body, number, index, action_type)
        else:
            pairs = simple_children(raw)
            if pairs is None:
                raise ResponseProblem(
                    f"the <Args> of {_where(number, index)} ({action_type}) is neither a JSON "
                    "object nor <name>value</name> elements; write it as a JSON object such as "
                    '{"query": "weft"}'
                )
            args = pairs
    return AgentAction(
        type=action_type,
        target=text("Target") or None,
        args=args,
        reasoning=text("Reasoning") or None,
        id=text("ActionID") or None,
    )


def _from_json(text: str) -> tuple[AgentResponse, str | None]:
    data = _json_object(text, "the reply")
    raw_groups = data.get("next_actions") or []
    if not isinstance(raw_groups, list):
        raise ResponseProblem(
            '"next_actions" must be a list of groups, each a list of actions, e.g. '
            '[[{"type": "A"}], [{"type": "B"}, {"type": "C"}]]'
        )
    groups: list[tuple[AgentAction, ...]] = []
    for number, group in enumerate(raw_groups, start=1):
        items = [group] if isinstance(group, Mapping) else group
        if not isinstance(items, list) or not items:
            raise ResponseProblem(
                f'group {number} of "next_actions" is {json.dumps(group)}; a group is a '
                "non-empty list of action objects"
            )
        groups.append(
            tuple(
                _json_action(item, f"action {i} of group {number}")
                for i, item in enumerate(items, start=1)
            )
        )
    raw_problems = data.get("problems") or []
    if not isinstance(raw_problems, list) or not all(isinstance(p, Mapping) for p in raw_problems):
        raise ResponseProblem(
            '"problems" must be a list of objects like {"request": "...", "problem_id": "..."}'
        )
    problems = tuple(
        _problem(_opt_str(p.get("request")), _opt_str(p.get("problem_id")), f"problem {n}")
        for n, p in enumerate(raw_problems, start=1)
    )
    graph = data.get("problem_graph")
    if isinstance(graph, list):
        graph = "\n".join(str(line) for line in graph)
    response = _response(
        instant_response=_opt_str(data.get("instant_response")),
        instant_learnings=_opt_str(data.get("instant_learnings")),
        status=_opt_str(data.get("task_status")),
        description=_opt_str(data.get("task_status_description")),
        extended=_opt_str(data.get("task_status_description_extended")),
        groups=tuple(groups),
        problems=problems,
        status_name='"task_status"',
    )
    return response, None if graph is None else str(graph)


def _json_action(item: Any, where: str) -> AgentAction:
    if not isinstance(item, Mapping):
        raise ResponseProblem(f"{where} is {json.dumps(item)}; an action is a JSON object")
    action_type = item.get("type", item.get("action_type"))
    if not isinstance(action_type, str) or not action_type.strip():
        raise ResponseProblem(f'{where} has no "type"; give every action a "type" string')
    args = item.get("args") or {}
    if not isinstance(args, Mapping):
        raise ResponseProblem(f'the "args" of {where} ({action_type}) must be a JSON object')
    return AgentAction(
        type=action_type.strip(),
        target=_opt_str(item.get("target")),
        args=args,
        reasoning=_opt_str(item.get("reasoning")),
        id=_opt_str(item.get("id")),
    )


def _json_args(text: str, number: int, index: int, action_type: str) -> Mapping[str, Any]:
    """The JSON object of an action's ``<Args>``: a flat object of plain values read at
    once, anything else (or anything wrong) by ``_json_object``."""
    if "\\u" not in text:  # no escapes: no surrogate to look for
        try:
            data, end = _SCAN_ONCE(text, 0)  # the C scanner json.loads runs
        except (StopIteration, ValueError, RecursionError):
            data = end = None
        if end == len(text) and data.__class__ is dict:
            for key, value in data.items():  # what freeze keeps as it is (the reply holds no
                cls = value.__class__  # lone surrogate, so any text is)
                if not (
                    key.isascii()
                    and (
                        cls is str
                        or cls is bool
                        or value is None
                        or (cls is int and -_BIG < value < _BIG)
                        or (cls is float and isfinite(value))
                    )
                ):
                    break
            else:
                return FrozenDict(data)
    return _json_object(text, f"the <Args> of {_where(number, index)} ({action_type})")


def _json_object(text: str, what: str) -> Mapping[str, Any]:
    """The JSON object of ``text``, frozen: what the store would refuse (NaN, nesting past
    ``weft.store.MAX_DEPTH``) is refused here, so the reasoner gets its corrective retry."""
    try:
        data = parse(text, what)
    except CodecError as exc:
        raise ResponseProblem(str(exc)) from None
    if not isinstance(data, dict):
        raise ResponseProblem(f"{what} must be a JSON object, not a {type(data).__name__}")
    try:
        frozen: Mapping[str, Any] = freeze(data, where=what)
    except ValueTypeError as exc:
        raise ResponseProblem(f"{exc}; send plain JSON values, nested less deeply") from None
    return frozen


def _opt_str(value: Any) -> str | None:
    if value is None:
        return None
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def _problem(
    request: str | None, problem_id: str | None, where: str, *, xml: bool = False
) -> AgentAction:
    request_tag, id_tag = ("<Request>", "<ProblemID>") if xml else ('"request"', '"problem_id"')
    if not problem_id:
        raise ResponseProblem(f"{where} has no {id_tag}; give every problem a ProblemID")
    if not re.fullmatch(r"[\w.-]+", problem_id):
        raise ResponseProblem(
            f"{where} has the ProblemID {problem_id!r}; a ProblemID is one word of letters, "
            "digits, '_', '.' or '-' (ORDER_STARBUCKS)"
        )
    if not request:
        raise ResponseProblem(f"{where} ({problem_id}) has no {request_tag}; say what to solve")
    return AgentAction(type="Problem", id=problem_id, target=problem_id, args={"request": request})


def _response(
    *,
    instant_response: str | None,
    instant_learnings: str | None,
    status: str | None,
    description: str | None,
    extended: str | None,
    groups: tuple[tuple[AgentAction, ...], ...],
    problems: tuple[AgentAction, ...],
    status_name: str,
) -> AgentResponse:
    if status:
        flag = _STATUS_AS_WRITTEN.get(status) or AgentTaskStatusFlags.parse(status)
        if flag is None:
            raise ResponseProblem(
                f"{status_name} is {status!r}, which is not one of {_STATUSES}; use one of those"
            )
    else:
        busy = bool(groups or problems)
        flag = AgentTaskStatusFlags.Ongoing if busy else AgentTaskStatusFlags.Completed
    seen: dict[str, int] = {}
    for number, problem in enumerate(problems, start=1):  # none, in an action agent's reply
        assert problem.id is not None
        if problem.id in seen:
            raise ResponseProblem(
                f"the ProblemID {problem.id} is used by problem {seen[problem.id]} and problem "
                f"{number}; give every problem its own ProblemID"
            )
        seen[problem.id] = number
    return AgentResponse(
        instant_response=instant_response or None,
        instant_learnings=instant_learnings or None,
        task_status=flag,
        task_status_description=description or None,
        task_status_description_extended=extended or None,
        next_actions=groups,
        problems=problems,
    )


def _check_types(response: AgentResponse, action_types: Collection[str]) -> None:
    for group in response.next_actions:
        for action in group:
            if action.type not in action_types:
                known = ", ".join(sorted(action_types)) or "(none: this agent has no actors)"
                raise ResponseProblem(
                    f"NextActions names the action type {action.type}, which is not one of "
                    f"the action types: {known}"
                )
