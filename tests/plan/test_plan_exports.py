"""The public names of weft.plan are pinned and the docstring examples run."""

from __future__ import annotations

import doctest
import importlib
import types

import pytest

import weft.plan

MODULES = [
    importlib.import_module(f"weft.plan.{name}")
    for name in ("types", "step", "task", "parallel", "bridge", "board", "jobs")
]


def test_public_names_are_pinned() -> None:
    assert weft.plan.__all__ == [
        "AgentStepExecutor",
        "BoardEvent",
        "BoardTask",
        "DagReport",
        "MessageBus",
        "ModeResult",
        "MultiModeAgent",
        "ParallelTaskExecutor",
        "PlanReport",
        "Step",
        "StepExecutor",
        "StepResult",
        "Task",
        "TaskBoard",
        "TaskExecutor",
        "TaskPlan",
        "TaskResult",
        "TeamExecutor",
        "TeamMember",
        "TeamMessage",
        "TeamReport",
    ]
    for name in weft.plan.__all__:
        assert hasattr(weft.plan, name), name


@pytest.mark.parametrize("module", MODULES, ids=lambda m: m.__name__)
def test_docstring_examples_run(module: types.ModuleType) -> None:
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert result.failed == 0
