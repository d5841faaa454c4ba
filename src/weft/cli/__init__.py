"""The ``weft`` command line (typer and rich are imported only here)."""

from weft.cli.main import app

__all__ = ["app"]
