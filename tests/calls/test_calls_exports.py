"""The public names of weft.calls are pinned and the docstring examples run."""

from __future__ import annotations

import doctest
import importlib
import types

import pytest

import weft.calls

MODULES = [importlib.import_module(f"weft.calls.{name}") for name in ("call",)]


def test_public_names_are_pinned() -> None:
    assert weft.calls.__all__ == [
        "Call",
        "CompiledPlan",
        "Plan",
        "PlanProblem",
        "PlanResult",
        "Tool",
        "strict_schema",
        "tool",
    ]
    for name in weft.calls.__all__:
        assert hasattr(weft.calls, name), name


@pytest.mark.parametrize("module", MODULES, ids=lambda m: m.__name__)
def test_docstring_examples_run(module: types.ModuleType) -> None:
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert result.failed == 0
