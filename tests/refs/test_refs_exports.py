"""The public names of weft.refs are pinned and the docstring examples run."""

from __future__ import annotations

import doctest
import importlib
import types

import pytest

import weft.refs

MODULES = [
    importlib.import_module(f"weft.refs.{name}") for name in ("outputs", "parse", "resolve")
]  # weft.refs.resolve the attribute is the function; the module is found by its name


def test_public_names_are_pinned() -> None:
    assert weft.refs.__all__ == [
        "ChosenPath",
        "Expression",
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
