"""The public names of ``weft.inspect``, and what importing it costs."""

from __future__ import annotations

import doctest
import subprocess
import sys

import weft.inspect
from weft.inspect import reader


def test_public_names() -> None:
    assert weft.inspect.__all__ == [
        "EntryChange",
        "Fork",
        "MemoryItem",
        "Progress",
        "Reader",
        "RunSummary",
        "StateDiff",
        "StateEntry",
        "ThreadEvent",
        "ThreadState",
        "ThreadSummary",
        "TimelineItem",
        "to_json",
    ]
    for name in weft.inspect.__all__:
        assert getattr(weft.inspect, name) is getattr(reader, name)


def test_reading_threads_needs_neither_rich_nor_typer_nor_a_server_driver() -> None:
    code = (
        "import sys, weft.inspect; "
        "print(sorted(m for m in ('rich', 'typer', 'psycopg', 'mcp', 'weft.cli') "
        "if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_the_docstring_examples_run() -> None:
    result = doctest.testmod(reader)
    assert result.attempted > 0 and result.failed == 0
