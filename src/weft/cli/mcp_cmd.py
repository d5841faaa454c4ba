"""``weft mcp``: serve a thread's memory tools over the Model Context Protocol."""

from __future__ import annotations

from typing import Annotated

import typer

from weft.errors import WeftError


def mcp(
    thread: Annotated[str, typer.Option("--thread", help="The thread whose memory to serve.")],
    db: Annotated[
        str | None,
        typer.Option(
            "--db",
            metavar="PATH|DSN",
            help="A SQLite file (default .weft/weft.db) or a postgresql:// DSN.",
        ),
    ] = None,
    transport: Annotated[
        str, typer.Option("--transport", metavar="stdio|http", help="stdio or streamable HTTP.")
    ] = "stdio",
    host: Annotated[str, typer.Option("--host", help="The address to listen on (http).")] = (
        "127.0.0.1"
    ),
    port: Annotated[int, typer.Option("--port", help="The port (http); 0: any free one.")] = 8000,
    create: Annotated[
        bool, typer.Option("--create", help="Start the thread (and SQLite file) if new.")
    ] = False,
    schema: Annotated[
        str, typer.Option("--schema", help="The PostgreSQL schema of weft's tables.")
    ] = "weft",
) -> None:
    """Serve a thread's memory (memory_list, memory_read, memory_write) to MCP clients."""
    from weft.mcp import serve

    try:
        serve(
            db,
            thread,
            transport=transport,  # type: ignore[arg-type]  # checked by serve
            host=host,
            port=port,
            create=create,
            schema=schema,
        )
    except WeftError as error:
        typer.echo(f"weft mcp: {error}", err=True)
        raise typer.Exit(code=2) from None
    except KeyboardInterrupt:
        raise typer.Exit(code=0) from None
