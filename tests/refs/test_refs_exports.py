"""The public names of weft.refs are pinned, the docstring examples run, and the layer
imports only the store, the errors and itself."""

from __future__ import annotations

import ast
import doctest
import importlib
import pathlib
import types

import pytest

import weft.refs

MODULES = [
    importlib.import_module(f"weft.refs.{name}") for name in ("outputs", "parse", "resolve")
]  # weft.refs.resolve the attribute is the function; the module is found by its name

SOURCE = pathlib.Path(weft.refs.__file__).parent


def test_public_names_are_pinned() -> None:
    assert weft.refs.__all__ == [
        "ChosenPath",
        "Expression",
        "LayeredScope",
        "MappingScope",
        "OutputPath",
        "Reference",
        "Scope",
        "StoreScope",
        "Target",
        "references_in",
        "resolve",
    ]
    for name in weft.refs.__all__:
        assert hasattr(weft.refs, name), name


@pytest.mark.parametrize("module", MODULES, ids=lambda m: m.__name__)
def test_docstring_examples_run(module: types.ModuleType) -> None:
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert result.failed == 0


def test_modules_import_only_the_store_the_errors_and_each_other() -> None:
    allowed = ("weft.store", "weft.errors", "weft.refs")
    for path in SOURCE.glob("*.py"):
        for statement in ast.walk(ast.parse(path.read_text())):
            if isinstance(statement, ast.ImportFrom) and (statement.module or "").startswith(
                "weft"
            ):
                assert statement.module.startswith(allowed), (path.name, statement.module)
            if isinstance(statement, ast.Import):
                for alias in statement.names:
                    assert not alias.name.startswith("weft") or alias.name.startswith(allowed)
