"""Flags shown as flags: typer (0.29) gives every option in ``--help`` its type, so a flag
such as ``--version`` or ``--create`` reads ``--version <bool>``, as if it took a value.
``FlagsGroup`` is the ``weft`` command's group: it clears that type on every flag of the
group and of each command (``--help`` included) before help is shown."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from typer.core import TyperGroup


class FlagsGroup(TyperGroup):
    """A typer group whose help shows flags bare (see the module docstring)."""

    def get_params(self, ctx: Any) -> list[Any]:
        return _bare(super().get_params(ctx))

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        command = super().get_command(ctx, cmd_name)
        if command is not None:
            _bare(command.get_params(ctx))
        return command


def _bare(params: Iterable[Any]) -> list[Any]:
    out = list(params)
    for param in out:
        if getattr(param, "is_flag", False) and param.metavar is None:
            param.metavar = ""  # what the help shows as the option's type
    return out
