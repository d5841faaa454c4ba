"""Plans: validation that lists every problem before anything runs, runs on the WorkGraph
engine, simulation, prescribed output paths, ordering of reduced writes, and resume."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest

from weft.calls import Call, Plan, Tool
from weft.errors import PlanRunError, PlanValidationError
from weft.persist import DurableRun, InMemoryBackend
from weft.refs import ChosenPath
from weft.store import Store


def fetch_user_profile(userId: int) -> dict[str, Any]:
    return {"id": userId, "name": f"user-{userId}"}


FETCH = Tool(
    name="fetchUserProfile",
    fn=fetch_user_profile,
    parameters={
        "type": "object",
        "properties": {"userId": {"type": "integer"}},
        "required": ["userId"],
        "additionalProperties": False,
    },
    output_examples=({"id": 1, "name": "example"},),
)


def upper(text: str) -> str:
    return text.upper()


UPPER = Tool(name="upper", fn=upper, output_examples=("EXAMPLE",))


def seed_store() -> Store:
    store = Store()
    store.write("state", "currentUser", {"id": 7})
    return store


def problems_of(plan: Plan, tools: list[Tool], **options: Any) -> list[str]:
    with pytest.raises(PlanValidationError) as caught:
        plan.validate(tools, **options)
    return [str(p) for p in caught.value.problems]


# ------------------------------------------------------------------------ seed


def test_seed_call_reads_the_current_user_and_writes_the_profile() -> None:
    store = seed_store()
    plan = Plan(
        [
            {
                "_tool": "fetchUserProfile",
                "userId": "†state.currentUser.id",
                "_outputPath": "†state.profile",
            }
        ]
    )
    result = plan.run([FETCH], store=store)
    assert store.value("state", "profile") == {"id": 7, "name": "user-7"}
    assert store.get("state", "profile").source == "0.fetchUserProfile"  # type: ignore[union-attr]
    assert result.output == {"id": 7, "name": "user-7"}


def test_call_round_trips_its_json_form() -> None:
    data = {"_tool": "t", "a": 1, "_outputPath": "†state.x", "_instance": "*", "_id": "c"}
    assert Call.from_json(data).to_json() == data


# ----------------------------------------------------------------- validation


def test_every_problem_is_listed_at_once() -> None:
    plan = Plan(
        [
            {"_tool": "fetchUserProfil", "userId": 1},
            {"_tool": "fetchUserProfile", "userId": "seven", "_outputPath": "†state.p"},
            {"_tool": "upper", "text": "†state.nowhere", "_outputPath": "†state.q"},
            {"_tool": "upper", "text": "†stat.x"},
        ]
    )
    found = problems_of(plan, [FETCH, UPPER])
    assert len(found) == 4
    assert "did you mean fetchUserProfile" in found[0]
    assert "'seven' is not of type 'integer'" in found[1]
    assert "†state.nowhere, which no call writes and nothing provides" in found[2]
    assert "unknown kind 'stat'" in found[3]  # problems come in call order


def test_problems_name_the_call_index_tool_and_id() -> None:
    plan = Plan([{"_tool": "fetchUserProfile", "userId": "x", "_id": "lookup"}])
    assert problems_of(plan, [FETCH])[0].startswith("call 0 (fetchUserProfile, id 'lookup'): ")


def test_literal_arguments_are_checked_but_references_wait_for_the_run() -> None:
    plan = Plan([{"_tool": "fetchUserProfile", "userId": "†state.currentUser.id"}])
    plan.validate([FETCH], store=seed_store())  # a reference passes validation


def test_a_reference_of_the_wrong_type_is_refused_when_the_call_runs() -> None:
    store = Store()
    store.write("state", "currentUser", {"id": "not a number"})
    plan = Plan([{"_tool": "fetchUserProfile", "userId": "†state.currentUser.id"}])
    with pytest.raises(PlanRunError, match="do not fit the tool's JSON Schema") as caught:
        plan.run([FETCH], store=store)
    assert caught.value.call == "0.fetchUserProfile"


def test_a_missing_required_argument_is_found() -> None:
    found = problems_of(Plan([{"_tool": "fetchUserProfile"}]), [FETCH])
    assert "'userId' is a required property" in found[0]


def test_reads_of_inputs_need_the_inputs() -> None:
    plan = Plan([{"_tool": "upper", "text": "†input.topic"}])
    assert "†input.topic" in problems_of(plan, [UPPER])[0]
    plan.validate([UPPER], inputs={"topic": "otters"})


def test_a_fallback_is_provided_when_any_alternative_is() -> None:
    plan = Plan([{"_tool": "upper", "text": "†state.custom || †input.topic"}])
    plan.validate([UPPER], inputs={"topic": "otters"})


def test_a_cycle_is_reported_with_its_calls() -> None:
    plan = Plan(
        [
            {"_tool": "upper", "text": "†state.b", "_outputPath": "†state.a"},
            {"_tool": "upper", "text": "†state.a", "_outputPath": "†state.b"},
        ]
    )
    found = problems_of(plan, [UPPER])
    assert len(found) == 1
    assert "cycle: call 0 (upper) -> call 1 (upper) -> call 0 (upper)" in found[0] or (
        "cycle: call 1 (upper) -> call 0 (upper) -> call 1 (upper)" in found[0]
    )


def test_two_unordered_sets_of_one_path_conflict() -> None:
    plan = Plan(
        [
            {"_tool": "upper", "text": "a", "_outputPath": "†state.summary"},
            {"_tool": "upper", "text": "b", "_outputPath": "†state.summary.text"},
        ]
    )
    found = problems_of(plan, [UPPER])
    assert "both write †state.summary (one sets it) with no order between them" in found[0]


def test_ordered_sets_of_one_path_do_not_conflict() -> None:
    plan = Plan(
        [
            {"_tool": "upper", "text": "a", "_outputPath": "†state.summary"},
            {"_tool": "upper", "text": "†state.summary", "_outputPath": "†state.summary"},
        ]
    )
    result = plan.run([UPPER])
    assert result.store.value("state", "summary") == "A"


def test_unordered_pushes_are_allowed() -> None:
    plan = Plan([{"_tool": "upper", "text": t, "_outputPath": "†state.log:push"} for t in "abc"])
    assert plan.run([UPPER]).store.value("state", "log") == ["A", "B", "C"]


def test_unordered_sets_into_one_field_are_refused_and_merge_collects_them() -> None:
    plan = Plan(
        [
            {"_tool": "upper", "text": "a", "_outputPath": "†state.squares.a"},
            {"_tool": "upper", "text": "b", "_outputPath": "†state.squares.b"},
        ]
    )
    with pytest.raises(PlanValidationError, match=r"both write into †state.squares .*:merge"):
        plan.validate([UPPER])  # each would replace the whole field: refused before running
    keyed = Tool(name="keyed", fn=lambda key: {key: key.upper()})
    merged = Plan(
        [{"_tool": "keyed", "key": k, "_outputPath": "†state.squares:merge"} for k in "ab"]
    )
    assert merged.run([keyed]).store.value("state", "squares") == {"a": "A", "b": "B"}


def test_unordered_pushes_land_in_plan_order_whoever_finishes_first() -> None:
    release = {name: asyncio.Event() for name in "abc"}

    async def slow(name: str) -> str:
        await release[name].wait()
        return name

    async def drive() -> Any:
        plan = Plan([{"_tool": "slow", "name": n, "_outputPath": "†state.log:push"} for n in "abc"])
        task = asyncio.ensure_future(plan.arun([Tool(name="slow", fn=slow)]))
        for name in "cba":  # finish in reverse
            await asyncio.sleep(0)
            release[name].set()
            await asyncio.sleep(0)
        return await task

    result = asyncio.run(drive())
    assert result.store.value("state", "log") == ["a", "b", "c"]


def test_only_unordered_writers_of_one_field_make_a_plan_sequenced() -> None:
    def plan(*outputs: str) -> Plan:
        return Plan([{"_tool": "upper", "text": "x", "_outputPath": out} for out in outputs])

    assert not plan("†state.a", "†state.b").validate([UPPER]).sequenced
    assert plan("†state.log:push", "†state.log:push").validate([UPPER]).sequenced
    ordered = Plan(  # each push reads the one before: ordered, not sequenced
        [
            {"_tool": "upper", "text": "a", "_outputPath": "†state.log:push && †state.f0"},
            {"_tool": "upper", "text": "†state.f0", "_outputPath": "†state.log:push && †state.f1"},
            {"_tool": "upper", "text": "†state.f1", "_outputPath": "†state.log:push"},
        ]
    )
    assert not ordered.validate([UPPER]).sequenced
    assert ordered.run([UPPER]).store.value("state", "log") == ["A", "A", "A"]


def test_duplicate_ids_are_refused() -> None:
    plan = Plan(
        [{"_tool": "upper", "text": "a", "_id": "x"}, {"_tool": "upper", "text": "b", "_id": "x"}]
    )
    assert "also the id of call 0" in problems_of(plan, [UPPER])[0]


# --------------------------------------------------------- prescribed paths


def reporter(schema: dict[str, Any]) -> Tool:
    def report(ok: bool) -> Any:
        return ChosenPath("†state.success" if ok else "†state.failure", {"ok": ok})

    return Tool(
        name="report",
        fn=report,
        parameters={
            "type": "object",
            "properties": {"ok": {"type": "boolean"}, "_outputPath": schema},
        },
    )


ENUM = {"enum": ["†state.success", "†state.failure"]}


def test_enum_prescribed_path_accepts_one_of_its_members() -> None:
    plan = Plan([{"_tool": "report", "ok": False, "_outputPath": "†state.failure"}])
    assert plan.run([reporter(ENUM)]).store.value("state", "failure") == {"ok": False}


def test_enum_prescribed_path_refuses_another_before_it_runs() -> None:
    calls: list[bool] = []
    tool = reporter(ENUM)
    plan = Plan([{"_tool": "report", "ok": True, "_outputPath": "†state.elsewhere"}])
    with pytest.raises(PlanValidationError, match="not one the tool prescribes"):
        plan.run([tool])
    assert calls == []


def test_enum_members_joined_by_or_let_the_tool_pick() -> None:
    plan = Plan(
        [{"_tool": "report", "ok": True, "_outputPath": "†state.success || †state.failure"}]
    )
    store = plan.run([reporter(ENUM)]).store
    assert store.value("state", "success") == {"ok": True}
    assert not store.has("state", "failure")


def test_const_prescribed_path_is_the_default() -> None:
    plan = Plan([{"_tool": "report", "ok": True}])
    tool = reporter({"const": "†state.success"})
    assert plan.run([tool]).store.value("state", "success") == {"ok": True}


def test_free_output_path_schema_takes_any_path() -> None:
    plan = Plan([{"_tool": "report", "ok": True, "_outputPath": "†state.success || †state.x"}])
    plan.validate([reporter({"type": "string"})])


# -------------------------------------------------------------------- running


def test_independent_calls_run_concurrently() -> None:
    barrier = threading.Barrier(3, timeout=5)

    def meet(n: int) -> int:
        barrier.wait()  # only returns once all three run at the same time
        return n

    plan = Plan([{"_tool": "meet", "n": n, "_outputPath": f"†state.n{n}"} for n in range(3)])
    result = plan.run({"meet": meet})
    assert [result.store.value("state", f"n{n}") for n in range(3)] == [0, 1, 2]


def test_a_failing_tool_is_a_plan_run_error_naming_the_call() -> None:
    def boom(text: str) -> str:
        raise ValueError("no network")

    plan = Plan([{"_tool": "boom", "text": "x", "_id": "fetch-page"}])
    with pytest.raises(PlanRunError, match=r"'fetch-page'.*ValueError: no network") as caught:
        plan.run({"boom": boom})
    assert isinstance(caught.value.__cause__, ValueError)


def test_plan_output_reference_is_read_at_the_end() -> None:
    plan = Plan(
        [{"_tool": "upper", "text": "done", "_outputPath": "†state.final"}], output="†state.final"
    )
    assert plan.run([UPPER]).output == "DONE"


def test_async_tools_are_awaited() -> None:
    async def shout(text: str) -> str:
        await asyncio.sleep(0)
        return text + "!"

    plan = Plan([{"_tool": "shout", "text": "hi", "_outputPath": "†state.x"}])
    assert plan.run({"shout": shout}).store.value("state", "x") == "hi!"


def test_a_chain_of_references_flows_values_typed() -> None:
    def double(x: int) -> int:
        return 2 * x

    plan = Plan(
        [{"_tool": "double", "x": 1, "_outputPath": "†state.v0"}]
        + [
            {"_tool": "double", "x": f"†state.v{i}", "_outputPath": f"†state.v{i + 1}"}
            for i in range(10)
        ]
    )
    assert plan.run({"double": double}).store.value("state", "v10") == 2**11


# ------------------------------------------------------------------ simulate


def test_simulate_uses_output_examples_and_leaves_the_store_alone() -> None:
    calls: list[int] = []
    tool = Tool(
        name="fetchUserProfile",
        fn=lambda userId: calls.append(userId),
        output_examples=({"id": 1, "name": "example"},),
    )
    store = seed_store()
    plan = Plan(
        [
            {
                "_tool": "fetchUserProfile",
                "userId": "†state.currentUser.id",
                "_outputPath": "†state.p",
            },
            {"_tool": "upper", "text": "†state.p.name", "_outputPath": "†state.shout"},
        ]
    )
    result = plan.simulate([tool, UPPER], store=store)
    assert result.simulated and calls == []
    assert result.store.value("state", "p") == {"id": 1, "name": "example"}
    assert not store.has("state", "p")


def test_simulate_catches_a_reference_the_examples_do_not_satisfy() -> None:
    plan = Plan(
        [
            {"_tool": "fetchUserProfile", "userId": 1, "_outputPath": "†state.p"},
            {"_tool": "upper", "text": "†state.p.email", "_outputPath": "†state.x"},
        ]
    )
    with pytest.raises(PlanRunError, match="has no key 'email'; its keys are: id, name"):
        plan.simulate([FETCH, UPPER])


def test_simulate_needs_examples() -> None:
    plan = Plan([{"_tool": "t", "x": 1}])
    with pytest.raises(PlanValidationError, match="declares no output_examples"):
        plan.simulate({"t": lambda x: x})


# -------------------------------------------------------------------- resume


def test_resume_skips_finished_calls() -> None:
    seen: list[str] = []

    def step(name: str) -> str:
        seen.append(name)
        if len(seen) == 2:  # the second call crashes the first time
            raise RuntimeError("crash")
        return name

    plan = Plan(
        [
            {"_tool": "step", "name": "a", "_outputPath": "†state.a"},
            {"_tool": "step", "name": "†state.a", "_outputPath": "†state.b"},
        ]
    )
    store = Store()
    with pytest.raises(PlanRunError) as caught:
        plan.run({"step": step}, store=store, run_id="r1")
    assert any("run_id='r1'" in note for note in caught.value.__notes__)
    seen.clear()
    plan.run({"step": step}, store=store, run_id="r1")
    assert seen == ["a"]  # the second call only: the first is restored from its record
    assert store.value("state", "b") == "a"


def test_resume_on_a_durable_run_in_a_new_process_image() -> None:
    backend = InMemoryBackend()
    calls: list[str] = []

    def step(name: str) -> str:
        calls.append(name)
        if name == "boom":
            raise RuntimeError("crash")
        return name

    plan = Plan(
        [
            {"_tool": "step", "name": "a", "_outputPath": "†state.a"},
            {"_tool": "step", "name": "†input.second", "_outputPath": "†state.b"},
        ]
    )
    first = DurableRun.open(backend, "t1", run_id="r1")
    with pytest.raises(PlanRunError):
        plan.run({"step": step}, durable=first, inputs={"second": "boom"})
    first.close()
    again = DurableRun.open(backend, "t1", run_id="r1")
    calls.clear()
    plan.run({"step": step}, durable=again, inputs={"second": "b"})
    assert calls == ["b"]
    assert again.store.value("state", "b") == "b"


def test_one_of_consts_prescribes_paths_like_an_enum() -> None:
    tool = reporter({"oneOf": [{"const": "†state.success"}, {"const": "†state.failure"}]})
    Plan([{"_tool": "report", "ok": True, "_outputPath": "$ref:state.success"}]).validate([tool])
    with pytest.raises(PlanValidationError, match="not one the tool prescribes"):
        Plan([{"_tool": "report", "ok": True, "_outputPath": "†state.x"}]).validate([tool])


def test_the_state_schema_picks_the_alternative_in_a_run() -> None:
    schema = {
        "type": "object",
        "properties": {
            "summary": {
                "type": "object",
                "properties": {"text": {"type": "string"}, "json": {"type": "object"}},
            }
        },
    }
    plan = Plan(
        [{"_tool": "make", "_outputPath": "†state.summary.text || †state.summary.json"}],
        state_schema=schema,
    )
    store = plan.run({"make": lambda: {"k": 1}}).store
    assert store.value("state", "summary") == {"json": {"k": 1}}


def test_quick_sync_tools_may_run_on_the_loop_thread() -> None:
    seen: list[str] = []
    tool = Tool(
        name="mark", fn=lambda n: seen.append(threading.current_thread().name) or n, blocking=False
    )
    plan = Plan([{"_tool": "mark", "n": n, "_outputPath": f"†state.n{n}"} for n in range(3)])
    plan.run([tool])
    assert len(set(seen)) == 1
