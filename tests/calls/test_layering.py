"""weft.calls sits between the engine and the layers that use it: importing the reference
language never loads it, and importing it loads no layer that comes after it. (The static
import rules of every layer are tests/test_layers.py.)"""

from __future__ import annotations

import subprocess
import sys


def loaded_after(statement: str, modules: tuple[str, ...]) -> list[str]:
    """Which of ``modules`` a fresh interpreter has loaded after running ``statement``."""
    code = f"import sys; {statement}; print(','.join(m for m in {modules!r} if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return [name for name in out.stdout.strip().split(",") if name]


def test_importing_weft_refs_loads_neither_the_calls_nor_the_engine_nor_jsonschema() -> None:
    assert loaded_after("import weft.refs", ("weft.calls", "weft.graph", "jsonschema")) == []


def test_importing_weft_calls_loads_no_layer_above_it() -> None:
    above = ("weft.memory", "weft.llm", "weft.agent", "weft.plan", "weft.runtime", "weft.cli")
    assert loaded_after("import weft.calls", above) == []


def test_the_layers_that_offer_tools_load_weft_calls_only_when_tools_are_used() -> None:
    assert loaded_after("import weft.memory, weft.llm", ("weft.calls", "weft.graph")) == []
