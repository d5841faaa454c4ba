"""The three LLM tools over AgentMemory: ``memory_list``, ``memory_read``, ``memory_write``.

A tool takes the model's raw arguments (a dict, or the JSON text a provider
hands over), checks them against its JSON Schema, and returns a JSON-ready
dict. It never raises into the agent loop: bad arguments and internal
failures come back as ``{"ok": false, "error": ...}`` that a model can read
and act on. ``memory_write`` can only ever write under ``shared:``.
"""

from __future__ import annotations

import copy
import heapq
import json
import logging
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from operator import attrgetter
from typing import Any, Final, NamedTuple

from weft.errors import AgentMemoryError, MemoryKeyError, ToolArgumentsError, WeftError
from weft.memory.agent_memory import AgentMemory, MemoryEntry, memory_keys, to_plain_json
from weft.memory.prompts import (
    DEFAULT_MAX_VALUE_BYTES,
    FIX_HINTS,
    LIST_DESCRIPTION,
    LIST_PARAMETERS,
    MAX_LIST_ENTRIES,
    READ_DESCRIPTION,
    READ_PARAMETERS,
    WRITE_JSON_PARAMETERS,
    WRITE_PARAMETERS,
    write_tool_description,
)
from weft.store import Entry, value_bytes

logger: Final = logging.getLogger("weft.memory.tools")

RESERVED_NAMESPACES: Final = frozenset(
    {"input", "state", "step", "task", "shared", "task_result", "step_result"}
)

ToolResult = dict[str, Any]
Handler = Callable[[dict[str, Any], str | None], ToolResult]


class MemoryTool:
    """One LLM tool: its name, description and JSON Schema, and the call that runs it.

    ``strict=True`` offers the schema in OpenAI's strict form (``strict_parameters``),
    where an optional argument the model leaves out comes as ``null``.
    """

    __slots__ = ("_description", "_handler", "_name", "_parameters", "_strict", "_strict_form")

    def __init__(
        self,
        *,
        name: str,
        description: str,
        parameters: Mapping[str, Any],
        handler: Handler,
        strict: bool = False,
    ) -> None:
        from weft.calls.schema import check_tool_name  # weft.calls loads late
        from weft.calls.strict import strict_schema

        self._name = check_tool_name(name)
        self._description = description
        self._parameters = parameters
        self._handler = handler
        self._strict = strict
        self._strict_form = strict_schema(parameters) if strict else None

    @property
    def name(self) -> str:
        return self._name

    @property
    def description(self) -> str:
        """Written for the model: when to call the tool and what comes back."""
        return self._description

    @property
    def parameters(self) -> dict[str, Any]:
        """The JSON Schema of the arguments (a copy: changing it changes nothing)."""
        return copy.deepcopy(dict(self._parameters))

    @property
    def strict(self) -> bool:
        """Whether the tool is offered in OpenAI's strict form."""
        return self._strict

    @property
    def strict_parameters(self) -> dict[str, Any] | None:
        """The strict form of ``parameters`` when ``strict``, else None (a copy)."""
        return copy.deepcopy(self._strict_form)

    def openai(self) -> dict[str, Any]:
        """The OpenAI Chat Completions tool definition."""
        from weft.calls.schema import openai_tool

        offered = self._strict_form or self._parameters
        return openai_tool(self._name, self._description, offered, strict=self._strict)

    def anthropic(self) -> dict[str, Any]:
        """The Anthropic Messages tool definition."""
        from weft.calls.schema import anthropic_tool

        return anthropic_tool(self._name, self._description, self._strict_form or self._parameters)

    def __call__(
        self, arguments: Mapping[str, Any] | str | None, *, source: str | None = None
    ) -> ToolResult:
        """Run the tool on the model's arguments (dict or JSON text); never raises."""
        from weft.calls.schema import check_arguments

        try:
            parsed = _parse_arguments(arguments)
            if isinstance(parsed, str):
                return _error(f"{self._name}: {parsed}")
            try:
                checked = check_arguments(
                    self._name, self._parameters, parsed, strict=self._strict, hints=FIX_HINTS
                )
            except ToolArgumentsError as exc:
                return _error(str(exc))
            return self._handler(checked, source)
        except Exception as exc:
            logger.exception("memory tool %s failed on arguments %.300r", self._name, arguments)
            return _error(
                f"{self._name} failed inside weft ({type(exc).__name__}); the arguments were "
                "accepted, so retrying the same call will not help: continue without it"
            )

    def __repr__(self) -> str:
        return f"<MemoryTool {self._name}>"


class MemoryTools(NamedTuple):
    """The three memory tools, unpackable (``list_, read, write = memory_tools(m)``)."""

    memory_list: MemoryTool
    memory_read: MemoryTool
    memory_write: MemoryTool

    def openai(self) -> list[dict[str, Any]]:
        """Every tool's OpenAI definition, for the ``tools`` parameter."""
        return [tool.openai() for tool in self]

    def anthropic(self) -> list[dict[str, Any]]:
        """Every tool's Anthropic definition, for the ``tools`` parameter."""
        return [tool.anthropic() for tool in self]

    def call(
        self, name: str, arguments: Mapping[str, Any] | str | None, *, source: str | None = None
    ) -> ToolResult:
        """Run the tool a model named; an unknown name is an error result too."""
        for tool in self:
            if tool.name == name:
                return tool(arguments, source=source)
        names = ", ".join(tool.name for tool in self)
        return _error(f"there is no memory tool named {name!r}; the memory tools are {names}")


def memory_tools(
    memory: AgentMemory,
    *,
    source: str | None = None,
    max_value_bytes: int = DEFAULT_MAX_VALUE_BYTES,
    strict: bool = False,
) -> MemoryTools:
    """The tools ``memory_list``, ``memory_read`` and ``memory_write`` over ``memory``.

    ``source`` is who ``memory_write`` records as the writer (a call's own
    ``source=`` wins); ``max_value_bytes`` caps a written value's JSON size.
    ``strict=True`` offers them in OpenAI's strict form; there ``memory_write`` takes its
    value as JSON text (``value_json``), since strict mode cannot say "any JSON value".
    """
    if (
        not isinstance(max_value_bytes, int)
        or isinstance(max_value_bytes, bool)
        or (max_value_bytes < 1)
    ):
        raise AgentMemoryError(
            f"max_value_bytes={max_value_bytes!r}: expected a whole number of bytes, at least "
            f"1 (the default is {DEFAULT_MAX_VALUE_BYTES})"
        )

    def write(args: dict[str, Any], call: str | None) -> ToolResult:
        if "value_json" in args:
            try:
                value = json.loads(args["value_json"], parse_constant=_reject_constant)
            except (ValueError, RecursionError) as exc:
                return _error(
                    f"memory_write: value_json is not JSON text ({exc}); nothing was written. "
                    'Send the value as JSON, e.g. "{\\"a\\": 1}" or "\\"some text\\""'
                )
            args = {**args, "value": value}
        return _write(memory, args, call or source, max_value_bytes)

    def tool(
        name: str, description: str, parameters: Mapping[str, Any], run: Handler
    ) -> MemoryTool:
        return MemoryTool(
            name=name, description=description, parameters=parameters, handler=run, strict=strict
        )

    return MemoryTools(
        tool("memory_list", LIST_DESCRIPTION, LIST_PARAMETERS, lambda args, _: _list(memory, args)),
        tool("memory_read", READ_DESCRIPTION, READ_PARAMETERS, lambda args, _: _read(memory, args)),
        tool(
            "memory_write",
            write_tool_description(max_value_bytes),
            WRITE_JSON_PARAMETERS if strict else WRITE_PARAMETERS,
            write,
        ),
    )


def _list(memory: AgentMemory, args: dict[str, Any]) -> ToolResult:
    found = memory._select(
        kind=args.get("kind"), key_prefix=args.get("key_prefix"), sources=args.get("sources")
    )
    newest = heapq.nlargest(MAX_LIST_ENTRIES, found, key=attrgetter("seq"))
    entries = [_listing(entry) for entry in newest]
    result: ToolResult = {
        "ok": True,
        "total": len(found),
        "returned": len(entries),
        "truncated": len(found) > len(entries),
        "entries": entries,
    }
    if not found and args:
        result["note"] = "nothing matches these filters; call memory_list without arguments"
    return result


def _read(memory: AgentMemory, args: dict[str, Any]) -> ToolResult:
    entries: dict[str, Any] = {}
    missing: list[str] = []
    malformed: list[str] = []
    resolved: dict[str, str] = {}
    for key in dict.fromkeys(args["keys"]):
        try:
            entry = memory.get(key)
        except MemoryKeyError:  # a bare name: what memory_write stored it as, if anything
            entry = memory.get(f"shared:{key}") if key else None
            if entry is None:
                malformed.append(key)
            else:
                resolved[key] = entry.key
        if entry is None:
            missing.append(key)
        else:
            entries[entry.key] = {**_metadata(entry), "value": to_plain_json(entry.value)}
    result: ToolResult = {"ok": True, "entries": entries, "missing": missing}
    if resolved:
        result["resolved_keys"] = resolved
    if malformed:
        result["note"] = (
            f"not memory keys: {', '.join(malformed)}; a key starts with task:, step:, "
            "input: or shared:, exactly as memory_list shows it"
        )
    return result


def _write(
    memory: AgentMemory, args: dict[str, Any], source: str | None, max_value_bytes: int
) -> ToolResult:
    raw: str = args["key"]
    name = raw.removeprefix("shared:")
    head, colon, _ = name.partition(":")
    if colon and head.strip().lower() in RESERVED_NAMESPACES:
        return _error(
            f"memory_write: key {raw!r} names the {head.strip()}: namespace, which this tool "
            "cannot write (task:, step:, input: and state: entries are written by the system "
            "only); nothing was written. Publish under a plain name instead, e.g. "
            f"{{'key': 'my_{head.strip().lower()}_note'}}, which is stored as shared:<key>"
        )
    if not name.strip():
        return _error(
            f"memory_write: key {raw!r} has no name after shared:; give e.g. 'top_source'"
        )
    value = args["value"]
    try:
        size = value_bytes(value)
    except (WeftError, ValueError, TypeError, RecursionError) as exc:
        return _error(f"memory_write: value is not plain JSON ({exc}); nothing was written")
    if size > max_value_bytes:
        return _error(
            f"memory_write: value for {raw!r} is {size} bytes of JSON, over the limit of "
            f"{max_value_bytes}; nothing was written. Store a summary or split it into "
            "several keys"
        )
    entry = memory.set(
        memory_keys.shared(name),
        value,
        source=source,
        title=args.get("title"),
        description=args.get("description"),
    )
    written = _metadata(entry)
    return {"ok": True, **{k: written[k] for k in ("key", "kind", "created_at", "updated_at")}}


def iso_time(moment: datetime) -> str:
    """ISO 8601 in UTC with milliseconds and ``Z``: ``2026-05-07T14:00:01.234Z``."""
    return moment.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _metadata(entry: MemoryEntry, **after_source: Any) -> dict[str, Any]:
    return {
        "key": entry.key,
        "kind": entry.kind,
        "title": entry.title,
        "description": entry.description,
        "source": entry.source,
        **after_source,
        "created_at": iso_time(entry.created_at),
        "updated_at": iso_time(entry.updated_at),
    }


def _listing(stored: Entry) -> dict[str, Any]:
    entry = MemoryEntry.from_store(stored)
    try:
        size = value_bytes(entry.value)
    except WeftError:  # a type registered only in a store's own registry
        size = len(json.dumps(to_plain_json(entry.value), ensure_ascii=False).encode("utf-8"))
    return _metadata(entry, value_bytes=size)


def _error(message: str) -> ToolResult:
    return {"ok": False, "error": message}


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON; send null or a string instead")


def _parse_arguments(arguments: Mapping[str, Any] | str | None) -> dict[str, Any] | str:
    """The arguments as a dict, or a message saying why they are not a JSON object."""
    if arguments is None:
        return {}
    if isinstance(arguments, str):
        if not arguments.strip():  # some providers send "" for a call without arguments
            return {}
        try:
            data = json.loads(arguments, parse_constant=_reject_constant)
        except RecursionError:
            return "the arguments are nested too deeply to read; send a flatter JSON object"
        except ValueError as exc:
            return (
                f"the arguments are not valid JSON ({exc}); send one JSON object, "
                'e.g. {"keys": ["task:research"]}'
            )
        if not isinstance(data, dict):
            return (
                f"the arguments must be a JSON object of named fields, got a JSON "
                f"{_json_type(data)}; wrap them in {{...}}"
            )
        return data
    if isinstance(arguments, Mapping):
        return dict(arguments)
    return f"the arguments must be a JSON object or its text, got a {type(arguments).__name__}"


def _json_type(data: Any) -> str:
    return {list: "array", str: "string", bool: "boolean", type(None): "null"}.get(
        type(data), "number"
    )
