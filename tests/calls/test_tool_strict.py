"""OpenAI's strict form: ``strict_schema`` and ``Tool(strict=True)`` give schemas that keep
every rule of strict mode (checked by an independent checker below), the memory tools
too, and a model's ``null`` for an optional argument means "not given"."""

from __future__ import annotations

import asyncio
import datetime
import enum
from collections.abc import Iterator, Mapping
from typing import Annotated, Any, Literal

import pytest
from pydantic import BaseModel, Field

from weft.calls import Tool, strict_schema, tool
from weft.errors import ToolArgumentsError, ToolDefinitionError
from weft.memory import AgentMemory, memory_tools

# ------------------------------------------------------------------ the rules
# Written from OpenAI's structured-outputs documentation ("Supported schemas"), apart from
# the code under test: what strict mode accepts in a function's parameters.

TYPES = {"string", "number", "integer", "boolean", "object", "array", "null"}
FORMATS = {"date-time", "time", "date", "duration", "email", "hostname", "ipv4", "ipv6", "uuid"}
ANY = {"description", "title", "type", "enum", "const", "anyOf", "$ref"}
BY_TYPE = {
    "object": {"properties", "required", "additionalProperties"},
    "array": {"items", "minItems", "maxItems"},
    "string": {"pattern", "format"},
    "number": {"multipleOf", "maximum", "exclusiveMaximum", "minimum", "exclusiveMinimum"},
    "integer": {"multipleOf", "maximum", "exclusiveMaximum", "minimum", "exclusiveMinimum"},
    "boolean": set(),
    "null": set(),
}
MAX_NESTING = 10
MAX_PROPERTIES = 5000


def strict_violations(schema: Mapping[str, Any]) -> list[str]:
    """Every way ``schema`` breaks OpenAI's strict-mode rules for function parameters."""
    found: list[str] = []
    if schema.get("type") != "object" or "anyOf" in schema:
        found.append("the root must be an object, not anyOf")
    counted = [0]
    defs = schema.get("$defs", {})
    for name, sub in defs.items():
        _check(sub, f"$defs.{name}", found, counted, 0)
    _check({k: v for k, v in schema.items() if k != "$defs"}, "root", found, counted, 0)
    if counted[0] > MAX_PROPERTIES:
        found.append(f"{counted[0]} properties, over {MAX_PROPERTIES}")
    return found


def _types(node: Mapping[str, Any]) -> list[str]:
    kind = node.get("type")
    return kind if isinstance(kind, list) else [kind] if kind else []


def _check(node: Any, where: str, found: list[str], counted: list[int], depth: int) -> None:
    if not isinstance(node, Mapping):
        found.append(f"{where}: not a schema")
        return
    if "$ref" in node and len(node) > 1:
        found.append(f"{where}: $ref with other keywords {sorted(set(node) - {'$ref'})}")
    if not any(k in node for k in ("type", "anyOf", "$ref", "enum", "const")):
        found.append(f"{where}: no type")
    kinds = _types(node)
    allowed = set(ANY)
    for kind in kinds:
        if kind not in TYPES:
            found.append(f"{where}: unknown type {kind!r}")
        allowed |= BY_TYPE.get(kind, set())
    for key in node:
        if key not in allowed:
            found.append(f"{where}: keyword {key!r} is not supported")
    if "format" in node and node["format"] not in FORMATS:
        found.append(f"{where}: format {node['format']!r} is not supported")
    if "object" in kinds:
        if depth >= MAX_NESTING:
            found.append(f"{where}: objects nest deeper than {MAX_NESTING}")
        properties = node.get("properties", {})
        counted[0] += len(properties)
        if node.get("additionalProperties") is not False:
            found.append(f"{where}: additionalProperties is not false")
        if list(node.get("required", [])) != list(properties):
            found.append(f"{where}: required does not list every property")
        for name, sub in properties.items():
            _check(sub, f"{where}.{name}", found, counted, depth + 1)
    if "array" in kinds:
        _check(node.get("items"), f"{where}[]", found, counted, depth)
    for index, option in enumerate(node.get("anyOf", [])):
        _check(option, f"{where}.anyOf[{index}]", found, counted, depth)


def test_the_checker_finds_what_strict_mode_refuses() -> None:
    assert strict_violations({"type": "object", "properties": {}}) == [
        "root: additionalProperties is not false"
    ]
    bad = {
        "type": "object",
        "properties": {"a": {"type": "string", "minLength": 1, "default": "x"}, "b": {}},
        "required": ["a"],
        "additionalProperties": False,
    }
    assert set(strict_violations(bad)) == {
        "root: required does not list every property",
        "root.a: keyword 'minLength' is not supported",
        "root.a: keyword 'default' is not supported",
        "root.b: no type",
    }


# ------------------------------------------------------------------ strict_schema


class Size(enum.Enum):
    S = "s"
    L = "l"


class Item(BaseModel):
    name: Annotated[str, Field(min_length=1, max_length=40)]
    size: Size = Size.S
    note: str | None = None


class Order(BaseModel):
    items: list[Item]
    gift: Item | None = None


def place(
    order: Order,
    when: datetime.datetime,
    channel: Literal["web", "phone"] = "web",
    quantity: Annotated[int, Field(ge=1, le=10, description="How many")] = 1,
    tags: list[str] | None = None,
    code: Annotated[str, Field(pattern=r"^[A-Z]{3}$")] = "ABC",
) -> dict[str, Any]:
    """Place an order."""
    return {"order": order, "channel": channel, "quantity": quantity, "tags": tags, "code": code}


def test_an_inferred_schema_in_strict_form_keeps_every_rule() -> None:
    t = Tool(name="place", fn=place, strict=True)
    assert t.strict_parameters is not None
    assert strict_violations(t.strict_parameters) == []
    assert strict_violations(t.parameters) != []  # the full form is not strict


def test_optional_arguments_become_required_and_nullable_with_the_default_described() -> None:
    form = strict_schema(Tool(name="place", fn=place).parameters)
    props = form["properties"]
    assert form["required"] == ["order", "when", "channel", "quantity", "tags", "code"]
    assert props["channel"] == {
        "type": ["string", "null"],
        "enum": ["web", "phone", None],
        "description": 'Default: "web".',
    }
    assert props["quantity"] == {
        "type": ["integer", "null"],
        "minimum": 1,
        "maximum": 10,
        "description": "How many Default: 1.",
    }
    assert props["tags"]["anyOf"][-1] == {"type": "null"}
    assert props["when"] == {"type": "string", "format": "date-time"}
    assert props["code"]["pattern"] == "^[A-Z]{3}$"
    item = form["$defs"]["Item"]
    assert item["required"] == ["name", "size", "note"]
    assert item["properties"]["name"] == {"type": "string"}  # minLength, maxLength left out
    assert item["properties"]["size"] == {  # inlined: its default stood beside the $ref
        "type": ["string", "null"],
        "enum": ["s", "l", None],
        "title": "Size",
        "description": 'Default: "s".',
    }


def test_the_strict_form_of_a_strict_form_is_the_same() -> None:
    once = strict_schema(Tool(name="place", fn=place).parameters)
    assert strict_schema(once) == once


def test_one_of_becomes_any_of_and_a_ref_beside_a_description_is_inlined() -> None:
    schema = {
        "type": "object",
        "properties": {
            "p": {"$ref": "#/$defs/P", "description": "A point"},
            "v": {"oneOf": [{"type": "integer"}, {"type": "string"}]},
        },
        "required": ["p", "v"],
        "$defs": {"P": {"type": "object", "properties": {"x": {"type": "integer"}}}},
    }
    form = strict_schema(schema)
    assert strict_violations(form) == []
    assert form["properties"]["p"]["description"] == "A point"
    assert form["properties"]["p"]["properties"] == {"x": {"type": ["integer", "null"]}}
    assert form["properties"]["v"] == {"anyOf": [{"type": "integer"}, {"type": "string"}]}


def test_a_schema_that_is_strict_already_is_kept() -> None:
    schema = {
        "type": "object",
        "properties": {"q": {"type": "string"}, "n": {"type": ["integer", "null"]}},
        "required": ["q", "n"],
        "additionalProperties": False,
    }
    assert strict_schema(schema) == schema


@pytest.mark.parametrize(
    ("hint", "fragment"),
    [
        (dict[str, int], "an object with no named fields"),
        (Any, "accepts any JSON value"),
        (tuple[int, str], "fixed-length tuple"),
    ],
    ids=["open-mapping", "any", "tuple"],
)
def test_what_strict_mode_cannot_express_is_refused_when_the_tool_is_made(
    hint: Any, fragment: str
) -> None:
    def f(value: int) -> None:
        pass

    f.__annotations__["value"] = hint
    with pytest.raises(
        ToolDefinitionError, match=rf"tool 'f': strict=True, but .*value.*{fragment}"
    ):
        Tool(name="f", fn=f, strict=True)
    assert Tool(name="f", fn=f).strict is False  # fine without strict


def test_objects_nested_past_the_limit_are_refused() -> None:
    schema: dict[str, Any] = {"type": "object", "properties": {}}
    node = schema
    for _ in range(11):
        child: dict[str, Any] = {"type": "object", "properties": {}}
        node["properties"]["c"] = child
        node = child
    with pytest.raises(ToolDefinitionError, match="nest deeper than 10"):
        strict_schema(schema)


def test_a_root_that_is_not_an_object_is_refused() -> None:
    with pytest.raises(ToolDefinitionError, match="must be an object"):
        strict_schema({"anyOf": [{"type": "object"}]})


# ------------------------------------------------------------------ nulls on arrival


def test_a_null_for_an_optional_argument_means_not_given() -> None:
    seen: list[dict[str, Any]] = []

    @tool(strict=True)
    def note(text: str, times: int = 2, item: Item | None = None) -> None:
        seen.append({"text": text, "times": times, "item": item})

    asyncio.run(note.acall({"text": "a", "times": None, "item": None}))
    asyncio.run(
        note.acall({"text": "b", "times": 3, "item": {"name": "x", "size": None, "note": None}})
    )
    assert seen[0] == {"text": "a", "times": 2, "item": None}
    assert seen[1]["times"] == 3 and seen[1]["item"] == Item(name="x", size=Size.S, note=None)
    with pytest.raises(ToolArgumentsError, match="argument 'text' is invalid"):
        asyncio.run(note.acall({"text": None, "times": None, "item": None}))


def test_without_strict_a_null_for_an_integer_is_refused() -> None:
    @tool
    def count(times: int = 2) -> int:
        return times

    with pytest.raises(ToolArgumentsError, match="argument 'times' is invalid"):
        asyncio.run(count.acall({"times": None}))


# ------------------------------------------------------------------ memory tools


def schemas(tools: Iterator[Any]) -> dict[str, dict[str, Any]]:
    return {t.name: t.openai()["function"] for t in tools}


def test_the_memory_tools_break_strict_rules_unless_asked() -> None:
    plain = schemas(iter(memory_tools(AgentMemory())))
    assert strict_violations(plain["memory_list"]["parameters"]) != []
    assert strict_violations(plain["memory_write"]["parameters"]) != []
    assert all("strict" not in f for f in plain.values())


@pytest.mark.parametrize("name", ["memory_list", "memory_read", "memory_write"])
def test_each_memory_tool_in_strict_form_keeps_every_rule(name: str) -> None:
    function = schemas(iter(memory_tools(AgentMemory(), strict=True)))[name]
    assert function["strict"] is True
    assert strict_violations(function["parameters"]) == []
    assert function["parameters"]["required"] == list(function["parameters"]["properties"])


def test_strict_memory_tools_take_nulls_and_json_text_values() -> None:
    memory = AgentMemory()
    tools = memory_tools(memory, strict=True)
    written = tools.memory_write(
        {"key": "plan", "value_json": '{"steps": [1, 2]}', "title": None, "description": None}
    )
    assert written["ok"] is True
    listed = tools.memory_list({"kind": None, "key_prefix": None, "sources": None})
    assert [e["key"] for e in listed["entries"]] == ["shared:plan"]
    read = tools.memory_read({"keys": ["shared:plan"]})
    assert read["entries"]["shared:plan"]["value"] == {"steps": [1, 2]}
    refused = tools.memory_write(
        {"key": "x", "value_json": "{nope", "title": None, "description": None}
    )
    assert refused["ok"] is False and "value_json is not JSON text" in refused["error"]
    assert not memory.has("shared:x")
    extra = tools.memory_list({"kind": None, "key_prefix": None, "sources": None, "limit": 3})
    assert "unknown argument 'limit'" in extra["error"]
