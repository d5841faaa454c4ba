"""A thread's memory over the Model Context Protocol: ``weft mcp`` serves the tools
``memory_list``, ``memory_read`` and ``memory_write`` (and each entry as a resource) to any
MCP client, over stdio or streamable HTTP. The ``mcp`` SDK is imported only when a server
is built (``pip install 'weft[mcp]'``)."""

from weft.mcp.server import build_server, client_source, serve
from weft.mcp.thread import ThreadMemory, open_backend

__all__ = ["ThreadMemory", "build_server", "client_source", "open_backend", "serve"]
