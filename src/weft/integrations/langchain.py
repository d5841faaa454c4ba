"""weft's tools as LangChain tools (``pip install 'weft[integrations]'``): ``tools(memory)``
gives an ``AgentMemory``'s memory tools, or ``weft.calls.Tool`` s, as ``BaseTool`` s with
weft's descriptions and JSON Schemas (``args_schema``), for ``tool.invoke(...)``, a chat
model's ``bind_tools``, LangGraph's ``ToolNode`` and ``create_react_agent``.

weft checks every call's arguments first. What it refuses raises LangChain's
``ToolException`` with weft's message, handled as with ``handle_tool_error=True``: the model
gets a ``ToolMessage`` with ``status="error"`` saying what to fix, and nothing is written.
"""

from __future__ import annotations

from typing import Any

from pydantic import PrivateAttr

from weft.integrations._tools import (
    Outcome,
    PortableTool,
    ToolSource,
    not_installed,
    portable_tools,
)

try:
    from langchain_core.tools import BaseTool, ToolException
except ImportError as error:
    raise not_installed("LangChain", "langchain-core", error) from error

SOURCE = "langchain"
"""Who ``memory_write`` records as the writer when ``tools`` is given no ``source``."""


class WeftTool(BaseTool):
    """A weft tool as a LangChain tool (made by ``tools``); arguments arrive as keywords
    and are checked by weft before the tool runs."""

    handle_tool_error: bool = True
    _weft: PortableTool = PrivateAttr()

    @classmethod
    def of(cls, tool: PortableTool) -> WeftTool:
        """The LangChain tool for ``tool``."""
        made = cls(name=tool.name, description=tool.description, args_schema=tool.parameters)
        made._weft = tool
        return made

    # No run_manager or config parameter: LangChain would then pass its own under those
    # names, over an argument of the model's that weft should see (and refuse).
    def _run(self, *args: Any, **kwargs: Any) -> Any:
        return _answer(self._weft.call(_keywords(args, kwargs)))

    async def _arun(self, *args: Any, **kwargs: Any) -> Any:
        return _answer(await self._weft.acall(_keywords(args, kwargs)))


def tools(tools: ToolSource, *, source: str | None = None) -> list[BaseTool]:
    """LangChain tools: an ``AgentMemory``'s three memory tools (writes recorded under
    ``source``, default ``"langchain"``), or weft tools.

    >>> from weft.memory import AgentMemory
    >>> [tool.name for tool in tools(AgentMemory())]
    ['memory_list', 'memory_read', 'memory_write']
    """
    return [
        WeftTool.of(each) for each in portable_tools(tools, source=source, default_source=SOURCE)
    ]


def _keywords(args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    # LangChain passes a string input positionally; weft parses it as JSON text
    return args[0] if args else kwargs


def _answer(outcome: Outcome) -> Any:
    if not outcome.ok:
        raise ToolException(outcome.error)
    return outcome.result
