"""A Tool made from a plain function: the JSON Schema of its arguments inferred from the
signature, the description from the docstring, the decorator, names, methods, pickling."""

from __future__ import annotations

import asyncio
import dataclasses
import enum
import pickle
from typing import Annotated, Any, Literal, Optional, Union

import pytest
from pydantic import BaseModel, Field
from typing_extensions import TypedDict

from weft.calls import Plan, Tool, tool
from weft.calls.docstrings import parse_docstring
from weft.errors import PlanValidationError, ToolDefinitionError


class Color(enum.Enum):
    RED = "red"
    BLUE = "blue"


class Point(BaseModel):
    x: int
    y: int = 0


@dataclasses.dataclass
class Box:
    width: float
    label: str = "box"


class Address(TypedDict):
    city: str
    zip: int


def props(t: Tool) -> dict[str, Any]:
    properties = t.parameters["properties"]
    assert isinstance(properties, dict)
    return properties


# ------------------------------------------------------------------ scalar types


def test_scalar_hints_become_json_types_and_defaults_are_shown_and_not_required() -> None:
    def search(query: str, limit: int, ratio: float, exact: bool, page: int = 1) -> None:
        pass

    t = Tool(name="search", fn=search)
    assert t.parameters == {
        "type": "object",
        "properties": {
            "query": {"type": "string"},
            "limit": {"type": "integer"},
            "ratio": {"type": "number"},
            "exact": {"type": "boolean"},
            "page": {"type": "integer", "default": 1},
        },
        "required": ["query", "limit", "ratio", "exact"],
        "additionalProperties": False,
    }


def test_optional_and_none_accept_null() -> None:
    def f(a: Optional[int], b: int | None = None, c: None = None) -> None:  # noqa: UP045
        pass

    p = props(Tool(name="f", fn=f))
    assert p["a"] == {"anyOf": [{"type": "integer"}, {"type": "null"}]}
    assert p["b"] == {"anyOf": [{"type": "integer"}, {"type": "null"}], "default": None}
    assert p["c"] == {"type": "null", "default": None}
    assert Tool(name="f", fn=f).parameters["required"] == ["a"]


def test_containers_unions_literals_and_enums() -> None:
    def f(
        tags: list[str],
        scores: dict[str, float],
        pair: tuple[int, str],
        many: tuple[int, ...],
        either: Union[int, str],  # noqa: UP007
        mode: Literal["fast", "slow"],
        color: Color,
    ) -> None:
        pass

    p = props(Tool(name="f", fn=f))
    assert p["tags"] == {"type": "array", "items": {"type": "string"}}
    assert p["scores"] == {"type": "object", "additionalProperties": {"type": "number"}}
    assert p["pair"]["prefixItems"] == [{"type": "integer"}, {"type": "string"}]
    assert p["many"] == {"type": "array", "items": {"type": "integer"}}
    assert p["either"] == {"anyOf": [{"type": "integer"}, {"type": "string"}]}
    assert p["mode"] == {"type": "string", "enum": ["fast", "slow"]}
    assert p["color"] == {"$ref": "#/$defs/Color"}
    defs = Tool(name="f", fn=f).parameters["$defs"]
    assert defs["Color"]["enum"] == ["red", "blue"]


def test_models_dataclasses_and_typed_dicts_are_described_in_defs() -> None:
    def f(point: Point, box: Box, address: Address) -> None:
        pass

    t = Tool(name="f", fn=f)
    defs = t.parameters["$defs"]
    assert defs["Point"]["properties"] == {
        "x": {"type": "integer"},
        "y": {"type": "integer", "default": 0},
    }
    assert defs["Point"]["required"] == ["x"]
    assert defs["Box"]["required"] == ["width"]
    assert defs["Address"]["required"] == ["city", "zip"]
    assert props(t)["point"] == {"$ref": "#/$defs/Point"}


def test_annotated_text_and_field_describe_arguments() -> None:
    def f(
        city: Annotated[str, "The city to look up"],
        days: Annotated[int, Field(description="How many days ahead", ge=1, le=7)] = 1,
    ) -> None:
        pass

    p = props(Tool(name="f", fn=f))
    assert p["city"] == {"type": "string", "description": "The city to look up"}
    assert p["days"] == {
        "type": "integer",
        "description": "How many days ahead",
        "minimum": 1,
        "maximum": 7,
        "default": 1,
    }


def test_a_field_as_default_describes_the_argument() -> None:
    def f(n: int = Field(3, description="how many")) -> None:
        pass

    assert props(Tool(name="f", fn=f))["n"] == {
        "type": "integer",
        "description": "how many",
        "default": 3,
    }


def test_unannotated_arguments_take_any_json() -> None:
    t = Tool(name="echo", fn=lambda text, times=2: text)
    assert props(t) == {"text": {}, "times": {"default": 2}}
    assert t.parameters["required"] == ["text"]


def test_keyword_arguments_open_the_object_and_star_args_are_left_out() -> None:
    def f(a: int, *rest: int, **extra: Any) -> None:
        pass

    t = Tool(name="f", fn=f)
    assert set(props(t)) == {"a"}
    assert t.parameters["additionalProperties"] is True
    assert t.check_arguments({"a": 1, "b": 2}) == {"a": 1, "b": 2}


def test_arguments_named_like_pydantic_attributes_work() -> None:
    def f(schema: str, json: int, model_config: bool = False) -> tuple[str, int, bool]:
        return schema, json, model_config

    t = Tool(name="f", fn=f)
    assert set(props(t)) == {"schema", "json", "model_config"}
    kwargs = t.check_arguments({"schema": "s", "json": 2, "model_config": True})
    assert f(**kwargs) == ("s", 2, True)


def test_an_isolated_tool_leaves_its_store_out_of_the_schema() -> None:
    t = Tool(name="m", fn=lambda text, store: text, isolated=True)
    assert set(props(t)) == {"text"}


def test_given_parameters_and_description_win_over_inference() -> None:
    def f(n: int) -> int:
        """Inferred text."""
        return n

    given = {"type": "object", "properties": {"n": {"type": "string"}}}
    t = Tool(name="f", fn=f, parameters=given, description="Given text.")
    assert (t.parameters, t.description) == (given, "Given text.")
    assert Tool(name="f", fn=f, parameters=given).description == "Inferred text."
    assert Tool(name="f", fn=f, description="Given text.").parameters["required"] == ["n"]


def test_a_type_with_no_json_schema_is_refused_naming_the_argument() -> None:
    class Socket:
        pass

    def f(ok: int, conn: Socket) -> None:
        pass

    with pytest.raises(ToolDefinitionError, match=r"tool 'f': its argument 'conn' has the type"):
        Tool(name="f", fn=f)


def test_a_positional_only_argument_is_refused() -> None:
    def f(a: int, /) -> None:
        pass

    with pytest.raises(ToolDefinitionError, match=r"'a' is positional-only"):
        Tool(name="f", fn=f)


def test_a_hint_naming_a_local_class_resolves() -> None:
    class Local(BaseModel):
        n: int

    def f(item: Local) -> int:
        return item.n

    t = Tool(name="f", fn=f)
    assert t.parameters["$defs"]["Local"]["required"] == ["n"]
    assert isinstance(t.check_arguments({"item": {"n": 2}})["item"], Local)


# ------------------------------------------------------------------ docstrings

GOOGLE = """Look up the weather.

    It answers for one city.

    Args:
        city: The city, e.g. 'Paris'.
        days (int): How many days
            ahead to forecast.

    Returns:
        The forecast.
    """

SPHINX = """Look up the weather.

    :param city: The city, e.g. 'Paris'.
    :param int days: How many days
        ahead to forecast.
    :returns: The forecast.
    """

NUMPY = """Look up the weather.

    Parameters
    ----------
    city : str
        The city, e.g. 'Paris'.
    days : int
        How many days
        ahead to forecast.

    Returns
    -------
    str
        The forecast.
    """


@pytest.mark.parametrize("doc", [GOOGLE, SPHINX, NUMPY], ids=["google", "sphinx", "numpy"])
def test_docstring_styles_describe_the_arguments(doc: str) -> None:
    prose, args = parse_docstring(doc)
    assert prose.startswith("Look up the weather.")
    assert "Args" not in prose and ":param" not in prose and "Parameters" not in prose
    assert args == {"city": "The city, e.g. 'Paris'.", "days": "How many days ahead to forecast."}


def test_the_google_prose_keeps_every_paragraph_before_the_sections() -> None:
    assert parse_docstring(GOOGLE)[0] == "Look up the weather.\n\nIt answers for one city."


def test_docstring_descriptions_reach_the_schema_and_annotated_text_wins() -> None:
    def weather(city: str, days: Annotated[int, "Days ahead (1-7)"] = 1) -> str:
        """Look up the weather.

        Args:
            city: The city, e.g. 'Paris'.
            days: How many days ahead.
        """
        return city

    t = Tool(name="weather", fn=weather)
    assert t.description == "Look up the weather."
    assert props(t)["city"]["description"] == "The city, e.g. 'Paris'."
    assert props(t)["days"]["description"] == "Days ahead (1-7)"


def test_no_docstring_gives_an_empty_description() -> None:
    assert Tool(name="f", fn=lambda: 1).description == ""


# ------------------------------------------------------------------ decorator


def test_the_bare_decorator_and_the_decorator_with_options() -> None:
    @tool
    def add(a: int, b: int = 2) -> int:
        """Add two numbers."""
        return a + b

    @tool(name="plus", description="Adds.", strict=True)
    def add2(a: int) -> int:
        return a

    assert (add.name, add.description, add.strict) == ("add", "Add two numbers.", False)
    assert (add2.name, add2.description, add2.strict) == ("plus", "Adds.", True)
    assert add2.strict_parameters is not None
    assert Plan([{"_tool": "add", "a": 1}]).run([add]).output == 3


def test_an_async_function_becomes_a_tool_that_is_awaited() -> None:
    @tool
    async def slow_double(n: int) -> int:
        await asyncio.sleep(0)
        return 2 * n

    assert props(slow_double) == {"n": {"type": "integer"}}
    assert asyncio.run(slow_double.acall({"n": 4})) == 8
    assert Plan([{"_tool": "slow_double", "n": 5}]).run([slow_double]).output == 10


class Greeter:
    def __init__(self, greeting: str) -> None:
        self.greeting = greeting

    @tool
    def greet(self, name: str) -> str:
        """Greet someone."""
        return f"{self.greeting}, {name}"

    @tool
    @staticmethod
    def shout(text: str) -> str:
        return text.upper()


def test_a_method_becomes_a_tool_bound_through_its_instance() -> None:
    assert set(props(Greeter.greet)) == {"name"}  # self is not an argument
    bound = Greeter("Hello").greet
    assert isinstance(bound, Tool) and bound.name == "greet"
    assert asyncio.run(bound.acall({"name": "Ada"})) == "Hello, Ada"
    assert Plan([{"_tool": "greet", "name": "Bo"}]).run([Greeter("Hi").greet]).output == "Hi, Bo"
    with pytest.raises(ToolDefinitionError, match="call it through an instance"):
        asyncio.run(Greeter.greet.acall({"name": "Ada"}))


def test_a_staticmethod_becomes_a_plain_tool() -> None:
    assert asyncio.run(Greeter.shout.acall({"text": "hi"})) == "HI"
    assert asyncio.run(Greeter("x").shout.acall({"text": "yo"})) == "YO"


def test_a_classmethod_is_refused_with_the_fix() -> None:
    with pytest.raises(ToolDefinitionError, match="plain method or a staticmethod"):

        class Bad:
            @tool  # type: ignore[arg-type]
            @classmethod
            def make(cls) -> None:
                pass


# ------------------------------------------------------------------ names


@pytest.mark.parametrize(
    "name", ["get weather", "a.b", "", "x" * 65, "héllo", "tool/name", "semi;colon"]
)
def test_names_the_providers_refuse_are_refused_when_the_tool_is_made(name: str) -> None:
    with pytest.raises(ToolDefinitionError, match="refused by model providers") as caught:
        Tool(name=name, fn=lambda: 1)
    assert isinstance(caught.value, PlanValidationError)  # one family for wiring mistakes
    with pytest.raises(ToolDefinitionError):
        tool(name=name)(lambda: 1)


@pytest.mark.parametrize("name", ["get_weather", "a-b", "X9", "x" * 64])
def test_names_the_providers_accept_are_kept(name: str) -> None:
    assert Tool(name=name, fn=lambda: 1).name == name


# ------------------------------------------------------------------ pickling


@tool
def module_tool(point: Point, color: Color = Color.RED) -> str:
    """Describe a point."""
    return f"{point.x},{point.y} {color.value}"


def describe(point: Point) -> int:
    return point.x


def test_a_decorated_module_level_tool_pickles_as_itself() -> None:
    assert pickle.loads(pickle.dumps(module_tool)) is module_tool


def test_a_tool_pickles_with_its_schema_and_keeps_converting_arguments() -> None:
    for original in (
        Tool(name="describe", fn=describe, strict=True),
        Tool(name="other_name", fn=module_tool.fn),
    ):
        copy = pickle.loads(pickle.dumps(original))
        assert copy == original
        assert copy.parameters == original.parameters
        assert copy.strict_parameters == original.strict_parameters
        assert isinstance(copy.check_arguments({"point": {"x": 1}})["point"], Point)
