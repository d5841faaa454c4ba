"""``weft inspect [DB]``: serve the web inspector of a database."""

from __future__ import annotations

from typing import Annotated

import typer

from weft.errors import WeftError


def inspect(
    db: Annotated[
        str | None,
        typer.Argument(
            metavar="DB", help="A SQLite file (default .weft/weft.db) or a postgresql:// DSN."
        ),
    ] = None,
    host: Annotated[
        str, typer.Option("--host", help="The address to listen on; not loopback: a token.")
    ] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", help="The port; 0: any free one.")] = 8765,
    allow_writes: Annotated[
        bool,
        typer.Option("--allow-writes", help="Let the page answer paused runs and fork threads."),
    ] = False,
    token: Annotated[
        str | None,
        typer.Option("--token", help="The token to ask for (default: a fresh one, off loopback)."),
    ] = None,
) -> None:
    """Serve a local page that shows threads, runs, events, state, memory and pauses, live."""
    from weft.inspect.web import serve

    try:
        serve(db, host=host, port=port, allow_writes=allow_writes, token=token, say=typer.echo)
    except WeftError as error:
        typer.echo(f"weft inspect: {error}", err=True)
        raise typer.Exit(code=2) from None
    except KeyboardInterrupt:
        raise typer.Exit(code=0) from None
