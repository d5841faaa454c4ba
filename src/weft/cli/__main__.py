"""``python -m weft.cli``: the ``weft`` command."""

from weft.cli.main import app

app(prog_name="weft")
