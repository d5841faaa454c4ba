"""weft's tools as OpenAI Agents SDK tools (``pip install 'weft[integrations]'``):
``tools(memory)`` gives an ``AgentMemory``'s memory tools, or ``weft.calls.Tool`` s, as
``agents.FunctionTool`` s with weft's descriptions and JSON Schemas.

The SDK hands a tool the model's arguments as JSON text; weft parses and checks them. What it
refuses, or a weft tool's exception (``"<tool> failed: <error>"``, as the SDK's own function
tools answer), comes back as the tool's output ``{"ok": false, "error": ...}``: the SDK's way
of telling the model without failing the run. Nothing is written then.

A write of the memory tools made from an ``AgentMemory`` is recorded under ``source`` when
given, else ``openai-agents:<agent name>`` (the agent that called the tool), else
``openai-agents``; memory tools built by the caller keep their own source unless ``source``
is given.
"""

from __future__ import annotations

import logging
from typing import Any, Final

from weft.integrations._tools import (
    Outcome,
    PortableTool,
    ToolSource,
    agent_source,
    not_installed,
    portable_tools,
)

try:
    from agents import FunctionTool
    from agents.tool_context import ToolContext
except ImportError as error:
    raise not_installed("OpenAI Agents SDK", "openai-agents", error) from error

logger: Final = logging.getLogger("weft.integrations")

SOURCE = "openai-agents"
"""Who ``memory_write`` records as the writer when neither ``source`` nor an agent name is
known."""


def tools(tools: ToolSource, *, source: str | None = None) -> list[FunctionTool]:
    """Function tools for ``Agent(tools=...)``: an ``AgentMemory``'s three memory tools, or
    weft tools (see the module docstring for who a write is recorded as).

    >>> from weft.memory import AgentMemory
    >>> [tool.name for tool in tools(AgentMemory())]
    ['memory_list', 'memory_read', 'memory_write']
    """
    return [_tool(each) for each in portable_tools(tools, source=source, default_source=SOURCE)]


def _tool(each: PortableTool) -> FunctionTool:
    async def invoke(context: ToolContext[Any], arguments: str) -> str:
        try:
            outcome = await each.acall(arguments, source=agent_source(SOURCE, context))
        except Exception as exc:  # as the SDK's own function tools do: the model is told
            logger.info("tool %s raised %s: %s", each.name, type(exc).__name__, exc)
            failed = f"{each.name} failed: {type(exc).__name__}: {exc}"
            return Outcome(ok=False, error=failed).text()
        return outcome.text()

    return FunctionTool(
        name=each.name,
        description=each.description,
        params_json_schema=each.parameters,
        on_invoke_tool=invoke,
        # weft's schemas have optional fields, which strict mode cannot express; weft checks
        # the arguments itself
        strict_json_schema=False,
    )
