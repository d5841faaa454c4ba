"""Instancing: a plan over N instances, each on its own fork, routed by ``_instance``."""

from __future__ import annotations

from typing import Any

import pytest

from weft.calls import Plan
from weft.errors import MergeConflictError, PlanValidationError
from weft.store import Store, reducers


def greet(name: str, greeting: str) -> str:
    return f"{greeting}, {name}"


TOOLS = {"greet": greet, "echo": lambda value: value}

PLAN = Plan(
    [
        {"_tool": "echo", "value": "Hello", "_outputPath": "†state.greeting"},
        {
            "_tool": "greet",
            "name": "†input.name",
            "greeting": "†state.greeting",
            "_outputPath": "†state.message",
            "_instance": "*",
        },
    ]
)


def test_each_instance_writes_its_own_fork() -> None:
    result = PLAN.run(TOOLS, instances={"a": {"name": "Ada"}, "b": {"name": "Bo"}})
    assert result.instances["a"].value("state", "message") == "Hello, Ada"
    assert result.instances["b"].value("state", "message") == "Hello, Bo"


def test_instance_results_are_never_merged_unless_asked() -> None:
    store = Store()
    PLAN.run(TOOLS, store=store, instances={"a": {"name": "Ada"}})
    assert not store.has("state", "message")


def test_global_calls_write_the_parent_and_instances_read_them() -> None:
    result = PLAN.run(TOOLS, instances={"a": {"name": "Ada"}})
    assert result.store.value("state", "greeting") == "Hello"
    assert result.results["1.greet@a"] == "Hello, Ada"


def test_targeted_inputs_override_global_ones() -> None:
    result = PLAN.run(TOOLS, inputs={"name": "everyone"}, instances={"a": {"name": "Ada"}, "b": {}})
    assert result.results["1.greet@a"] == "Hello, Ada"
    assert result.results["1.greet@b"] == "Hello, everyone"


def test_a_call_can_target_one_named_instance() -> None:
    plan = Plan([{"_tool": "echo", "value": "only a", "_outputPath": "†state.x", "_instance": "a"}])
    result = plan.run(TOOLS, instances=["a", "b"])
    assert result.instances["a"].value("state", "x") == "only a"
    assert not result.instances["b"].has("state", "x")


def test_an_unknown_instance_is_a_validation_problem() -> None:
    plan = Plan([{"_tool": "echo", "value": 1, "_instance": "zz"}])
    with pytest.raises(PlanValidationError, match="targets the instance 'zz'"):
        plan.validate(TOOLS, instances=["a"])


def test_a_global_call_cannot_read_what_only_instances_write() -> None:
    plan = Plan(
        [
            {"_tool": "echo", "value": 1, "_outputPath": "†state.x", "_instance": "*"},
            {"_tool": "echo", "value": "†state.x", "_outputPath": "†state.y"},
        ]
    )
    with pytest.raises(PlanValidationError, match="only instance calls write"):
        plan.validate(TOOLS, instances=["a"])


def test_instances_do_not_see_each_other() -> None:
    seen: dict[str, Any] = {}

    def peek(who: str, other: Any) -> str:
        seen[who] = other
        return who

    plan = Plan(
        [
            {
                "_tool": "echo",
                "value": "†input.name",
                "_outputPath": "†state.mine",
                "_instance": "*",
            },
            {"_tool": "peek", "who": "†input.name", "other": "†state.mine", "_instance": "*"},
        ]
    )
    plan.run({**TOOLS, "peek": peek}, instances={"a": {"name": "A"}, "b": {"name": "B"}})
    assert seen == {"A": "A", "B": "B"}


def test_merge_instances_merges_in_instance_order() -> None:
    plan = Plan(
        [
            {
                "_tool": "echo",
                "value": "†input.name",
                "_outputPath": "†state.names:push",
                "_instance": "*",
            }
        ]
    )
    store = Store(reducers={"state:names": reducers.append})  # merges go through reducers
    plan.run(
        TOOLS, store=store, instances={"b": {"name": "B"}, "a": {"name": "A"}}, merge_instances=True
    )
    assert store.value("state", "names") == ["B", "A"]


def test_merging_two_instances_that_replace_one_field_is_a_conflict() -> None:
    plan = Plan(
        [{"_tool": "echo", "value": "†input.name", "_outputPath": "†state.name", "_instance": "*"}]
    )
    with pytest.raises(MergeConflictError):
        plan.run(TOOLS, instances={"a": {"name": "A"}, "b": {"name": "B"}}, merge_instances=True)


def test_resume_remakes_instance_writes_into_new_forks() -> None:
    calls: list[str] = []
    crashed: list[bool] = []

    def record(name: str) -> str:
        calls.append(name)
        if name == "B" and not crashed:
            crashed.append(True)
            raise RuntimeError("crash")
        return name

    plan = Plan(
        [
            {
                "_tool": "record",
                "name": "†input.name",
                "_outputPath": "†state.got",
                "_instance": "*",
            },
            {
                "_tool": "echo",
                "value": "†state.got",
                "_outputPath": "†state.copy",
                "_instance": "*",
            },
        ]
    )
    store = Store()
    instances = {"a": {"name": "A"}, "b": {"name": "B"}}
    with pytest.raises(Exception, match="crash"):
        plan.run(
            {**TOOLS, "record": record},
            store=store,
            instances=instances,
            run_id="r1",
            max_concurrency=1,
        )
    calls.clear()
    result = plan.run({**TOOLS, "record": record}, store=store, instances=instances, run_id="r1")
    assert "A" not in calls
    assert result.instances["a"].value("state", "copy") == "A"
    assert result.instances["b"].value("state", "copy") == "B"


def test_a_thousand_instances_each_get_their_own_result() -> None:
    plan = Plan(
        [{"_tool": "echo", "value": "†input.n", "_outputPath": "†state.n", "_instance": "*"}]
    )
    instances = {f"i{n}": {"n": n} for n in range(1000)}
    result = plan.run(TOOLS, instances=instances)
    assert all(result.instances[f"i{n}"].value("state", "n") == n for n in range(1000))
