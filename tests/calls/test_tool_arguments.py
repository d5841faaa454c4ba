"""A tool's arguments go through one check before its function runs: what the schema
refuses is a ToolArgumentsError naming the tool, the argument and what was expected (the
function never runs), and what it accepts arrives as the types the function declares."""

from __future__ import annotations

import asyncio
import dataclasses
import datetime
import enum
import json
from typing import Any, Literal

import pytest
from pydantic import BaseModel, field_validator
from typing_extensions import TypedDict

from weft.calls import Plan, Tool, tool
from weft.errors import PlanRunError, ToolArgumentsError
from weft.store import MAX_DEPTH


class Unit(enum.Enum):
    C = "celsius"
    F = "fahrenheit"


class Location(BaseModel):
    city: str
    country: str = "FR"

    @field_validator("city")
    @classmethod
    def not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("the city must not be blank")
        return value


@dataclasses.dataclass
class Window:
    days: int
    hourly: bool = False


class Options(TypedDict):
    verbose: bool


CALLS: list[dict[str, Any]] = []


@tool
def forecast(
    where: Location,
    unit: Unit,
    window: Window,
    options: Options,
    span: tuple[int, int],
    mode: Literal["brief", "full"] = "brief",
    limit: int = 3,
) -> dict[str, Any]:
    """Forecast the weather."""
    CALLS.append({"where": where, "unit": unit, "window": window, "options": options, "span": span})
    return {"city": where.city, "unit": unit.value, "days": window.days, "mode": mode}


GOOD: dict[str, Any] = {
    "where": {"city": "Lyon"},
    "unit": "celsius",
    "window": {"days": 2},
    "options": {"verbose": True},
    "span": [1, 5],
}


def run(t: Tool, arguments: Any) -> Any:
    return asyncio.run(t.acall(arguments))


@pytest.fixture(autouse=True)
def no_calls() -> None:
    CALLS.clear()


def test_checked_arguments_arrive_as_the_declared_types() -> None:
    assert run(forecast, GOOD) == {"city": "Lyon", "unit": "celsius", "days": 2, "mode": "brief"}
    (seen,) = CALLS
    assert seen["where"] == Location(city="Lyon", country="FR")
    assert seen["unit"] is Unit.C
    assert seen["window"] == Window(days=2)
    assert seen["options"] == {"verbose": True}
    assert seen["span"] == (1, 5)


def test_json_values_convert_as_the_schema_reads_them() -> None:
    @tool
    def when(day: datetime.date, ratio: float = 1.0, raw: Any = None) -> Any:
        return day, ratio, raw

    nested = {"a": [1, {"b": None}]}
    day, ratio, raw = run(when, {"day": "2024-01-02", "ratio": 2, "raw": nested})
    assert (day, ratio, raw) == (datetime.date(2024, 1, 2), 2.0, nested)
    assert isinstance(ratio, float)
    with pytest.raises(ToolArgumentsError, match=r'argument .day. is invalid \("nope"\)'):
        run(when, {"day": "nope"})


def test_arguments_left_out_take_the_function_defaults() -> None:
    assert forecast.check_arguments(GOOD).keys() == GOOD.keys()


@pytest.mark.parametrize(
    ("change", "argument", "expected"),
    [
        ({"limit": "3"}, "limit", "expected an integer"),
        ({"limit": True}, "limit", "expected an integer"),
        ({"limit": 3.0}, "limit", "Input should be a valid integer"),
        ({"unit": "kelvin"}, "unit", 'one of "celsius", "fahrenheit"'),
        ({"mode": "loud"}, "mode", 'one of "brief", "full"'),
        ({"where": "Lyon"}, "where", "expected an object Location with the fields city, country"),
        ({"where": {"country": "FR"}}, "where", "'city' is a required property"),
        ({"window": {"days": 1.5}}, "window.days", "expected an integer"),
        ({"span": [1, 2, 3]}, "span", "is too long"),
        ({"options": {"verbose": "yes"}}, "options.verbose", "expected true or false"),
    ],
)
def test_wrong_types_are_refused_naming_the_argument_and_what_was_expected(
    change: dict[str, Any], argument: str, expected: str
) -> None:
    with pytest.raises(ToolArgumentsError) as caught:
        run(forecast, {**GOOD, **change})
    error = caught.value
    assert error.tool == "forecast" and str(error).startswith("forecast: ")
    assert f"argument {argument!r} is invalid" in str(error)
    assert expected in str(error)
    assert error.arguments[0] == argument.split(".")[0]
    assert not CALLS


def test_unknown_arguments_are_refused_listing_the_ones_it_takes() -> None:
    with pytest.raises(ToolArgumentsError, match=r"unknown argument 'units'; this tool takes only"):
        run(forecast, {**GOOD, "units": "C"})
    assert not CALLS


def test_missing_arguments_are_refused_with_what_each_expects() -> None:
    with pytest.raises(ToolArgumentsError) as caught:
        run(forecast, {"unit": "celsius"})
    message = str(caught.value)
    assert "missing required argument 'where': expected an object Location" in message
    assert "missing required argument 'span'" in message
    assert set(caught.value.arguments) >= {"where", "window"}
    assert not CALLS


@pytest.mark.parametrize("arguments", [None, [1, 2], "text", 7, {1: "a"}])
def test_arguments_that_are_not_an_object_are_refused(arguments: Any) -> None:
    with pytest.raises(ToolArgumentsError, match="must be a JSON object of named arguments"):
        run(forecast, arguments)


def test_hugely_nested_arguments_are_refused_without_recursing() -> None:
    deep: Any = "x"
    for _ in range(100_000):
        deep = [deep]
    with pytest.raises(ToolArgumentsError, match=f"nest deeper than {MAX_DEPTH} levels"):
        run(forecast, {**GOOD, "where": deep})
    assert not CALLS


def test_many_bad_arguments_are_reported_in_a_bounded_message() -> None:
    wide = {f"extra_{i}": i for i in range(10_000)}
    with pytest.raises(ToolArgumentsError) as caught:
        run(forecast, {**GOOD, **wide})
    assert len(str(caught.value)) < 2000
    assert not CALLS


def test_a_model_validator_refusal_is_an_arguments_error_too() -> None:
    with pytest.raises(ToolArgumentsError, match=r"argument 'where.city' is invalid.*blank"):
        run(forecast, {**GOOD, "where": {"city": "  "}})
    assert not CALLS


def test_given_parameters_check_but_do_not_convert() -> None:
    seen: list[Any] = []
    schema = {
        "type": "object",
        "properties": {"n": {"type": "integer"}},
        "required": ["n"],
        "additionalProperties": False,
    }
    t = Tool(name="keep", fn=lambda n: seen.append(n), parameters=schema)
    run(t, {"n": 2})
    with pytest.raises(ToolArgumentsError, match="argument 'n' is invalid"):
        run(t, {"n": "2"})
    assert seen == [2]


def test_a_tool_with_keyword_arguments_takes_extra_ones() -> None:
    @tool
    def tag(name: str, **labels: Any) -> dict[str, Any]:
        return {"name": name, **labels}

    assert run(tag, {"name": "a", "x": 1}) == {"name": "a", "x": 1}


def test_a_plan_converts_literal_and_referenced_arguments() -> None:
    plan = Plan(
        [
            {"_tool": "forecast", **GOOD, "_outputPath": "†state.first"},
            {"_tool": "forecast", **GOOD, "where": {"city": "†state.first.city"}},
        ]
    )
    assert plan.run([forecast]).output["city"] == "Lyon"
    assert all(isinstance(call["where"], Location) for call in CALLS)


def test_a_plan_refuses_a_referenced_value_of_the_wrong_type_before_the_call() -> None:
    @tool
    def number() -> str:
        return "three"

    plan = Plan(
        [
            {"_tool": "number", "_outputPath": "†state.n"},
            {"_tool": "forecast", **GOOD, "limit": "†state.n"},
        ]
    )
    with pytest.raises(PlanRunError, match=r"argument 'limit' is invalid \(\"three\"\)"):
        plan.run([number, forecast])
    assert not CALLS


def test_an_executor_model_sending_bad_arguments_reads_the_error_and_nothing_runs() -> None:
    from weft.agent.toolbox import AgentTools
    from weft.llm import ToolCall
    from weft.memory import AgentMemory

    box = AgentTools([forecast], memory=AgentMemory(), source="agent")
    raw = json.dumps({**GOOD, "limit": "many"})
    refused = asyncio.run(box.answer(ToolCall.parse(id="c1", name="forecast", raw=raw)))
    assert refused.is_error and refused.problem == "invalid_arguments"
    assert "forecast: argument 'limit' is invalid" in json.loads(refused.content)["error"]
    assert not CALLS
    good = asyncio.run(box.answer(ToolCall.parse(id="c2", name="forecast", raw=json.dumps(GOOD))))
    assert json.loads(good.content) == {
        "city": "Lyon",
        "unit": "celsius",
        "days": 2,
        "mode": "brief",
    }
