"""Nodes that raise, retries, timeouts and cancellation."""

from __future__ import annotations

import asyncio
import itertools
import subprocess
import sys
import threading
import time
from typing import Any

import pytest
from graph_helpers import Mode

from weft.errors import GraphBuildError, NodeError, NodeTimeoutError
from weft.graph import ResultPassDownMode, RetryPolicy, WorkGraph, WorkGraphNode

R = ResultPassDownMode


def chain(*nodes: WorkGraphNode) -> WorkGraph:
    for a, b in itertools.pairwise(nodes):
        a.add_next(b)
    return WorkGraph(start_nodes=[nodes[0]])


def boom(*args: Any, **kwargs: Any) -> Any:
    raise ValueError("boom")


def test_error_names_the_node_key_id_and_path_and_keeps_the_cause(mode: Mode) -> None:
    graph = chain(
        WorkGraphNode(mode.fn(lambda: 1), R.ResultAsFirstArg, id="plan"),
        WorkGraphNode(mode.fn(lambda x: x), R.ResultAsFirstArg, id="act"),
        WorkGraphNode(mode.fn(boom), id="summarize"),
    )
    with pytest.raises(NodeError) as info:
        mode.run(graph)
    message = str(info.value)
    assert "summarize#2 ('summarize')" in message
    assert "path: plan -> act -> summarize" in message
    assert "ValueError: boom" in message
    assert isinstance(info.value.__cause__, ValueError)
    assert not isinstance(info.value, NodeTimeoutError)


def test_a_failure_starts_nothing_new(mode: Mode) -> None:
    after: list[Any] = []
    graph = chain(
        WorkGraphNode(mode.fn(boom), id="fails"),
        WorkGraphNode(mode.fn(lambda: after.append("ran")), id="after"),
    )
    with pytest.raises(NodeError):
        mode.run(graph)
    assert after == []


def test_a_failure_lets_running_sync_nodes_finish() -> None:
    finished: list[str] = []
    start = WorkGraphNode(lambda: None, id="start")
    start.add_next(WorkGraphNode(lambda: time.sleep(0.05) or boom(), id="fails"))
    start.add_next(WorkGraphNode(lambda: time.sleep(0.2) or finished.append("slow"), id="slow"))
    with pytest.raises(NodeError, match="fails#1"):
        WorkGraph(start_nodes=[start]).run()
    assert finished == ["slow"]


async def test_a_failure_cancels_running_async_nodes() -> None:
    cancelled = asyncio.Event()

    async def slow() -> None:
        try:
            await asyncio.sleep(10)
        except asyncio.CancelledError:
            cancelled.set()
            raise

    async def fails() -> None:
        await asyncio.sleep(0.01)
        raise ValueError("boom")

    start = WorkGraphNode(lambda: None, id="start")
    start.add_next(WorkGraphNode(fails, id="fails"))
    start.add_next(WorkGraphNode(slow, id="slow"))
    with pytest.raises(NodeError, match="fails#1"):
        await asyncio.wait_for(WorkGraph(start_nodes=[start]).arun(), 5)
    assert cancelled.is_set()


def test_retry_calls_again_until_it_succeeds(mode: Mode) -> None:
    calls: list[int] = []

    def flaky() -> str:
        calls.append(1)
        if len(calls) < 3:
            raise ConnectionError("try again")
        return "ok"

    graph = WorkGraph(start_nodes=[WorkGraphNode(mode.fn(flaky), retry=RetryPolicy(attempts=3))])
    assert mode.run(graph) == "ok"
    assert len(calls) == 3


def test_retry_gives_up_after_its_attempts(mode: Mode) -> None:
    calls: list[int] = []

    def always() -> None:
        calls.append(1)
        raise ConnectionError("down")

    graph = WorkGraph(start_nodes=[WorkGraphNode(mode.fn(always), id="call", retry=2)])
    with pytest.raises(NodeError, match="after 2 attempts") as info:
        mode.run(graph)
    assert len(calls) == 2
    assert isinstance(info.value.__cause__, ConnectionError)


def test_retry_only_on_the_listed_exceptions(mode: Mode) -> None:
    calls: list[int] = []

    def wrong() -> None:
        calls.append(1)
        raise KeyError("not retried")

    policy = RetryPolicy(attempts=5, retry_on=(ConnectionError,))
    graph = WorkGraph(start_nodes=[WorkGraphNode(mode.fn(wrong), retry=policy)])
    with pytest.raises(NodeError):
        mode.run(graph)
    assert calls == [1]


def test_retry_waits_its_backoff(mode: Mode) -> None:
    stamps: list[float] = []

    def flaky() -> str:
        stamps.append(time.monotonic())
        if len(stamps) < 3:
            raise ConnectionError
        return "ok"

    policy = RetryPolicy(attempts=3, backoff=0.05, multiplier=2)
    graph = WorkGraph(start_nodes=[WorkGraphNode(mode.fn(flaky), retry=policy)])
    assert mode.run(graph) == "ok"
    assert stamps[1] - stamps[0] >= 0.045
    assert stamps[2] - stamps[1] >= 0.095


def test_retry_policy_delays() -> None:
    policy = RetryPolicy(backoff=1.0, multiplier=3.0, max_backoff=5.0)
    assert [policy.delay(n) for n in (1, 2, 3)] == [1.0, 3.0, 5.0]
    with pytest.raises(GraphBuildError, match="attempts"):
        RetryPolicy(attempts=0)


def test_async_node_past_its_timeout_is_cancelled() -> None:
    cancelled = threading.Event()

    async def slow() -> None:
        try:
            await asyncio.sleep(10)
        except asyncio.CancelledError:
            cancelled.set()
            raise

    graph = WorkGraph(start_nodes=[WorkGraphNode(slow, id="slow", timeout=0.05)])
    started = time.monotonic()
    with pytest.raises(NodeTimeoutError, match=r"slow#0 \('slow'\) ran past its timeout of 0.05 s"):
        graph.run()
    assert time.monotonic() - started < 2
    assert cancelled.is_set()


def test_sync_node_past_its_timeout_stops_the_wait_not_the_thread() -> None:
    release = threading.Event()
    done = threading.Event()

    def stuck() -> None:
        release.wait(5)
        done.set()

    graph = WorkGraph(start_nodes=[WorkGraphNode(stuck, id="stuck", timeout=0.05)])
    started = time.monotonic()
    with pytest.raises(NodeTimeoutError, match="Python cannot stop a thread") as info:
        graph.run()
    assert time.monotonic() - started < 2
    assert isinstance(info.value, NodeError) and isinstance(info.value, TimeoutError)
    assert not done.is_set()  # still running on its thread
    release.set()
    assert done.wait(5)


def test_timeout_then_retry_succeeds(mode: Mode) -> None:
    calls: list[int] = []

    def sometimes_slow() -> str:
        calls.append(1)
        if len(calls) == 1:
            time.sleep(0.3)  # only the first attempt hangs
        return "ok"

    value = mode.fn(sometimes_slow)
    if mode.is_async:

        async def value() -> str:  # type: ignore[misc]
            calls.append(1)
            if len(calls) == 1:
                await asyncio.sleep(0.3)
            return "ok"

    graph = WorkGraph(start_nodes=[WorkGraphNode(value, timeout=0.05, retry=2)])
    assert mode.run(graph) == "ok"
    assert len(calls) == 2


def test_node_own_timeout_error_is_not_reported_as_a_timeout(mode: Mode) -> None:
    def raises_timeout() -> None:
        raise TimeoutError("the remote timed out")

    graph = WorkGraph(start_nodes=[WorkGraphNode(mode.fn(raises_timeout), timeout=5)])
    with pytest.raises(NodeError) as info:
        mode.run(graph)
    assert not isinstance(info.value, NodeTimeoutError)
    assert "the remote timed out" in str(info.value)


async def test_cancelling_arun_cancels_running_async_nodes_and_raises_cancelled() -> None:
    started = asyncio.Event()
    cancelled: list[str] = []

    def make(name: str) -> Any:
        async def slow() -> None:
            started.set()
            try:
                await asyncio.sleep(10)
            except asyncio.CancelledError:
                cancelled.append(name)
                raise

        return slow

    start = WorkGraphNode(lambda: None, id="start")
    for name in ("a", "b"):
        start.add_next(WorkGraphNode(make(name), id=name))
    task = asyncio.create_task(WorkGraph(start_nodes=[start]).arun())
    await asyncio.wait_for(started.wait(), 5)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert task.cancelled()
    assert sorted(cancelled) == ["a", "b"]


async def test_cancelling_arun_while_one_async_node_is_awaited_directly() -> None:
    started = asyncio.Event()
    cancelled: list[bool] = []

    async def slow() -> None:
        started.set()
        try:
            await asyncio.sleep(10)
        except asyncio.CancelledError:
            cancelled.append(True)
            raise

    task = asyncio.create_task(WorkGraph(start_nodes=[WorkGraphNode(slow)]).arun())
    await asyncio.wait_for(started.wait(), 5)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert cancelled == [True]


class _Interrupt(BaseException):
    """Stands for KeyboardInterrupt or SystemExit: not an Exception."""


@pytest.mark.parametrize("width", [1, 2])
def test_a_base_exception_in_a_threaded_sync_node_ends_the_run_as_itself(width: int) -> None:
    def interrupted() -> None:
        raise _Interrupt()

    starts = [WorkGraphNode(interrupted), *(WorkGraphNode(lambda: 1) for _ in range(width))]
    with pytest.raises(_Interrupt):
        WorkGraph(start_nodes=starts).run()


async def test_a_base_exception_in_an_async_node_ends_the_run_as_itself() -> None:
    async def interrupted() -> None:
        raise _Interrupt()

    async def other() -> int:
        return 1

    with pytest.raises(_Interrupt):
        await WorkGraph(start_nodes=[WorkGraphNode(interrupted), WorkGraphNode(other)]).arun()


CTRL_C = """
import os, signal, threading, time
from weft.graph import WorkGraph, WorkGraphNode

def slow() -> None:
    time.sleep(30)

graph = WorkGraph(start_nodes=[WorkGraphNode(slow), WorkGraphNode(slow)])
threading.Timer(0.3, os.kill, (os.getpid(), signal.SIGINT)).start()
try:
    graph.run()
except KeyboardInterrupt:
    print("interrupted")
"""


def test_ctrl_c_ends_a_run_waiting_for_its_threads() -> None:
    """``run()`` of sync nodes waits for its threads with no event loop; Ctrl-C still
    reaches it (the nodes' threads are daemons, left to finish on their own)."""
    done = subprocess.run(
        [sys.executable, "-c", CTRL_C], capture_output=True, text=True, timeout=20, check=False
    )
    assert done.stdout.strip() == "interrupted", done.stderr
