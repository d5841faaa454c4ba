"""Prompt templates: the seed's placeholders (``PLACEHOLDERS``, described in the README's
"Agents" section) and how each is rendered.

A template is ``str.format`` text (a literal brace doubled: ``{{``); a placeholder with
nothing to show renders empty. Any other field, or attribute or index access
(``{user_input.x}``), is an ``AgentBuildError`` when the agent is built.
"""

from __future__ import annotations

import string
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Final

from weft.agent.types import (
    AgentAction,
    AgentAttachment,
    AgentStateItem,
    AgentTaskStatusFlags,
    escape_xml,
    render_value,
)
from weft.errors import AgentBuildError

PLACEHOLDERS: Final = (
    "user_input",
    "conversation",
    "user_profile",
    "context",
    "action_result",
    "action_memory",
    "attachments",
    "current_state",
    "previous_states",
)
_KNOWN: Final = frozenset(PLACEHOLDERS)
_PENDING: Final = AgentTaskStatusFlags.Pending


def template_fields(template: str, *, what: str = "template") -> frozenset[str]:
    """The placeholders ``template`` names, checked; an ``AgentBuildError`` for a bad one."""
    if not isinstance(template, str):
        raise AgentBuildError(f"the {what} must be a string, got a {type(template).__name__}")
    names: set[str] = set()
    try:
        parsed = list(string.Formatter().parse(template))
    except ValueError as exc:
        raise AgentBuildError(
            f"the {what} is not a valid format string ({exc}); placeholders are written "
            "{name}, and a literal brace is doubled: {{ or }}"
        ) from None
    for _literal, name, spec, conversion in parsed:
        if name is None:
            continue
        if name not in _KNOWN:
            if not name:
                problem = "has an empty placeholder {}"
            elif name.split(".")[0].split("[")[0] in _KNOWN:
                problem = f"uses {{{name}}}: attribute or index access is not allowed"
            else:
                problem = f"names the unknown placeholder {{{name}}}"
            raise AgentBuildError(
                f"the {what} {problem}; the placeholders are "
                f"{', '.join('{' + p + '}' for p in PLACEHOLDERS)}. Write a literal brace "
                "as {{ or }}"
            )
        if spec or conversion:
            raise AgentBuildError(
                f"the {what} formats {{{name}}} with a conversion or format spec; placeholders "
                "are plain {name} fields (their values are already text)"
            )
        names.add(name)
    return frozenset(names)


def render(template: str, feed: Mapping[str, str]) -> str:
    """Fill ``template``; every known placeholder missing from ``feed`` renders empty."""
    return template.format_map(defaultdict(str, feed))


def basic_prompt(user_input: Any, action_results: Any, attachments: Sequence[Any]) -> str:
    """The input, the results (``<ActionResults>``) and the attachments, each left out when
    empty: ``Agent``'s prompt."""
    if action_results is None and not attachments:  # the first iteration's: the input alone
        return "" if user_input is None else render_value(user_input)
    parts = [value_string(user_input)]
    if action_results is not None:
        parts.append(action_results_xml(action_results))
    if attachments:
        parts.append(attachments_string(attachments))
    return "\n\n".join(part for part in parts if part)


def action_results_xml(action_results: Any) -> str:
    """``<ActionResults>`` XML of action results (pattern 1), as the seed renders them."""
    items = action_results if isinstance(action_results, (list, tuple)) else (action_results,)
    lines = ["<ActionResults>"]
    for item in items:
        lines.append("  <Action>")
        if isinstance(item, AgentAction):
            lines.append(f"    <ActionType>{escape_xml(item.type)}</ActionType>")
            if item.id is not None:
                lines.append(f"    <ActionID>{escape_xml(item.id)}</ActionID>")
            value = item.result if item.executed else None
        else:
            value = item
        lines.append(f"    <ActionResult>{escape_xml(render_value(value))}</ActionResult>")
        lines.append("  </Action>")
    lines.append("</ActionResults>")
    return "\n".join(lines)


def action_memory_string(action_results: Any) -> str | None:
    """``action_memory.memory`` of the results (pattern 6; of a list's items, one per line)."""
    if isinstance(action_results, (list, tuple)):
        found = [m for m in map(action_memory_string, action_results) if m]
        return "\n".join(found) if found else None
    if isinstance(action_results, AgentAction):
        action_results = action_results.result
    if not isinstance(action_results, Mapping):
        return None
    memory = action_results.get("action_memory")
    memory = memory.get("memory") if isinstance(memory, Mapping) else None
    return None if memory is None or memory == "" else render_value(memory)


def conversation_string(
    states: Iterable[AgentStateItem],
    user_input: Any,
    *,
    user_prefix: str = "User: ",
    agent_prefix: str = "Agent: ",
) -> str:
    """The conversation so far (pattern 5), then the current input."""
    lines: list[str] = []
    for state in states:
        for item in _inputs(state.user_input):
            lines.append(user_prefix + render_value(item))
        reply = state.response.instant_response
        if reply:
            lines.append(agent_prefix + reply)
    for item in _inputs(user_input):
        lines.append(user_prefix + render_value(item))
    return "\n".join(lines)


def _inputs(user_input: Any) -> Sequence[Any]:
    if user_input is None or user_input == "":
        return ()
    if isinstance(user_input, (list, tuple)):
        return [item for item in user_input if item is not None and item != ""]
    return (user_input,)


def state_strings(states: Sequence[AgentStateItem]) -> tuple[str, str]:
    """``(current_state, previous_states)``: the latest non-Pending state's (extended)
    description, and the earlier ones', oldest first, one per line."""
    current = ""
    previous: list[str] = []
    for state in reversed(states):
        if state.task_status is _PENDING:
            continue
        if not current:
            current = state.task_status_description_extended or state.task_status_description or ""
            if current:
                continue
        if state.task_status_description:
            previous.append(state.task_status_description)
    previous.reverse()
    return current, "\n".join(previous)


def attachments_string(attachments: Iterable[AgentAttachment]) -> str:
    return "\n".join(str(attachment) for attachment in attachments)


def value_string(value: Any) -> str:
    """A profile or context value as prompt text (empty for None)."""
    return "" if value is None else render_value(value)
