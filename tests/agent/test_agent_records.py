"""The agent's records build as the dataclasses they are: their hand-written ``__init__``
(faster than the generated one) takes every field, keyword-only, with the same defaults."""

from __future__ import annotations

import dataclasses
import inspect
from typing import Any

import pytest

from weft.agent import (
    AgentAction,
    AgentResponse,
    AgentResult,
    AgentStateItem,
    AgentTaskStatusFlags,
    IterationContext,
)
from weft.store import MISSING, FrozenDict


@pytest.mark.parametrize(
    "cls", [AgentAction, AgentResponse, AgentStateItem, AgentResult, IterationContext]
)
def test_the_init_takes_every_field_with_its_default(cls: type) -> None:
    params = inspect.signature(cls).parameters
    fields = dataclasses.fields(cls)
    assert list(params) == [f.name for f in fields]
    for f in fields:
        param = params[f.name]
        assert param.kind is param.KEYWORD_ONLY
        if f.default is not dataclasses.MISSING:
            assert param.default == f.default
        elif f.default_factory is not dataclasses.MISSING:
            assert param.default == f.default_factory()
        else:
            assert param.default is param.empty


def test_every_field_is_set_and_the_record_stays_frozen() -> None:
    values: dict[str, Any] = {
        "type": "Search",
        "target": "t",
        "args": {"q": [1]},
        "reasoning": "r",
        "id": "i",
        "result": 5,
        "error": "e",
    }
    action = AgentAction(**values)
    assert {f.name: getattr(action, f.name) for f in dataclasses.fields(action)} == values
    assert type(action.args) is FrozenDict and type(action.args["q"]) is not list
    assert AgentAction(type="A").args == {} and AgentAction(type="A").result is MISSING
    with pytest.raises(dataclasses.FrozenInstanceError):
        action.type = "other"  # type: ignore[misc]
    response = AgentResponse(task_status=AgentTaskStatusFlags.Completed, next_actions=((action,),))
    assert dataclasses.replace(response, instant_response="hi") == AgentResponse(
        instant_response="hi", task_status=AgentTaskStatusFlags.Completed, next_actions=((action,),)
    )
    with pytest.raises(dataclasses.FrozenInstanceError):
        response.problems = ()  # type: ignore[misc]
