"""Faults on a local Ray cluster: a worker killed mid-task is retried by Ray, and nothing
that finished runs twice, then or when the run is resumed from PostgreSQL."""

from __future__ import annotations

import functools
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
import ray_nodes

from weft.distributed import RayExecutor
from weft.errors import NodeError, RemoteError
from weft.graph import WorkGraph, WorkGraphNode
from weft.persist import DurableRun, PostgresBackend
from weft.store import RunLog


@pytest.fixture
def backend(pg_schema: str) -> Iterator[PostgresBackend]:
    backend = PostgresBackend(ray_nodes.PG, schema=pg_schema, timeout=5)
    yield backend
    backend.close()


def lines(log: Path) -> Counter[str]:
    return Counter(log.read_text().splitlines())


def test_a_worker_killed_mid_task_is_retried_and_nothing_finished_runs_twice(
    backend: PostgresBackend, ray_executor: RayExecutor, tmp_path: Path
) -> None:
    log = tmp_path / "effects.log"
    graph = WorkGraph(
        [WorkGraphNode(functools.partial(ray_nodes.dies_once, str(log), k)) for k in range(4)]
    )
    durable = DurableRun.open(backend, "faults", run_id="kill-1")
    assert durable.run_graph(graph, 100, executor=ray_executor) == [100, 101, 102, 103]
    seen = lines(log)
    assert seen["attempt 0"] == 2  # the first attempt's worker died; Ray ran it again
    assert all(seen[f"done {k}"] == 1 for k in range(4))
    assert all(seen[f"attempt {k}"] == 1 for k in range(1, 4))
    assert len(RunLog(durable.store, "kill-1").recorded()) == 4

    # a new driver resumes the run from PostgreSQL: every node is recorded, none runs again
    again = DurableRun.open(backend, "faults", run_id="kill-1")
    assert again.run_graph(graph, 100, executor=ray_executor) == [100, 101, 102, 103]
    assert lines(log) == seen


def test_a_worker_that_keeps_dying_fails_its_node_with_a_remote_error(
    backend: PostgresBackend, ray_executor: RayExecutor, tmp_path: Path
) -> None:
    log = tmp_path / "effects.log"
    stubborn = RayExecutor(max_retries=1)  # joins the session's cluster
    nodes = [
        WorkGraphNode(functools.partial(ray_nodes.always_dies, str(log))),
        WorkGraphNode(functools.partial(ray_nodes.dies_once, str(log), 1)),
    ]
    durable = DurableRun.open(backend, "faults", run_id="kill-2")
    with pytest.raises(NodeError) as caught:
        durable.run_graph(WorkGraph(nodes), 5, executor=stubborn)
    cause = caught.value.__cause__
    assert isinstance(cause, RemoteError)
    assert "always_dies" in str(caught.value) and "run again with the same run_id" in str(cause)
    seen = lines(log)
    assert seen["dying"] == 2  # the first attempt and its one retry
    # what finished is recorded: the sibling is not run again when the run is resumed
    recorded = RunLog(durable.store, "kill-2").recorded()
    assert list(recorded) == ["dies_once#1"]
    assert seen["done 1"] == 1
