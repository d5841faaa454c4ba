"""Imports: an isolated module sees only what ``_imports`` names; its writes come back
only through its output path."""

from __future__ import annotations

from typing import Any

import pytest

from weft.calls import Plan, Tool
from weft.calls.imports import parse_import
from weft.errors import PlanValidationError, ReferenceSyntaxError
from weft.store import Store


def make_store() -> Store:
    store = Store()
    store.write("state", "topic", "otters")
    store.write("state", "secret", "hunter2")
    store.write("input", "user", {"name": "Ada", "email": "ada@example.org"})
    store.write("input", "token", "xyz")
    return store


def test_a_module_sees_only_its_imports() -> None:
    seen: dict[str, Any] = {}

    def module(*, store: Store) -> str:
        seen.update(store.to_dict())
        store.write("state", "scratch", "module's own")
        return "summary"

    tool = Tool(name="module", fn=module, isolated=True)
    plan = Plan(
        [
            {
                "_tool": "module",
                "_imports": ["state.topic", "input.user"],
                "_outputPath": "†state.summary",
            }
        ]
    )
    store = make_store()
    plan.run([tool], store=store)
    assert seen == {
        "input:user": {"name": "Ada", "email": "ada@example.org"},
        "state:topic": "otters",
    }
    assert store.value("state", "summary") == "summary"
    assert not store.has("state", "scratch")


def test_importing_a_kind_brings_all_its_fields() -> None:
    seen: dict[str, Any] = {}

    def module(*, store: Store) -> None:
        seen.update(store.to_dict())

    plan = Plan([{"_tool": "m", "_imports": ["state"]}])
    plan.run([Tool(name="m", fn=module, isolated=True)], store=make_store())
    assert set(seen) == {"state:topic", "state:secret"}


def test_a_nested_import_keeps_only_that_key() -> None:
    seen: dict[str, Any] = {}

    def module(*, store: Store) -> None:
        seen.update(store.to_dict())

    plan = Plan([{"_tool": "m", "_imports": ["input.user.name"]}])
    plan.run([Tool(name="m", fn=module, isolated=True)], store=make_store())
    assert seen == {"input:user": {"name": "Ada"}}


def test_a_reference_outside_the_imports_is_refused() -> None:
    tool = Tool(name="m", fn=lambda text, store: text, isolated=True)
    plan = Plan([{"_tool": "m", "text": "†state.secret", "_imports": ["state.topic"]}])
    with pytest.raises(PlanValidationError, match=r"its _imports .* do not bring"):
        plan.validate([tool], store=make_store())


def test_references_inside_the_imports_resolve_in_the_clean_room() -> None:
    tool = Tool(name="m", fn=lambda text, store: text.upper(), isolated=True)
    plan = Plan(
        [
            {
                "_tool": "m",
                "text": "†state.topic",
                "_imports": ["state.topic"],
                "_outputPath": "†state.t",
            }
        ]
    )
    assert plan.run([tool], store=make_store()).store.value("state", "t") == "OTTERS"


def test_imports_on_a_plain_tool_are_refused() -> None:
    plan = Plan([{"_tool": "t", "_imports": ["state"]}])
    with pytest.raises(PlanValidationError, match="not an isolated module"):
        plan.validate({"t": lambda: None})


def test_a_sub_plan_is_a_module() -> None:
    inner = Plan(
        [{"_tool": "shout", "text": "†state.topic", "_outputPath": "†state.loud"}],
        output="†state.loud",
    )
    shout = Tool(name="shout", fn=lambda text: text.upper() + "!")
    module = Tool.from_plan("research", inner, [shout])
    outer = Plan(
        [{"_tool": "research", "_imports": ["state.topic"], "_outputPath": "†state.result"}]
    )
    store = make_store()
    outer.run([module], store=store)
    assert store.value("state", "result") == "OTTERS!"
    assert not store.has("state", "loud")


def test_an_import_of_a_list_item_is_refused() -> None:
    with pytest.raises(ReferenceSyntaxError, match="names a list item"):
        parse_import("state.items[0]")
