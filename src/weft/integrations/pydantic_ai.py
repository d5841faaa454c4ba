"""weft's tools as pydantic-ai tools (``pip install 'weft[integrations]'``).

``tools(memory)`` gives the memory tools of an ``AgentMemory`` (``memory_list``,
``memory_read``, ``memory_write``) as ``pydantic_ai.Tool`` s, with weft's descriptions and
JSON Schemas; ``weft.calls.Tool`` s convert the same way. Every call is checked by weft
first: arguments the schema refuses, or a write the memory tools refuse (a key under
``task:``, a value too large), raise ``ModelRetry`` with weft's message, so the model is
told what to fix and nothing is written.
"""

from __future__ import annotations

from typing import Any

from weft.integrations._tools import PortableTool, ToolSource, not_installed, portable_tools

try:
    from pydantic_ai import ModelRetry
    from pydantic_ai import Tool as PydanticAITool
except ImportError as error:  # pragma: no cover - the test imports it with the package hidden
    raise not_installed("pydantic-ai", "pydantic-ai-slim", error) from error

SOURCE = "pydantic-ai"
"""Who ``memory_write`` records as the writer when ``tools`` is given no ``source``."""


def tools(tools: ToolSource, *, source: str | None = None) -> list[PydanticAITool[Any]]:
    """pydantic-ai tools for ``Agent(tools=...)``: an ``AgentMemory``'s three memory tools
    (writes recorded under ``source``, default ``"pydantic-ai"``), or weft tools.

    >>> from weft.memory import AgentMemory
    >>> [tool.name for tool in tools(AgentMemory())]
    ['memory_list', 'memory_read', 'memory_write']
    """
    return [_tool(each) for each in portable_tools(tools, source=source, default_source=SOURCE)]


def _tool(each: PortableTool) -> PydanticAITool[Any]:
    async def call(**arguments: Any) -> Any:
        outcome = await each.acall(arguments)
        if not outcome.ok:
            raise ModelRetry(outcome.error)
        return outcome.result

    call.__name__ = each.name
    return PydanticAITool.from_schema(
        call, name=each.name, description=each.description, json_schema=each.parameters
    )
