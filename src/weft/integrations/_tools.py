"""What every framework adapter shares: weft's tools as one neutral shape, called through
weft's own checks.

``portable_tools(...)`` turns an ``AgentMemory`` (its three memory tools), a
``MemoryTools``, a ``MemoryTool``, a ``weft.calls.Tool``, or a list of these, into
``PortableTool`` s: a name, a description, the JSON Schema the model is offered, and a call
that checks the model's arguments against that schema before anything runs. A call answers
with an ``Outcome``: the JSON result, or the message that tells the model what was wrong.
Each adapter turns a failed outcome into its framework's way of handing an error back to
the model (pydantic-ai's ``ModelRetry``, an error string for the OpenAI Agents SDK,
LangChain's ``ToolException``).
"""

from __future__ import annotations

import asyncio
import inspect
import json
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, TypeAlias

from weft._sync import run_sync
from weft.calls import Tool
from weft.errors import IntegrationError, ToolArgumentsError
from weft.memory import AgentMemory, MemoryTool, MemoryTools, memory_tools
from weft.memory.agent_memory import to_plain_json

ToolSource: TypeAlias = (
    "AgentMemory | MemoryTools | MemoryTool | Tool | Iterable[AgentMemory | MemoryTool | Tool]"
)
"""What the adapters take: an AgentMemory (its three memory tools), weft tools, or a list."""


def not_installed(framework: str, package: str, error: ImportError) -> IntegrationError:
    """The error for an adapter whose framework cannot be imported: which extra installs it."""
    return IntegrationError(
        f"weft's {framework} adapter needs the {package} package, which cannot be imported "
        f"({error}); install it with pip install 'weft[integrations]' (or pip install "
        f"{package})"
    )


def agent_source(default: str, context: object) -> str | None:
    """``<default>:<agent name>`` when the framework's ``context`` names an agent, else None."""
    name = getattr(getattr(context, "agent", None), "name", None)
    return f"{default}:{name}" if isinstance(name, str) and name else None


@dataclass(frozen=True, slots=True)
class Outcome:
    """A tool call's answer: ``result`` (JSON) when ``ok``, else ``error`` for the model."""

    ok: bool
    result: Any = None
    error: str = ""

    def text(self) -> str:
        """The answer as the JSON text a model reads (``{"ok": false, "error": ...}``)."""
        shown = self.result if self.ok else {"ok": False, "error": self.error}
        return json.dumps(shown, ensure_ascii=False)


@dataclass(frozen=True, slots=True, kw_only=True)
class PortableTool:
    """One weft tool as every framework needs it (see the module docstring)."""

    name: str
    description: str
    parameters: dict[str, Any]
    run: Callable[[dict[str, Any], str | None], Awaitable[Outcome]]

    async def acall(self, arguments: Any, *, source: str | None = None) -> Outcome:
        """Check ``arguments`` (a dict, the JSON text of one, or None) and run the tool."""
        parsed = _arguments(self.name, arguments)
        if isinstance(parsed, str):
            return Outcome(ok=False, error=parsed)
        return await self.run(parsed, source)

    def call(self, arguments: Any, *, source: str | None = None) -> Outcome:
        """``acall`` from synchronous code."""
        return run_sync(self.acall(arguments, source=source))


def portable_tools(
    tools: ToolSource, *, source: str | None, default_source: str
) -> list[PortableTool]:
    """``tools`` as ``PortableTool`` s; the names must be unique.

    Writes of the memory tools built here from an ``AgentMemory`` are recorded under
    ``source`` (``default_source`` when None). Memory tools built by the caller keep the
    source they were built with unless ``source`` is given.
    """
    found: list[PortableTool] = []
    if isinstance(tools, AgentMemory):
        found = _built(tools, source, default_source)
    elif isinstance(tools, MemoryTool | Tool):
        found = [_one(tools, source)]
    elif isinstance(tools, str | bytes | Mapping) or not isinstance(tools, Iterable):
        raise IntegrationError(
            f"tools={tools!r:.80}: expected an AgentMemory, a weft.calls.Tool, a MemoryTool "
            "or a list of them"
        )
    else:
        for item in tools:
            if isinstance(item, AgentMemory):
                found += _built(item, source, default_source)
            else:
                found.append(_one(item, source))
    seen: set[str] = set()
    for each in found:
        if each.name in seen:
            raise IntegrationError(
                f"two tools are named {each.name!r}; a model calls tools by name, so give "
                "each tool once"
            )
        seen.add(each.name)
    return found


def _built(memory: AgentMemory, source: str | None, default: str) -> list[PortableTool]:
    """The memory tools of ``memory``, writing as ``source``; without one, as the call says
    (the agent calling), else as ``default``."""
    built = memory_tools(memory, source=source or default)
    return [_memory(t, source, per_call=source is None) for t in built]


def _one(item: object, source: str | None) -> PortableTool:
    if isinstance(item, MemoryTool):
        return _memory(item, source, per_call=False)
    if isinstance(item, Tool):
        return _weft_tool(item)
    raise IntegrationError(
        f"{item!r:.80} is not a weft tool; give a weft.calls.Tool, a MemoryTool (from "
        "weft.memory.memory_tools) or an AgentMemory"
    )


def _memory(tool: MemoryTool, source: str | None, *, per_call: bool) -> PortableTool:
    async def run(arguments: dict[str, Any], call_source: str | None) -> Outcome:
        # the memory tool checks its arguments itself and never raises
        result = tool(arguments, source=source or (call_source if per_call else None))
        if result.get("ok") is False:
            return Outcome(ok=False, error=str(result.get("error", "")))
        return Outcome(ok=True, result=result)

    return PortableTool(
        name=tool.name, description=tool.description, parameters=tool.parameters, run=run
    )


def _weft_tool(tool: Tool) -> PortableTool:
    fn = tool.fn
    if fn is None:
        raise IntegrationError(
            f"tool {tool.name!r} has no function (fn=None), so no framework can call it; "
            "give it one: Tool(name=..., fn=...)"
        )
    if tool.isolated:
        raise IntegrationError(
            f"tool {tool.name!r} is isolated: it runs in a clean room of a weft plan "
            "(store=...) and cannot be called on its own; offer a tool that is not isolated"
        )
    schema = tool.arguments_schema
    in_thread = tool.blocking and not inspect.iscoroutinefunction(fn)

    async def run(arguments: dict[str, Any], _source: str | None) -> Outcome:
        try:  # the one argument check of a weft tool: its schema, then its types
            kwargs = tool.check_arguments(arguments)
        except ToolArgumentsError as exc:
            return Outcome(ok=False, error=f"{exc}; call it again with arguments that do")
        result = await asyncio.to_thread(fn, **kwargs) if in_thread else fn(**kwargs)
        if inspect.isawaitable(result):
            result = await result
        return Outcome(ok=True, result=to_plain_json(result))

    parameters = json.loads(json.dumps(dict(schema)))  # a plain copy the framework may change
    return PortableTool(
        name=tool.name,
        description=tool.description or f"the tool {tool.name}",
        parameters=parameters,
        run=run,
    )


def _arguments(name: str, arguments: Any) -> dict[str, Any] | str:
    """The arguments as a dict, or what the model must fix (a message naming the tool)."""
    if arguments is None:
        return {}
    if isinstance(arguments, str):
        if not arguments.strip():
            return {}
        try:
            arguments = json.loads(arguments)
        except RecursionError:
            return f"{name}: the arguments are nested too deeply to read; send a flatter object"
        except ValueError as exc:
            return f"{name}: the arguments are not one JSON object ({exc}); send one, e.g. {{}}"
    if not isinstance(arguments, Mapping) or not all(isinstance(k, str) for k in arguments):
        return (
            f"{name}: the arguments must be a JSON object of named fields, got "
            f"{type(arguments).__name__}; wrap them in {{...}}"
        )
    return dict(arguments)
