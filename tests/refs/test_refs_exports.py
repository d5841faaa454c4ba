"""The public names of weft.refs are pinned, the docstring examples run, and the layer
imports only what it may (the store and the errors; the engine only when a plan runs)."""

from __future__ import annotations

import ast
import doctest
import importlib
import pathlib
import subprocess
import sys
import types

import pytest

import weft.refs

MODULES = [
    importlib.import_module(f"weft.refs.{name}")
    for name in ("calls", "outputs", "parse", "resolve")
]  # weft.refs.resolve the attribute is the function; the module is found by its name

SOURCE = pathlib.Path(weft.refs.__file__).parent


def test_public_names_are_pinned() -> None:
    assert weft.refs.__all__ == [
        "Call",
        "ChosenPath",
        "CompiledPlan",
        "Expression",
        "LayeredScope",
        "MappingScope",
        "OutputPath",
        "Plan",
        "PlanProblem",
        "PlanResult",
        "Reference",
        "Scope",
        "StoreScope",
        "Target",
        "Tool",
        "references_in",
        "resolve",
    ]
    for name in weft.refs.__all__:
        assert hasattr(weft.refs, name), name


@pytest.mark.parametrize("module", MODULES, ids=lambda m: m.__name__)
def test_docstring_examples_run(module: types.ModuleType) -> None:
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert result.failed == 0


def test_modules_import_only_the_store_the_errors_and_each_other_at_the_top() -> None:
    allowed = ("weft.store", "weft.errors", "weft.refs")
    for path in SOURCE.glob("*.py"):
        tree = ast.parse(path.read_text())
        for statement in tree.body:
            if isinstance(statement, ast.ImportFrom) and (statement.module or "").startswith(
                "weft"
            ):
                assert statement.module.startswith(allowed), (path.name, statement.module)


def test_importing_weft_refs_does_not_load_the_engine_or_jsonschema() -> None:
    code = (
        "import sys, weft.refs; "
        "print(','.join(m for m in ('weft.graph', 'weft.plan', 'jsonschema') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""
