"""The same runs in one process and on Ray end the same: final state, memory, step
records and the order of the state events (the engine merges in graph order, whichever
worker finishes first). Each run's store is a DurableRun on the shared PostgreSQL."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
import ray_nodes

from weft.distributed import RayExecutor, offload_to
from weft.memory import AgentMemory
from weft.persist import DurableRun, PostgresBackend
from weft.plan import ParallelTaskExecutor
from weft.store import CallIntent, RunLog, RunRecord, StepRecord

COMPARED = ("state", "shared", "input", "step", "task")


@pytest.fixture
def backend(pg_schema: str) -> Iterator[PostgresBackend]:
    backend = PostgresBackend(ray_nodes.PG, schema=pg_schema, timeout=5)
    yield backend
    backend.close()


def plain(value: Any) -> Any:
    """A value to compare: a record without its clock readings."""
    if isinstance(value, StepRecord):
        return ("record", value.kind, value.label, value.result, value.flag, value.writes)
    if isinstance(value, CallIntent):  # its key is fresh for each run
        return ("intent", value.label, value.failed)
    if isinstance(value, RunRecord):
        return ("run", value.kind, value.status, value.units, value.output)
    return value


def outcome(durable: DurableRun, run_id: str) -> dict[str, Any]:
    """What a run left: its entries, its stored events in order (but for the step
    records: a node's record is stored as it finishes, its writes in graph order), its
    step records."""
    store = durable.store
    events = [
        (e.op, e.kind, e.path, plain(e.value), e.source, e.reducer)
        for _, e in durable.history()
        if e.kind in COMPARED and not isinstance(e.value, (StepRecord, RunRecord))
    ]
    records = {
        unit: (r.kind, r.label, r.result, r.flag)
        for unit, r in RunLog(store, run_id).recorded().items()
    }
    return {
        "entries": {e.key: plain(e.value) for e in store.entries() if e.kind in COMPARED},
        "events": events,
        "records": records,
    }


STEPS = {"research": "A", "survey": "B", "report": "C"}


def task_of(event: tuple[Any, ...]) -> str:
    """The task an event of the task plan belongs to ("-": the caller's input)."""
    kind, path = event[1], event[2]
    if kind == "task":
        return str(path)
    if path in STEPS:
        return STEPS[path]
    if path.startswith("r1."):
        return str(path[3])
    return "-"


def by_task(events: list[tuple[Any, ...]]) -> dict[str, list[tuple[Any, ...]]]:
    grouped: dict[str, list[tuple[Any, ...]]] = {}
    for event in events:
        grouped.setdefault(task_of(event), []).append(event)
    return grouped


def both(
    backend: PostgresBackend, executor: RayExecutor, run: Callable[[DurableRun, bool], Any]
) -> tuple[dict[str, Any], dict[str, Any], Any, Any]:
    ended = []
    before = executor.submitted
    for thread, remote in (("local", False), ("ray", True)):
        durable = DurableRun.open(backend, thread, run_id="r1", reducers=ray_nodes.REDUCERS)
        if remote:
            with offload_to(executor):
                result = run(durable, True)
        else:
            result = run(durable, False)
        ended.append((outcome(DurableRun.open(backend, thread, run_id="r1"), "r1"), result))
    assert executor.submitted > before  # the second run did go to Ray
    return ended[0][0], ended[1][0], ended[0][1], ended[1][1]


def test_a_fan_out_of_state_nodes_ends_the_same_on_ray(
    backend: PostgresBackend, ray_executor: RayExecutor
) -> None:
    graph = ray_nodes.fan_out_graph(6)

    def run(durable: DurableRun, remote: bool) -> Any:
        executor = ray_executor if remote else None
        return durable.run_graph(graph, "otters", executor=executor)

    local, on_ray, _, _ = both(backend, ray_executor, run)
    assert on_ray == local
    summary = local["entries"]["state:summary"]
    assert summary == {"items": 7, "total": sum(k * k for k in range(6)), "topic": "otters"}
    # every branch saw the seed's one item, never a sibling's
    assert sorted(local["entries"]["state:items"][1:]) == [f"otters-{k}:1" for k in range(6)]
    assert len(local["records"]) == 8
    assert ray_executor.submitted >= 8


def test_a_plan_over_instances_ends_the_same_on_ray(
    backend: PostgresBackend, ray_executor: RayExecutor
) -> None:
    plan = ray_nodes.instance_plan()

    def run(durable: DurableRun, remote: bool) -> Any:
        return plan.run([ray_nodes.score], durable=durable, instances=ray_nodes.INSTANCES)

    local, on_ray, local_result, ray_result = both(backend, ray_executor, run)
    assert on_ray == local  # the same events in the same order: committed in graph order
    for name, fields in ray_nodes.INSTANCES.items():
        assert local["entries"][f"state:@{name}/result"]["score"] == fields["userId"] * 10
    assert ray_result.results == local_result.results


def test_a_parallel_task_executor_ends_the_same_on_ray(
    backend: PostgresBackend, ray_executor: RayExecutor
) -> None:
    def run(durable: DurableRun, remote: bool) -> Any:
        executor = ParallelTaskExecutor(
            ray_nodes.task_plan(),
            model=ray_nodes.task_model(),
            memory=AgentMemory(durable.store),
            tools=[ray_nodes.lookup],
            inputs={"topic": "otters"},
        )
        report = executor.execute(run_id="r1")
        return sorted(report.completed), executor.get_all_results()  # A, B: either may end first

    local, on_ray, local_result, ray_result = both(backend, ray_executor, run)
    # Tasks A and B run in parallel and each commits as it ends (in-process too), so
    # their events interleave by finishing order; each task's own events keep their order.
    local_events, ray_events = local.pop("events"), on_ray.pop("events")
    assert on_ray == local
    assert ray_result == local_result
    assert sorted(local_result[0]) == ["A", "B", "C"]
    assert by_task(ray_events) == by_task(local_events)
    for events in (local_events, ray_events):  # C ran after both
        tasks = [task_of(e) for e in events if task_of(e) != "-"]
        assert tasks[-5:] == ["C"] * 5 and "C" not in tasks[:-5]
    assert local["entries"]["step:research"] == {"q": "otters-1", "hits": 8}
