"""weft.persist's public names are a contract, and importing it stays light."""

from __future__ import annotations

import doctest
import subprocess
import sys

import weft.persist
import weft.persist.memory
import weft.persist.runs
import weft.persist.sqlite


def test_public_names() -> None:
    assert weft.persist.__all__ == [
        "FORMAT_VERSION",
        "Backend",
        "Checkpoint",
        "DurableRun",
        "InMemoryBackend",
        "LoggedEvent",
        "PostgresBackend",
        "RunInfo",
        "SQLiteBackend",
        "Snapshot",
        "ThreadInfo",
        "fork_thread",
        "load_store",
    ]
    for name in weft.persist.__all__:
        assert getattr(weft.persist, name) is not None


def test_importing_persist_needs_neither_psycopg_nor_the_graph_engine() -> None:
    code = (
        "import sys, weft.persist, weft.memory; "
        "print(sorted(m for m in ('psycopg', 'psycopg_pool', 'weft.graph', 'rich', 'typer') "
        "if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_persist_never_imports_the_memory_layer() -> None:
    code = "import sys, weft.persist; print(' '.join(m for m in sys.modules if m[:5] == 'weft.'))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    loaded = out.stdout.split()
    assert "weft.persist.sqlite" in loaded
    assert [m for m in loaded if m.startswith("weft.memory")] == []


def test_the_docstring_examples_run() -> None:
    for module in (weft.persist.memory, weft.persist.runs, weft.persist.sqlite):
        assert doctest.testmod(module).failed == 0, module.__name__
