"""The ``weft`` command: ``weft demo``, ``weft mcp``, the commands that inspect stored runs
(``weft threads``, ``weft show`` ...), the web inspector (``weft inspect``) and
``weft --version``."""

from __future__ import annotations

from typing import Annotated

import typer

from weft import __version__
from weft.cli import inspect_cmds, mcp_cmd
from weft.cli.flags import FlagsGroup
from weft.inspect.web.command import inspect

app = typer.Typer(
    name="weft",
    cls=FlagsGroup,
    no_args_is_help=True,
    add_completion=False,
)


def _print_version(value: bool) -> None:
    if value:
        typer.echo(f"weft {__version__}")
        raise typer.Exit()


@app.callback()
def main(
    version: Annotated[
        bool,
        typer.Option(
            "--version", callback=_print_version, is_eager=True, help="Print the version and exit."
        ),
    ] = False,
) -> None:
    """weft: state and memory for LLM-agent workflows, on one store."""


@app.command()
def demo() -> None:
    """Walk scripted agents through one store: memory and its tools, a planning agent, a plan."""
    from weft.cli.demo import SCENES, run_demo
    from weft.cli.demo_plan import PLAN_SCENES

    run_demo(scenes=[*SCENES, *PLAN_SCENES])


app.command()(mcp_cmd.mcp)
inspect_cmds.register(app)
app.command(rich_help_panel=inspect_cmds.PANEL)(inspect)
