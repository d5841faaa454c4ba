"""Faults on a local Ray cluster: a worker killed mid-task is retried by Ray, and nothing
that finished runs twice, then or when the run is resumed from PostgreSQL."""

from __future__ import annotations

import contextlib
import functools
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import ray_nodes
from pg_proxy import Proxy

from weft.distributed import RayExecutor, offload_to
from weft.errors import NodeError, RemoteError, StorageError, WeftError
from weft.graph import ResultPassDownMode, WorkGraph, WorkGraphNode
from weft.memory import AgentMemory
from weft.persist import DurableRun, PostgresBackend
from weft.plan import ParallelTaskExecutor, Step, Task, TaskPlan
from weft.store import CallIntent, RunLog


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
    first = WorkGraphNode(
        functools.partial(ray_nodes.dies_once, str(log), 1), ResultPassDownMode.ResultAsFirstArg
    )
    first.add_next(WorkGraphNode(functools.partial(ray_nodes.always_dies, str(log))))
    durable = DurableRun.open(backend, "faults", run_id="kill-2")
    with pytest.raises(NodeError) as caught:
        durable.run_graph(WorkGraph([first]), 5, executor=stubborn)
    cause = caught.value.__cause__
    assert isinstance(cause, RemoteError)
    assert "always_dies" in str(caught.value) and "run again with the same run_id" in str(cause)
    seen = lines(log)
    assert seen["dying"] == 2  # the first attempt and its one retry
    # what finished before is recorded: a resumed run does not run it again
    recorded = RunLog(durable.store, "kill-2").recorded()
    assert list(recorded) == ["dies_once#0"]
    assert seen["done 1"] == 1


# Ray keeps Popen objects of its own node processes, which Python warns about when the
# garbage collector meets them during this test (they are Ray's, not the driver's).
@pytest.mark.filterwarnings("ignore::ResourceWarning")
@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
def test_a_killed_driver_is_followed_by_a_new_one_that_resumes_from_postgresql(
    pg_schema: str, ray_executor: RayExecutor, tmp_path: Path
) -> None:
    import ray

    log = tmp_path / "effects.log"
    address = ray.get_runtime_context().gcs_address
    driver = subprocess.Popen(
        [
            sys.executable,
            str(Path(__file__).parent / "ray_driver.py"),
            address,
            pg_schema,
            str(log),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 90
        while not (log.exists() and "done 2" in log.read_text()):
            assert driver.poll() is None, "the driver ended before it was killed"
            assert time.monotonic() < deadline, "the driver did not get to step 2"
            time.sleep(0.05)
        driver.send_signal(signal.SIGKILL)
    finally:
        driver.kill()
        driver.wait()
    backend = PostgresBackend(ray_nodes.PG, schema=pg_schema, timeout=5)
    try:
        resumed = DurableRun.open(backend, "driven", run_id="d1")
        before = set(RunLog(resumed.store, "d1").recorded())
        assert {"s0#0", "s1#1"} <= before  # committed before the kill
        assert resumed.run_graph(ray_nodes.chain_graph(str(log)), 0, executor=ray_executor) == 6
        seen = lines(log)
        for key in before:  # what was recorded never ran again
            assert seen[f"done {key[1]}"] == 1
        assert all(seen[f"done {k}"] >= 1 for k in range(6))
        assert len(RunLog(resumed.store, "d1").recorded()) == 6
    finally:
        backend.close()


def test_postgresql_out_of_reach_mid_run_stops_it_with_a_storage_error_then_it_resumes(
    pg_schema: str, ray_executor: RayExecutor, tmp_path: Path
) -> None:
    log = tmp_path / "effects.log"
    proxy = Proxy().start()
    dsn = f"postgresql://postgres@127.0.0.1:{proxy.port}/weft_test"
    backend = PostgresBackend(dsn, schema=pg_schema, timeout=3)
    durable = DurableRun.open(backend, "outage", run_id="o1")

    def cut() -> None:
        deadline = time.monotonic() + 60
        while not (log.exists() and "done 1" in log.read_text()):
            if time.monotonic() > deadline:
                return
            time.sleep(0.02)
        proxy.stop()

    cutter = threading.Thread(target=cut)
    cutter.start()
    started = time.monotonic()
    with pytest.raises(WeftError) as caught:
        durable.run_graph(ray_nodes.chain_graph(str(log)), 0, executor=ray_executor)
    cutter.join()
    assert time.monotonic() - started < 30  # it failed, it did not hang
    failure = caught.value
    error = failure if isinstance(failure, StorageError) else failure.__cause__
    assert isinstance(error, StorageError), failure
    assert "PostgreSQL" in str(error)

    proxy.start()  # the server is back
    fresh = PostgresBackend(dsn, schema=pg_schema, timeout=3)
    try:
        resumed = DurableRun.open(fresh, "outage", run_id="o1")
        kept = set(RunLog(resumed.store, "o1").recorded())
        assert "s0#0" in kept  # committed before the outage, not lost
        assert resumed.run_graph(ray_nodes.chain_graph(str(log)), 0, executor=ray_executor) == 6
        seen = lines(log)
        for key in kept:
            assert seen[f"done {key[1]}"] == 1
        assert len(RunLog(resumed.store, "o1").recorded()) == 6
    finally:
        fresh.close()
        with contextlib.suppress(WeftError):
            backend.close()
        proxy.stop()


def test_a_keyed_tool_call_whose_worker_dies_has_its_key_recorded_first_and_runs_once_more(
    backend: PostgresBackend, ray_executor: RayExecutor, tmp_path: Path
) -> None:
    log = tmp_path / "effects.log"

    def execute() -> Any:
        durable = DurableRun.open(backend, "keyed", run_id="k1")
        executor = ParallelTaskExecutor(
            TaskPlan(tasks=[Task(id="A", steps=[Step(id="look", instructions="Look.")])]),
            model=ray_nodes.flaky_model(str(log)),
            memory=AgentMemory(durable.store),
            tools=[ray_nodes.flaky],
        )
        with offload_to(ray_executor):
            report = executor.execute(run_id="k1")
        return report, durable

    report, durable = execute()
    assert report.completed == ("A",)
    seen = lines(log)
    assert seen["attempt"] == 2 and seen["done otters"] == 1  # the dead attempt, then one
    events = [e for _, e in durable.history() if e.path.endswith("/calls/tool/1.0")]
    # the keyed call's intent, with its key, was committed before the call was sent
    assert isinstance(events[0].value, CallIntent) and events[0].value.key
    recorded = {"content": '{"q": "otters"}', "is_error": False, "problem": None}
    assert events[-1].value.result == recorded  # what the model read back
    # resumed: the recorded call is not made again
    report, again = execute()
    assert not report.failed
    assert AgentMemory(again.store).get_value("step:look") == {"q": "otters"}
    assert lines(log) == seen
