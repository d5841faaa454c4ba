"""Tools: the ``@tool`` decorator builds a ``Tool`` from a function, and a list of tools
that holds something else is refused with the fix."""

from __future__ import annotations

import pytest

from weft.calls import Plan, Tool, tool
from weft.errors import PlanValidationError


@tool
def shout(text: str) -> str:
    """The text in capitals.

    Used by the tests.
    """
    return text.upper()


def test_bare_decorator_names_the_tool_after_the_function_and_describes_it_by_its_docstring() -> (
    None
):
    assert isinstance(shout, Tool)
    assert shout.name == "shout"
    assert shout.description == "The text in capitals.\n\nUsed by the tests."
    assert shout.parameters == {
        "type": "object",
        "properties": {"text": {"type": "string"}},
        "required": ["text"],
        "additionalProperties": False,
    }
    assert shout.fn is not None and shout.fn("a") == "A"


def test_a_decorated_tool_runs_in_a_plan() -> None:
    plan = Plan([{"_tool": "shout", "text": "hello", "_outputPath": "†state.loud"}])
    assert plan.run([shout]).store.value("state", "loud") == "HELLO"


def test_decorator_with_options_passes_them_to_the_tool() -> None:
    @tool(
        name="count",
        description="How many words.",
        parameters={"type": "object", "properties": {"text": {"type": "string"}}},
        output_examples=[3],
        blocking=False,
    )
    def words(text: str) -> int:
        return len(text.split())

    assert (words.name, words.description, words.output_examples, words.blocking) == (
        "count",
        "How many words.",
        (3,),
        False,
    )
    plan = Plan([{"_tool": "count", "text": 7, "_outputPath": "†state.n"}])
    with pytest.raises(PlanValidationError, match="do not fit the tool's JSON Schema"):
        plan.validate([words])
    assert Plan([{"_tool": "count", "text": "a b c"}]).simulate([words]).output == 3


def test_a_function_without_a_usable_name_needs_one() -> None:
    with pytest.raises(PlanValidationError, match=r"@tool\(name=\.\.\.\)"):
        tool(lambda text: text)
    assert tool(name="echo")(lambda text: text).name == "echo"


def test_decorating_something_that_is_not_callable_is_refused() -> None:
    with pytest.raises(PlanValidationError, match="from a function; 42 is not callable"):
        tool(42)  # type: ignore[call-overload]


def test_a_list_of_tools_holding_a_plain_function_names_the_fix() -> None:
    plan = Plan([{"_tool": "shout", "text": "x"}])
    with pytest.raises(PlanValidationError, match=r"not a weft\.calls\.Tool.*mapping"):
        plan.validate([shout.fn])  # type: ignore[list-item]
