"""The quick check of a tool's JSON Schema never says yes to a value that the full
validator refuses, and says yes to the plain valid arguments tools usually get."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from weft.refs.quick import quick_check
from weft.refs.schemas import validator_for

scalar_types = st.sampled_from(["string", "integer", "number", "boolean", "null"])
leaf = st.one_of(
    st.builds(lambda t: {"type": t}, scalar_types),
    st.builds(lambda ts: {"type": ts}, st.lists(scalar_types, min_size=1, max_size=3)),
    st.builds(
        lambda opts: {"enum": opts},
        st.lists(st.one_of(st.text(max_size=3), st.booleans(), st.none()), min_size=1),
    ),
    st.just({"description": "anything"}),
    st.just({"type": "integer", "minimum": 0}),  # outside the subset: no quick check
)
schemas = st.recursive(
    leaf,
    lambda inner: st.one_of(
        st.builds(lambda items: {"type": "array", "items": items}, inner),
        st.builds(
            lambda props, closed, n: {
                "type": "object",
                "properties": props,
                "required": sorted(props)[:n],
                "additionalProperties": not closed,
            },
            st.dictionaries(st.sampled_from(["a", "b", "c"]), inner, max_size=3),
            st.booleans(),
            st.integers(0, 3),
        ),
    ),
    max_leaves=6,
)
values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=3),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(st.sampled_from(["a", "b", "c", "d"]), inner, max_size=4)
    ),
    max_leaves=8,
)


@settings(max_examples=400, deadline=None)
@given(schema=schemas, value=values)
def test_a_quick_yes_is_always_a_yes_of_the_full_validator(
    schema: dict[str, Any], value: Any
) -> None:
    check = quick_check(schema)
    if check is not None and check(value):
        assert validator_for(schema).is_valid(value), (schema, value)


def test_the_usual_tool_arguments_get_a_quick_yes() -> None:
    schema = {
        "type": "object",
        "properties": {
            "city": {"type": "string", "description": "A city"},
            "days": {"type": "integer"},
            "units": {"enum": ["metric", "imperial"]},
            "tags": {"type": "array", "items": {"type": "string"}},
        },
        "required": ["city"],
        "additionalProperties": False,
    }
    check = quick_check(schema)
    assert check is not None
    assert check({"city": "Oslo", "days": 3, "units": "metric", "tags": ["a"]})
    assert not check({"city": "Oslo", "extra": 1})  # not sure: the full validator decides
    assert not check({"days": 3})
    assert quick_check({"type": "string", "pattern": "^a"}) is None  # outside the subset
    assert quick_check(schema) is check  # compiled once per schema object
