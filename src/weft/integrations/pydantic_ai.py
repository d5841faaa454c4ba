"""weft's tools as pydantic-ai tools (``pip install 'weft[integrations]'``): ``tools(memory)``
gives an ``AgentMemory``'s memory tools, or ``weft.calls.Tool`` s, as ``pydantic_ai.Tool`` s
with weft's descriptions and JSON Schemas. What weft refuses (arguments the schema refuses, a
write under ``task:``, a value too large) raises ``ModelRetry`` with weft's message, so the
model is told what to fix and nothing is written.

A write of the memory tools made from an ``AgentMemory`` is recorded under ``source`` when
given, else ``pydantic-ai:<agent name>`` (the agent that called the tool, when it has a
name), else ``pydantic-ai``; memory tools built by the caller keep their own source unless
``source`` is given.
"""

from __future__ import annotations

from typing import Any

from weft.integrations._tools import (
    PortableTool,
    ToolSource,
    agent_source,
    not_installed,
    portable_tools,
)

try:
    from pydantic_ai import ModelRetry, RunContext
    from pydantic_ai import Tool as PydanticAITool
except ImportError as error:
    raise not_installed("pydantic-ai", "pydantic-ai-slim", error) from error

SOURCE = "pydantic-ai"
"""Who ``memory_write`` records as the writer when neither ``source`` nor an agent name is
known."""


def tools(tools: ToolSource, *, source: str | None = None) -> list[PydanticAITool[Any]]:
    """pydantic-ai tools for ``Agent(tools=...)``: an ``AgentMemory``'s three memory tools,
    or weft tools (see the module docstring for who a write is recorded as).

    >>> from weft.memory import AgentMemory
    >>> [tool.name for tool in tools(AgentMemory())]
    ['memory_list', 'memory_read', 'memory_write']
    """
    return [_tool(each) for each in portable_tools(tools, source=source, default_source=SOURCE)]


def _tool(each: PortableTool) -> PydanticAITool[Any]:
    async def call(context: RunContext[Any], **arguments: Any) -> Any:
        outcome = await each.acall(arguments, source=agent_source(SOURCE, context))
        if not outcome.ok:
            raise ModelRetry(outcome.error)
        return outcome.result

    call.__name__ = each.name
    return PydanticAITool.from_schema(
        call,
        name=each.name,
        description=each.description,
        json_schema=each.parameters,
        takes_ctx=True,
    )
