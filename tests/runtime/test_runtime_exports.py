"""The public names of weft.runtime are a contract, and the docstring examples run."""

from __future__ import annotations

import doctest
import types

import pytest

import weft.runtime
from weft.runtime import context, turns


def test_runtime_public_names_are_pinned() -> None:
    assert weft.runtime.__all__ == [
        "Field",
        "Group",
        "Input",
        "Loaded",
        "NodeSpec",
        "Reducer",
        "StageEvent",
        "StateCodec",
        "StateSchema",
        "ThreadRecord",
        "Transcript",
        "TurnResult",
        "TurnRuntime",
        "TurnScoped",
        "TurnState",
        "WorkflowContext",
        "node",
        "working_memory_loader",
    ]
    for name in weft.runtime.__all__:
        assert hasattr(weft.runtime, name), name


def test_the_design_names_are_exported() -> None:
    for name in ("TurnRuntime", "Input", "Reducer", "Loaded", "TurnScoped", "WorkflowContext"):
        assert name in weft.runtime.__all__


@pytest.mark.parametrize("module", [turns, context], ids=lambda m: m.__name__)
def test_docstring_examples_run(module: types.ModuleType) -> None:
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0
    assert result.failed == 0
