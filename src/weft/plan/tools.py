"""The tools an executor offers a model, and how a model's tool calls are answered.

A call never raises into the loop: unknown tools, arguments the schema refuses and tools
that raise all come back as ``{"ok": false, "error": ...}`` saying what to do instead.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any, Final

from weft.calls import Tool
from weft.calls.schema import check_arguments
from weft.calls.watch import acall_tool
from weft.errors import ExecutorError, ToolArgumentsError
from weft.graph.offload import RemoteCall, current_executor
from weft.llm import ToolCall
from weft.memory import AgentMemory, memory_tools
from weft.memory.agent_memory import to_plain_json

logger: Final = logging.getLogger("weft.plan")

Handler = Callable[[dict[str, Any]], Any]


@dataclass(frozen=True, slots=True, kw_only=True)
class LocalTool:
    """An executor's own tool: ``handler(arguments)`` returns the JSON result (or an
    awaitable of it); it may raise ``ExecutorError`` to refuse with a message."""

    name: str
    description: str
    parameters: Mapping[str, Any] = field(default_factory=lambda: {"type": "object"})
    handler: Handler


def error(message: str) -> dict[str, Any]:
    return {"ok": False, "error": message}


class ToolBox:
    """Memory tools, caller tools and local tools, as one model sees them."""

    __slots__ = ("_caller", "_local", "_memory", "source")

    def __init__(
        self,
        memory: AgentMemory,
        *,
        source: str,
        tools: Iterable[Tool] = (),
        allowed: Sequence[str] | None = None,
        local: Iterable[LocalTool] = (),
    ) -> None:
        self.source = source
        self._memory = memory_tools(memory, source=source)
        caller = {tool.name: tool for tool in tools}
        if allowed is not None:
            if unknown := [name for name in allowed if name not in caller]:
                raise ExecutorError(
                    f"{source}: it may use the tools {', '.join(unknown)}, which the executor "
                    f"was not given (it has: {', '.join(caller) or 'none'}); pass them in tools="
                )
            caller = {name: caller[name] for name in allowed}
        self._caller = caller
        self._local = {tool.name: tool for tool in local}
        reserved = {t.name for t in self._memory} | set(self._local)
        if clash := sorted(reserved & set(caller)):
            raise ExecutorError(
                f"{source}: the caller tools {', '.join(clash)} have the names of built-in "
                "tools (memory_list, memory_read, memory_write, finish_step, the team tools); "
                "rename them"
            )

    def specs(self, *, only: Collection[str] | None = None) -> list[Any]:
        """The tool definitions to offer (all, or just the names in ``only``)."""
        every: list[Any] = [*self._memory, *self._caller.values(), *self._local.values()]
        return every if only is None else [tool for tool in every if tool.name in only]

    def is_caller(self, name: str) -> bool:
        """Whether ``name`` is one of the caller's tools (not a memory or local tool)."""
        return name in self._caller

    async def call(self, call: ToolCall) -> dict[str, Any]:
        """The JSON result of one tool call."""
        if call.parse_error is not None:
            return error(f"{call.parse_error}; send the arguments as one JSON object")
        local = self._local.get(call.name)
        if local is not None:
            try:
                arguments = check_arguments(local.name, local.parameters, call.arguments)
            except ToolArgumentsError as exc:
                return error(str(exc))
            try:
                result = local.handler(arguments)
                if inspect.isawaitable(result):
                    result = await result
            except ExecutorError as exc:
                return error(str(exc))
            return result if isinstance(result, dict) else {"ok": True, "result": result}
        for tool in self._memory:
            if tool.name == call.name:
                return tool(dict(call.arguments), source=self.source)
        caller = self._caller.get(call.name)
        if caller is not None:
            return await _call_tool(caller, call)
        names = ", ".join(t.name for t in self.specs())
        return error(f"there is no tool named {call.name!r}; the tools are: {names}")


async def _call_tool(tool: Tool, call: ToolCall) -> dict[str, Any]:
    try:  # the one argument check of a tool: its schema, then its types
        arguments = tool.check_arguments(call.arguments)
    except ToolArgumentsError as exc:  # refused before the function ran
        return error(str(exc))
    if tool.fn is None:
        return error(f"{tool.name} has no function to run; it cannot be called")
    try:
        executor = current_executor()
        if executor is not None:  # ``offload_to``: the call runs there
            remote = RemoteCall(call.name, tool.fn, (), arguments)
            result = await acall_tool(tool.name, call.id, executor.call, remote)
        else:
            result = await acall_tool(tool.name, call.id, partial(tool.fn, **arguments))
    except Exception as exc:
        logger.info("tool %s raised %s: %s", tool.name, type(exc).__name__, exc)
        return error(f"{tool.name} failed: {type(exc).__name__}: {exc}")
    return {"ok": True, "result": to_plain_json(result)}
