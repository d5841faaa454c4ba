"""How a graph runs: inline chains, threads, tasks, event loops, concurrency bounds."""

from __future__ import annotations

import asyncio
import contextvars
import itertools
import threading
import time
from typing import Any

import pytest

from weft.errors import NodeError
from weft.graph import ResultPassDownMode, WorkGraph, WorkGraphNode, dispatch, pool

R = ResultPassDownMode

request_id: contextvars.ContextVar[str] = contextvars.ContextVar("request_id", default="-")


def chain(*values: Any) -> WorkGraph:
    nodes = [WorkGraphNode(v, R.ResultAsFirstArg) for v in values]
    for a, b in itertools.pairwise(nodes):
        a.add_next(b)
    return WorkGraph(start_nodes=[nodes[0]])


def fan(n: int, value: Any) -> WorkGraph:
    start = WorkGraphNode(lambda: None, id="start")
    for i in range(n):
        start.add_next(WorkGraphNode(value, id=f"b{i}"))
    return WorkGraph(start_nodes=[start])


def test_a_chain_of_sync_nodes_runs_on_the_calling_thread() -> None:
    here = threading.get_ident()
    graph = chain(*(lambda *a: threading.get_ident() for _ in range(3)))
    assert graph.run() == here


def test_parallel_sync_nodes_run_side_by_side() -> None:
    barrier = threading.Barrier(2, timeout=5)

    def meet() -> int:
        barrier.wait()  # breaks (an error) unless both run at the same time
        return threading.get_ident()

    idents = fan(2, meet).run()
    assert len(set(idents)) == 2


def joined(n: int, value: Any) -> WorkGraph:
    """start -> n branches -> one join that gets their results."""
    start = WorkGraphNode(lambda: None, id="start")
    join = WorkGraphNode(lambda *results: list(results), id="join")
    for i in range(n):
        start.add_next(WorkGraphNode(value, R.ResultAsFirstArg, id=f"b{i}")).add_next(join)
    return WorkGraph(start_nodes=[start])


def test_the_calling_thread_runs_branches_of_a_fan_out_while_it_waits_for_the_join() -> None:
    here = threading.get_ident()
    idents = joined(50, lambda *_: threading.get_ident()).run()
    assert len(idents) == 50 and here in idents


def test_slow_branches_of_a_fan_out_still_run_side_by_side() -> None:
    barrier = threading.Barrier(4, timeout=5)
    assert joined(4, lambda *_: barrier.wait() >= 0).run() == [True] * 4
    started = time.perf_counter()
    joined(8, lambda *_: time.sleep(0.2)).run()
    assert time.perf_counter() - started < 1.0  # 1.6 s one after the other


def test_a_branch_whose_successor_may_start_early_is_not_run_by_the_waiting_thread() -> None:
    """start -> a, and start -> b -> c, where a waits for c: c must start while a runs."""
    c_ran = threading.Event()
    a = WorkGraphNode(lambda *_: c_ran.wait(5), id="a")
    b = WorkGraphNode(lambda *_: None, id="b")
    c = WorkGraphNode(lambda *_: c_ran.set(), id="c")
    start = WorkGraphNode(lambda: None, id="start")
    start.add_next(a)
    start.add_next(b).add_next(c)
    assert WorkGraph(start_nodes=[start]).run()[0] is True


class HeldThreads(pool.Threads):
    """Threads whose jobs start only when released: a run's queue is drained by the run's
    own thread alone until then, so what it does is not a race with the workers."""

    def __init__(self) -> None:
        super().__init__()
        self.held: list[Any] = []

    def submit(self, job: Any) -> None:
        self.held.append(job)

    def release(self) -> None:
        for job in self.held:
            super().submit(job)


def test_a_failing_branch_drops_the_queued_ones_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    threads = HeldThreads()
    monkeypatch.setattr(dispatch, "SyncQueue", lambda *args: pool.SyncQueue(*args, threads=threads))
    ran: list[int] = []

    def branch(i: int) -> int:
        ran.append(i)
        if i == 0:
            raise ValueError("branch 0 failed")
        return i

    start = WorkGraphNode(lambda: None, id="start")
    join = WorkGraphNode(lambda *results: list(results), id="join")
    for i in range(10):
        node = WorkGraphNode(lambda *_, i=i: branch(i), R.ResultAsFirstArg, id=f"b{i}")
        start.add_next(node).add_next(join)
    with pytest.raises(NodeError, match="branch 0 failed"):
        WorkGraph(start_nodes=[start]).run()
    threads.release()  # the worker asked for as b0 was taken finds nothing left
    assert ran == [0]  # the calling thread took b0; b1..b9, still queued, were dropped


def quick_then(n: int, later: Any) -> tuple[WorkGraph, list[Any]]:
    """A ``joined`` fan-out whose branches return at once until ``switch[0]`` is set, then
    call ``later(i)``; it has run twice, so its branches are known to be quick."""
    switch: list[Any] = [None]

    def branch(i: int) -> Any:
        return i if switch[0] is None else later(i)

    start = WorkGraphNode(lambda: None, id="start")
    join = WorkGraphNode(lambda *results: list(results), id="join")
    for i in range(n):
        node = WorkGraphNode(lambda *_, i=i: branch(i), R.ResultAsFirstArg, id=f"b{i}")
        start.add_next(node).add_next(join)
    graph = WorkGraph(start_nodes=[start])
    assert graph.run() == graph.run() == list(range(n))
    return graph, switch


def test_a_fan_out_that_was_quick_runs_on_the_calling_thread_with_no_thread_woken(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    threads = HeldThreads()
    monkeypatch.setattr(dispatch, "SyncQueue", lambda *args: pool.SyncQueue(*args, threads=threads))
    here = threading.get_ident()
    graph = joined(20, lambda *_: threading.get_ident())
    assert set(graph.run()) == {here}
    assert len(threads.held) == 1  # its first run asked for a thread (held: never started)
    for _ in range(3):
        assert set(graph.run()) == {here}
    assert len(threads.held) == 1  # the branches were quick: no thread asked for since
    threads.release()


def test_a_branch_that_blocks_on_a_sibling_in_a_fan_out_that_was_quick_is_not_stuck() -> None:
    """The run's thread runs the first branch alone; it waits for the second, which only a
    thread the standby asks for can run."""
    met = threading.Event()

    def later(i: int) -> int:
        if i == 0:
            assert met.wait(5), "the second branch never ran"
        else:
            met.set()
        return i

    graph, switch = quick_then(2, later)
    switch[0] = True
    started = time.perf_counter()
    assert graph.run() == [0, 1]
    assert time.perf_counter() - started < 1.0  # a tick of the standby (20 ms), not 5 s


def test_slow_branches_of_a_fan_out_that_was_quick_still_run_side_by_side() -> None:
    graph, switch = quick_then(8, lambda i: time.sleep(0.2) or i)
    switch[0] = True
    started = time.perf_counter()
    assert graph.run() == list(range(8))
    assert time.perf_counter() - started < 1.0  # 1.6 s one after the other
    started = time.perf_counter()
    assert graph.run() == list(range(8))  # now known to be slow: threads from the start
    assert time.perf_counter() - started < 1.0


def test_branches_of_a_millisecond_get_threads_though_the_fan_out_was_quick() -> None:
    graph, switch = quick_then(100, lambda i: time.sleep(0.001) or i)
    switch[0] = True
    started = time.perf_counter()
    assert graph.run() == list(range(100))
    assert time.perf_counter() - started < 0.09  # 100 ms or more one after the other


def test_a_helper_alone_asks_for_a_thread_once_it_has_run_quick_items_for_the_budget() -> None:
    """Each item under ``QUICK``, but they add up: past ``BUDGET`` the helper asks."""
    asked: list[float] = []

    class Timed(HeldThreads):
        def submit(self, job: Any) -> None:
            asked.append(time.perf_counter())
            super().submit(job)

    def work(item: int) -> None:
        until = time.perf_counter() + 0.00005
        while time.perf_counter() < until:
            pass

    threads = Timed()
    queue = pool.SyncQueue(4, work, lambda item: None, threads=threads)
    queue.push(list(range(200)), helped=True)  # ~10 ms of items
    began = time.perf_counter()
    if queue.help(alone=True):  # every item was quick (a loaded machine may slow one)
        assert len(asked) == 1 and asked[0] - began >= pool.BUDGET
    assert len(asked) == 1  # asked for one, which (held) never came
    threads.release()


def test_the_standby_sleeps_once_no_fan_out_runs_alone() -> None:
    graph, _switch = quick_then(4, lambda i: i)
    graph.run()
    assert pool.STANDBY._awake
    time.sleep((pool.LINGER + 3) * pool.TICK)
    assert not pool.STANDBY._awake  # asleep until the next fan-out run alone wakes it
    graph.run()
    assert pool.STANDBY._awake


FORKED = """
import os, sys, threading, time
sys.path.insert(0, {tests!r})
from graph.test_run import quick_then

met = threading.Event()
def later(i):
    if i == 0:
        return met.wait(5)
    met.set()
    return True

graph, switch = quick_then(2, later)
switch[0] = True
pid = os.fork()
if pid == 0:  # the standby thread did not come along: the child starts its own
    os._exit(0 if graph.run() == [True, True] else 1)
_, status = os.waitpid(pid, 0)
sys.exit(os.waitstatus_to_exitcode(status))
"""


FORKED_RECORDED = """
import os, sys, time
from weft.graph import WorkGraph, WorkGraphNode
from weft.store import Store

start = WorkGraphNode(lambda: None, id="start")
for i in range(4):
    start.add_next(WorkGraphNode(lambda: time.sleep(0.01) or 1, id=f"b{i}"))
graph = WorkGraph(start_nodes=[start])
assert graph.run() == [1] * 4  # the parent's threads are now idle in the pool
pid = os.fork()
if pid == 0:  # a recorded run's branches go to threads; the parent's did not come along
    os._exit(0 if graph.run(run_id="forked", store=Store()) == [1] * 4 else 1)
_, status = os.waitpid(pid, 0)
sys.exit(os.waitstatus_to_exitcode(status))
"""


def forked(script: str) -> float:
    """Run ``script`` (which forks) in a new interpreter; the seconds it took."""
    import subprocess
    import sys

    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-W", "ignore::DeprecationWarning", "-c", script],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert done.returncode == 0, done.stderr
    return time.perf_counter() - started


def test_a_forked_child_has_a_standby_of_its_own() -> None:
    from pathlib import Path

    tests = str(Path(__file__).resolve().parents[1])
    assert forked(FORKED.format(tests=tests)) < 5  # the child's first branch did not wait 5 s


def test_a_forked_child_starts_threads_of_its_own() -> None:
    """The thread pool of a forked child counts no thread of its parent as idle."""
    assert forked(FORKED_RECORDED) < 20


async def test_parallel_async_nodes_run_at_the_same_time() -> None:
    arrived = 0
    everyone = asyncio.Event()

    async def meet() -> str:
        nonlocal arrived
        arrived += 1
        if arrived == 3:
            everyone.set()
        await asyncio.wait_for(everyone.wait(), 5)
        return "met"

    assert await fan(3, meet).arun() == ["met"] * 3


def test_max_concurrency_bounds_sync_nodes() -> None:
    running = peak = 0
    lock = threading.Lock()

    def work() -> None:
        nonlocal running, peak
        with lock:
            running += 1
            peak = max(peak, running)
        time.sleep(0.02)
        with lock:
            running -= 1

    graph = fan(8, work)
    graph.max_concurrency = 2
    graph.run()
    assert peak == 2


async def test_max_concurrency_bounds_sync_and_async_together() -> None:
    running = peak = 0
    lock = threading.Lock()

    def enter() -> None:
        nonlocal running, peak
        with lock:
            running += 1
            peak = max(peak, running)

    def leave() -> None:
        nonlocal running
        with lock:
            running -= 1

    def sync_work() -> None:
        enter()
        time.sleep(0.02)
        leave()

    async def async_work() -> None:
        enter()
        await asyncio.sleep(0.02)
        leave()

    start = WorkGraphNode(lambda: None)
    for i in range(8):
        start.add_next(WorkGraphNode(sync_work if i % 2 else async_work))
    await WorkGraph(start_nodes=[start], max_concurrency=3).arun()
    assert peak == 3


async def test_run_from_inside_a_running_event_loop_works() -> None:
    """A sync caller inside an async app: the graph runs on a helper thread."""
    graph = fan(3, lambda: threading.get_ident())
    assert len(graph.run()) == 3
    assert chain(lambda: 1, lambda x: x + 1).run() == 2  # a chain needs no loop at all


def test_a_node_can_run_a_nested_graph() -> None:
    inner = fan(2, lambda: "inner")

    def outer_node() -> list[str]:
        result: list[str] = inner.run()
        return result

    outer = fan(3, outer_node)
    assert outer.run() == [["inner", "inner"]] * 3


def test_sync_node_returning_a_coroutine_is_awaited() -> None:
    async def later(x: int) -> int:
        await asyncio.sleep(0)
        return x * 2

    assert chain(lambda: 21, lambda x: later(x)).run() == 42
    assert asyncio.run(chain(lambda: 21, lambda x: later(x)).arun()) == 42


def test_context_variables_reach_sync_nodes_on_threads() -> None:
    token = request_id.set("req-7")
    try:
        assert fan(2, request_id.get).run() == ["req-7", "req-7"]
    finally:
        request_id.reset(token)


def test_mixed_sync_and_async_nodes() -> None:
    async def double(x: int) -> int:
        await asyncio.sleep(0)
        return x * 2

    graph = chain(lambda: 5, double, lambda x: x + 1, double)
    assert graph.run() == 22
    assert asyncio.run(graph.arun()) == 22


def test_repeated_runs_of_one_graph_are_independent() -> None:
    graph = chain(lambda x: x + 1, lambda x: x * 10)
    assert [graph.run(i) for i in range(3)] == [10, 20, 30]


def test_one_graph_can_run_on_several_threads_at_once() -> None:
    graph = fan(2, lambda: time.sleep(0.01) or "done")
    results: list[Any] = []
    threads = [threading.Thread(target=lambda: results.append(graph.run())) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(5)
    assert results == [["done", "done"]] * 4
