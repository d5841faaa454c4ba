"""Plans at width and length: a chain of thousands of calls and a fan-out over thousands
of instances validate and run; the check for unordered writes to one field keeps its
verdicts however the writers are ordered."""

from __future__ import annotations

from typing import Any

import pytest

from weft.calls import Plan, Tool
from weft.calls.execute import Runtime
from weft.errors import PlanValidationError
from weft.store import Store


def inc(x: int) -> int:
    return x + 1


def scale(n: int, factor: int) -> int:
    return n * factor


def upper(text: str) -> str:
    return text.upper()


def first(items: list[str]) -> str:
    return items[0]


TOOLS = [
    Tool(name="inc", fn=inc),
    Tool(name="scale", fn=scale),
    Tool(name="upper", fn=upper),
    Tool(name="first", fn=first),
]


def problems_of(calls: list[dict[str, Any]], **options: Any) -> list[str]:
    with pytest.raises(PlanValidationError) as caught:
        Plan(calls).validate(TOOLS, **options)
    return [str(p) for p in caught.value.problems]


def test_a_chain_of_5000_calls_runs_to_its_last_value() -> None:
    n = 5000
    calls = [{"_tool": "inc", "x": 0, "_outputPath": "†state.v0"}]
    calls += [
        {"_tool": "inc", "x": f"†state.v{i}", "_outputPath": f"†state.v{i + 1}"}
        for i in range(n - 1)
    ]
    assert Plan(calls).run(TOOLS).store.value("state", f"v{n - 1}") == n


def test_a_fan_out_over_5000_instances_gives_each_its_own_result() -> None:
    n = 5000
    plan = Plan(
        [
            {"_tool": "inc", "x": 1, "_outputPath": "†state.factor"},
            {
                "_tool": "scale",
                "n": "†input.n",
                "factor": "†state.factor",
                "_outputPath": "†state.scaled",
                "_instance": "*",
            },
        ]
    )
    result = plan.run(TOOLS, instances={f"i{k}": {"n": k} for k in range(n)})
    assert [result.instances[f"i{k}"].value("state", "scaled") for k in (0, 7, n - 1)] == [
        0,
        14,
        2 * (n - 1),
    ]


def test_a_set_that_reads_what_a_push_wrote_is_ordered_after_it() -> None:
    plan = Plan(
        [
            {"_tool": "upper", "text": "a", "_outputPath": "†state.log:push"},
            {"_tool": "first", "items": "†state.log", "_outputPath": "†state.log"},
        ]
    )
    assert plan.run(TOOLS).store.value("state", "log") == "A"


def test_a_push_that_reads_what_a_set_wrote_is_ordered_after_it() -> None:
    plan = Plan(
        [
            {"_tool": "upper", "text": "a", "_outputPath": "†state.log"},
            {"_tool": "upper", "text": "†state.log", "_outputPath": "†state.log:push"},
        ]
    )
    plan.validate(TOOLS)


def test_a_set_and_a_push_of_one_field_with_no_order_conflict() -> None:
    found = problems_of(
        [
            {"_tool": "upper", "text": "a", "_outputPath": "†state.log:push"},
            {"_tool": "upper", "text": "b", "_outputPath": "†state.log"},
        ]
    )
    assert len(found) == 1
    assert found[0].startswith("call 0 (upper") and "call 1 (upper)" in found[0]
    assert "both write †state.log (one sets it) with no order between them" in found[0]


def test_two_unordered_sets_at_the_ends_of_a_long_chain_are_reported_once() -> None:
    n = 5000
    calls = [{"_tool": "inc", "x": 0, "_outputPath": "†state.v0"}]
    calls += [
        {"_tool": "inc", "x": f"†state.v{i}", "_outputPath": f"†state.v{i + 1}"}
        for i in range(n - 1)
    ]
    calls.insert(0, {"_tool": "inc", "x": 1, "_outputPath": "†state.total"})
    calls.append({"_tool": "inc", "x": f"†state.v{n - 1}", "_outputPath": "†state.total"})
    found = problems_of(calls)
    assert len(found) == 1
    assert found[0].startswith("call 0 (inc")
    assert f"call {n + 1} (inc)" in found[0]


PUSH_PLAN = [
    {"_tool": "inc", "x": 1, "_outputPath": "†state.factor"},
    {
        "_tool": "scale",
        "n": "†input.n",
        "factor": "†state.factor",
        "_outputPath": "†state.scaled:push",
        "_instance": "*",
    },
]


def test_merging_5000_instances_pushes_their_results_in_instance_order() -> None:
    n = 5000
    instances = {f"i{k}": {"n": k} for k in range(n)}
    result = Plan(PUSH_PLAN).run(TOOLS, instances=instances, merge_instances=True)
    assert result.store.value("state", "scaled") == [2 * k for k in range(n)]


class CountingRecords(dict[int, Any]):
    """Records of finished calls that count how often they are looked up."""

    looked_up = 0

    def get(self, key: int, default: Any = None) -> Any:
        CountingRecords.looked_up += 1
        return super().get(key, default)


def test_merging_instances_looks_up_each_call_s_record_once() -> None:
    n = 500
    store = Store()
    compiled = Plan(PUSH_PLAN).validate(TOOLS, instances={f"i{k}": {"n": k} for k in range(n)})
    runtime = Runtime(compiled, store)
    records = CountingRecords(
        {node.position: {"value": node.position, "alt": 0} for node in compiled.nodes}
    )
    CountingRecords.looked_up = 0
    runtime.merge_instances(records)
    assert CountingRecords.looked_up <= len(compiled.nodes)  # it was instances x calls
    assert store.value("state", "scaled") == list(range(1, n + 1))


class CountingId(str):
    """An instance id that counts how often it is compared."""

    compared = 0
    __hash__ = str.__hash__

    def __eq__(self, other: object) -> bool:
        CountingId.compared += 1
        return str.__eq__(self, other)


def test_a_call_per_instance_finds_its_instance_without_comparing_it_with_every_other() -> None:
    n = 2000
    calls = [
        {
            "_tool": "scale",
            "n": "†input.n",
            "factor": 2,
            "_outputPath": "†state.s",
            "_instance": f"i{k}",
        }
        for k in range(n)
    ]
    instances = {CountingId(f"i{k}"): {"n": k} for k in range(n)}
    CountingId.compared = 0
    compiled = Plan(calls).validate(TOOLS, instances=instances)
    assert CountingId.compared <= 2 * n  # it was n * n / 2: each call's id against the list
    assert [node.instance for node in compiled.nodes[:3]] == ["i0", "i1", "i2"]


@pytest.mark.parametrize("spec", [[["i0"]], [{"id": "i0"}], ["i0", "i9"]])
def test_an_instance_that_is_no_known_id_is_a_problem_naming_it(spec: Any) -> None:
    found = problems_of(
        [{"_tool": "upper", "text": "a", "_outputPath": "†state.s", "_instance": spec}],
        instances=["i0", "i1"],
    )
    assert len(found) == 1
    assert "which the run does not have (i0, i1)" in found[0]


def test_each_instance_s_store_is_found_by_a_lookup() -> None:
    n = 2000
    plan = Plan([PUSH_PLAN[0], {**PUSH_PLAN[1], "_outputPath": "†state.scaled"}])
    result = plan.run(TOOLS, instances={CountingId(f"i{k}"): {"n": k} for k in range(n)})
    CountingId.compared = 0
    assert [result.instances[f"i{k}"].value("state", "scaled") for k in range(n)] == [
        2 * k for k in range(n)
    ]
    assert CountingId.compared <= 2 * n  # it was n * n / 2: each name against the tuple
    assert list(result.instances)[:2] == ["i0", "i1"] and len(result.instances) == n
