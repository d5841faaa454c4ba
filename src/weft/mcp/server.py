"""The memory tools of one thread over the Model Context Protocol (the official ``mcp`` SDK).

``build_server(memory)`` is an MCP server (the SDK's low-level ``Server``) with the tools
``memory_list``, ``memory_read`` and ``memory_write`` exactly as weft gives them to a model:
the same descriptions and JSON Schemas, the same checks, the same readable errors (a result
with ``isError: true`` whose text says what was wrong). Each entry is also a resource,
``weft-memory:///<key>``. ``serve(...)`` runs it over stdio or streamable HTTP.

Who wrote what: ``memory_write`` records ``mcp:<name>``, the name the client gave in its
``clientInfo``; a client that names none is recorded by its session (the HTTP session id,
or one id per stdio process). The SDK is imported only here (``pip install 'weft[mcp]'``).
"""

from __future__ import annotations

import json
import re
import socket
import sys
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, Literal
from urllib.parse import quote, unquote

from weft import __version__
from weft._sync import run_sync
from weft.errors import ServeError
from weft.mcp.thread import ThreadMemory
from weft.memory import MemoryTool
from weft.persist.runs import new_id

if TYPE_CHECKING:
    import mcp_types
    from mcp.server.context import ServerRequestContext
    from mcp.server.lowlevel import Server

Transport = Literal["stdio", "http"]
RESOURCE_PREFIX: Final = "weft-memory:///"
MCP_PATH: Final = "/mcp"
_NAME_CHARS: Final = 64
_PAGE: Final = 200
_READ_ONLY: Final = frozenset({"memory_list", "memory_read"})


def client_source(client_name: str | None, session_id: str | None) -> str:
    """The ``source`` a client's writes are recorded under: ``mcp:<its name>`` (control
    characters dropped, spaces collapsed, at most 64 characters), else ``mcp:session-<id>``.

    >>> client_source("Claude Desktop", None), client_source(None, "4f2a")
    ('mcp:Claude Desktop', 'mcp:session-4f2a')
    """
    name = " ".join(re.sub(r"[\x00-\x1f\x7f]", " ", client_name or "").split())
    name = name.encode("utf-8", "replace").decode("utf-8")[:_NAME_CHARS]  # no lone surrogate
    return f"mcp:{name}" if name else f"mcp:session-{session_id or 'unknown'}"


def build_server(memory: ThreadMemory) -> Server[Any]:
    """An MCP server of ``memory``'s tools and entries (run it with ``serve`` or the SDK)."""
    import anyio.to_thread
    import mcp_types as types
    from mcp import MCPError
    from mcp.server.lowlevel import Server

    process_session = new_id("session")  # stdio: one client per process

    def source_of(ctx: ServerRequestContext[Any, Any]) -> str:
        params = ctx.session.client_params
        name = params.client_info.name if params is not None else None
        headers = getattr(ctx.request, "headers", None)
        session = headers.get("mcp-session-id") if headers is not None else None
        return client_source(name, session or process_session)

    async def in_thread(fn: Callable[[], Any]) -> Any:
        return await anyio.to_thread.run_sync(fn)  # the database is blocking I/O

    async def list_tools(
        ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=[_tool(types, tool) for tool in memory.tools])

    async def call_tool(
        ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        call = partial(memory.call, params.name, params.arguments, source=source_of(ctx))
        result: dict[str, Any] = await in_thread(call)
        text = json.dumps(result, ensure_ascii=False)
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=text)],
            structured_content=result,
            is_error=not result.get("ok", False),
        )

    async def list_resources(
        ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListResourcesResult:
        start = _cursor(params.cursor if params is not None else None, MCPError)
        entries = await in_thread(memory.entries)
        page = entries[start : start + _PAGE]
        more = start + _PAGE < len(entries)
        return types.ListResourcesResult(
            resources=[
                types.Resource(
                    uri=RESOURCE_PREFIX + quote(entry.key, safe=":"),
                    name=entry.key,
                    title=entry.title,
                    description=entry.description,
                    mime_type="application/json",
                )
                for entry in page
            ],
            next_cursor=str(start + _PAGE) if more else None,
        )

    async def read_resource(
        ctx: ServerRequestContext[Any, Any], params: types.ReadResourceRequestParams
    ) -> types.ReadResourceResult:
        uri = str(params.uri)
        if not uri.startswith(RESOURCE_PREFIX):
            raise MCPError(
                code=types.INVALID_PARAMS,
                message=f"resource {uri!r}: this server's resources are "
                f"{RESOURCE_PREFIX}<memory key>, as resources/list shows them",
            )
        key = unquote(uri.removeprefix(RESOURCE_PREFIX))
        found = await in_thread(partial(memory.call, "memory_read", {"keys": [key]}))
        entry = found.get("entries", {}).get(key) if found.get("ok") else None
        if entry is None:
            raise MCPError(
                code=types.INVALID_PARAMS,
                message=f"resource {uri!r}: memory holds no entry {key!r}; "
                "resources/list shows the entries there are",
            )
        return types.ReadResourceResult(
            contents=[
                types.TextResourceContents(
                    uri=uri,
                    mime_type="application/json",
                    text=json.dumps(entry, ensure_ascii=False),
                )
            ]
        )

    return Server(
        "weft",
        version=__version__,
        title="weft memory",
        instructions=(
            f"The shared memory of the weft thread {memory.thread_id!r}: call memory_list to "
            "see what is there (no values), memory_read to load the values you need, and "
            "memory_write to publish a value under shared:<key>; only shared: can be written."
        ),
        on_list_tools=list_tools,
        on_call_tool=call_tool,
        on_list_resources=list_resources,
        on_read_resource=read_resource,
    )


def serve(
    db: str | Path | None,
    thread_id: str,
    *,
    transport: Transport = "stdio",
    host: str = "127.0.0.1",
    port: int = 8000,
    create: bool = False,
    schema: str = "weft",
    announce: Callable[[str], object] | None = None,
) -> None:
    """Serve the memory of ``thread_id`` in ``db`` (a SQLite path or a PostgreSQL DSN) until
    the client goes away (stdio) or the process is stopped (http, on ``host:port``; port 0
    picks a free one). ``announce`` gets a line saying what is served where (on stderr by
    default: stdout is the protocol's on stdio). Raises a ``WeftError`` for a wrong
    database, thread, transport or address before anything is served."""
    if transport not in ("stdio", "http"):
        raise ServeError(f"transport={transport!r}: expected 'stdio' or 'http'")
    say = announce or partial(print, file=sys.stderr, flush=True)
    memory = ThreadMemory.open(db, thread_id, create=create, schema=schema)
    try:
        _check_sdk()
        server = build_server(memory)
        where = f"thread {thread_id!r} of {memory.location}"
        if transport == "stdio":
            say(f"weft mcp: serving the memory of {where} on stdio")
            run_sync(_serve_stdio(server))
        else:
            listener = _bind(host, port)
            bound = listener.getsockname()[1]
            shown = f"[{host}]" if ":" in host else host
            say(f"weft mcp: serving the memory of {where} on http://{shown}:{bound}{MCP_PATH}")
            run_sync(_serve_http(server, host, listener))
    finally:
        memory.close()


async def _serve_stdio(server: Server[Any]) -> None:
    from mcp.server.stdio import stdio_server

    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())


async def _serve_http(server: Server[Any], host: str, listener: socket.socket) -> None:
    import uvicorn

    app = server.streamable_http_app(streamable_http_path=MCP_PATH, host=host)
    config = uvicorn.Config(app, log_level="warning", lifespan="on")
    await uvicorn.Server(config).serve(sockets=[listener])


def _bind(host: str, port: int) -> socket.socket:
    """A listening socket on ``host:port``, or a clear error (taken, not an address)."""
    if isinstance(port, bool) or not isinstance(port, int) or not 0 <= port <= 65535:
        raise ServeError(f"port={port!r}: expected a number from 0 to 65535 (0: any free port)")
    try:
        family = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0][0]
        listener = socket.socket(family, socket.SOCK_STREAM)
    except OSError as exc:
        raise ServeError(f"host {host!r}: not an address this machine has ({exc})") from exc
    try:
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind((host, port))
        listener.listen(128)
    except OSError as exc:
        listener.close()
        raise ServeError(
            f"cannot listen on {host}:{port} ({exc.strerror or exc}); pick another --port "
            "(0: any free port) or stop what is using it"
        ) from exc
    return listener


def _check_sdk() -> None:
    try:
        import mcp.server.lowlevel  # noqa: F401
    except ImportError as exc:
        raise ServeError(
            "weft mcp needs the MCP Python SDK (version 2): pip install 'weft[mcp]'"
        ) from exc


def _tool(types: Any, tool: MemoryTool) -> mcp_types.Tool:
    read_only = tool.name in _READ_ONLY
    annotations = types.ToolAnnotations(
        read_only_hint=read_only,
        destructive_hint=not read_only,  # a write replaces the key's value
        idempotent_hint=True,
        open_world_hint=False,
    )
    result: mcp_types.Tool = types.Tool(
        name=tool.name,
        description=tool.description,
        input_schema=tool.parameters,
        annotations=annotations,
    )
    return result


def _cursor(cursor: str | None, error: Any) -> int:
    if cursor is None:
        return 0
    if not cursor.isdigit():
        import mcp_types

        raise error(
            code=mcp_types.INVALID_PARAMS,
            message=f"cursor {cursor!r}: pass back the nextCursor of the previous page",
        )
    return int(cursor)
