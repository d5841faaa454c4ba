"""Resuming an agent run by its run_id: finished iterations, actions, branches, problems and
keyed calls are not run again, and the run ends as an uninterrupted one did."""

from __future__ import annotations

import asyncio
import json
import os
import random
import re
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Any

import pytest

from weft.agent import Agent, AgentResult, PromptBasedActionPlanningAgent
from weft.errors import AgentBuildError, AgentError, NodeError
from weft.graph import WorkGraph
from weft.llm import ScriptedReasoner
from weft.persist import Backend, DurableRun, InMemoryBackend, SQLiteBackend, load_store
from weft.store import DELETE, RunLog, RunRecord, StepRecord, Store, reducers

CLOCK = frozenset({"started_at", "duration_ms"})
"""The wall-clock fields of run and step records: they differ between two runs of one job."""


def comparable(store: Store) -> dict[str, Any]:
    """The store's entries with the wall-clock times of records left out: what must match
    an uninterrupted run."""
    return {key: timeless(value) for key, value in store.to_dict().items()}


def timeless(value: Any) -> Any:
    """A run or step record without its wall-clock fields (anything else as it is)."""
    if isinstance(value, (RunRecord, StepRecord)):
        return replace(value, **{f.name: None for f in fields(value) if f.name in CLOCK})
    return value


LAST = 5  # iterations 0..5 run actions; iteration 6 completes


class Crash(BaseException):
    """Stands for the process dying: nothing in weft catches it."""


class Job:
    """A job of seven iterations. Iteration k runs ``work`` (a keyed payment), on even k a
    parallel group of ``a`` and ``b`` (each branch then asks the reasoner once), then
    ``tick``, whose result tells the reasoner which iteration comes next. Every call is
    counted; ``crash`` names the one call that raises ``Crash`` instead. The payment
    service deduplicates by idempotency key, as payment APIs do."""

    def __init__(self, crash: tuple[str, int] | None = None) -> None:
        self.calls: Counter[tuple[str, int | str]] = Counter()
        self.payments: Counter[int] = Counter()
        self.receipts: dict[str, dict[str, int]] = {}
        self.crash = crash
        self.store = Store()

    def fire(self, what: str, k: int) -> None:
        self.calls[(what, k)] += 1
        if self.crash == (what, k):
            self.crash = None
            raise Crash(f"{what} {k}")

    def reasoner(self, prompt: str) -> str:
        self.calls[("reasoner", prompt)] += 1
        if '"branch"' in prompt:
            return json.dumps({"instant_response": "branch done", "task_status": "Completed"})
        steps = re.findall(r'"step": (\d+)', prompt)
        k = max(map(int, steps)) + 1 if steps else 0
        if k > LAST:
            return json.dumps({"instant_response": f"done after {k}", "task_status": "Completed"})
        groups = [[{"type": "work", "args": {"k": k}}]]
        if k % 2 == 0:
            groups.append([{"type": "a", "args": {"k": k}}, {"type": "b", "args": {"k": k}}])
        groups.append([{"type": "tick", "args": {"k": k}}])
        return json.dumps({"next_actions": groups})

    def agent(self, store: Store, *, threads: bool = True) -> Agent:
        """The job's agent on ``store``; ``threads=False``: every actor async, so that a
        crash raised inside a store write never happens on a thread of the graph engine."""
        self.store = store

        def work(k: int, call_once: Any) -> Any:
            self.fire("work", k)
            return call_once("pay", self.pay, k)

        async def work_async(k: int, acall_once: Any) -> Any:
            self.fire("work", k)

            async def pay(idempotency_key: str) -> dict[str, int]:
                return self.pay(k, idempotency_key)

            return await acall_once("pay", pay)

        async def a(k: int) -> dict[str, Any]:
            self.fire("a", k)
            if self.crash == ("a after b", k):  # crash once branch b has finished
                for _ in range(5000):
                    if self.store.has("step", f"job/iter/{k}/branch/1.1"):
                        break
                    await asyncio.sleep(0.001)
                self.crash = None
                raise Crash(f"a {k}")
            return {"branch": "a", "k": k}

        async def b(k: int) -> dict[str, Any]:
            self.fire("b", k)
            return {"branch": "b", "k": k}

        def tick(k: int) -> dict[str, int]:
            self.fire("tick", k)
            return {"step": k}

        async def tick_async(k: int) -> dict[str, int]:
            return tick(k)

        def summarize(*results: AgentResult) -> list[Any]:
            k = results[0].action_results.args["k"]
            self.fire("summarize", k)
            return [r.action_results for r in results]

        actors = {"work": work, "a": a, "b": b, "tick": tick}
        if not threads:
            actors.update(work=work_async, tick=tick_async)
        return Agent(
            self.reasoner,
            actor=actors,
            summarizer=summarize,
            store=store,
            name="agent",
        )

    def pay(self, k: int, idempotency_key: str) -> dict[str, int]:
        if idempotency_key not in self.receipts:
            self.payments[k] += 1
            self.receipts[idempotency_key] = {"paid": k}
        return self.receipts[idempotency_key]


def reference() -> tuple[Job, Agent, AgentResult]:
    job = Job()
    agent = job.agent(Store())
    return job, agent, agent.run("go", run_id="job")


CRASHES = [
    ("work", 3),  # a single action, in an iteration without branches
    ("work", 4),  # a single action before a parallel group
    ("tick", 2),  # after the group of the iteration was merged
    ("a after b", 4),  # in a branch, once the other branch finished and was recorded
    ("summarize", 2),  # in the summarizer, after the merge
    ("tick", LAST),  # in the last action of the run
]


@pytest.fixture
def sqlite_file(tmp_path: Path) -> Path:
    return tmp_path / "weft.db"


class Place:
    """Where the run's store lives: a plain store rebuilt from its events, or a DurableRun
    on an SQLite file, closed after the crash and opened again (as a new process would)."""

    def __init__(self, kind: str, path: Path) -> None:
        self.kind = kind
        self.path = path
        self.store = Store()
        self.backend: Backend | None = None
        self.run: DurableRun | None = None

    def open(self) -> Store:
        if self.kind == "events":
            self.store = Store.from_events(self.store.events())
            return self.store
        self.close()
        self.backend = SQLiteBackend(self.path)
        self.run = DurableRun.open(self.backend, "thread", run_id="job")
        return self.run.store

    def close(self) -> None:
        if self.run is not None:
            self.run.close()
        if self.backend is not None:
            self.backend.close()
        self.run = self.backend = None


@pytest.fixture(params=["events", "sqlite"])
def place(request: pytest.FixtureRequest, sqlite_file: Path) -> Iterator[Place]:
    opened = Place(request.param, sqlite_file)
    yield opened
    opened.close()


@pytest.mark.parametrize("crash", CRASHES, ids=[f"{w}-{k}" for w, k in CRASHES])
def test_a_crashed_run_resumes_without_running_finished_work_again(
    crash: tuple[str, int], place: Place
) -> None:
    ref_job, ref_agent, ref_result = reference()
    job = Job(crash)
    with pytest.raises((Crash, NodeError)):
        job.agent(place.open()).run("go", run_id="job")
    crashed = job.calls.copy()
    job.calls.clear()
    agent = job.agent(place.open())
    result = agent.run("go", run_id="job")
    # every call ran as often as in the uninterrupted run, plus the one that crashed
    assert crashed + job.calls == ref_job.calls + Counter({(crash[0].split()[0], crash[1]): 1})
    assert job.payments == ref_job.payments == Counter(range(LAST + 1))
    assert result == ref_result
    assert agent.states == ref_agent.states
    assert comparable(agent.store) == comparable(ref_agent.store)


class DieAfter:
    """A subscriber that kills the run (raises ``Crash``) once ``count`` events of the
    durable store were appended: the process dying right after that append."""

    def __init__(self, count: int) -> None:
        self.left = count

    def __call__(self, event: Any) -> None:
        self.left -= 1
        if self.left == 0:
            raise Crash(f"died after {event.key}")


def test_dying_after_any_append_then_resuming_ends_as_an_uninterrupted_run() -> None:
    """Every event boundary of a run on a DurableRun, one by one: the run dies right after
    it, is reopened from the backend and resumed; it must end as the uninterrupted run,
    without running what was on record again."""
    backend = InMemoryBackend()
    with DurableRun.open(backend, "reference", run_id="job") as run:
        ref_job = Job()
        ref_result = ref_job.agent(run.store, threads=False).run("go", run_id="job")
        reference = comparable(run.store)
        events = run.store.last_seq
    for count in range(1, events + 1):
        thread, job = f"die-{count}", Job()
        with DurableRun.open(backend, thread, run_id="job") as run:
            run.store.subscribe(DieAfter(count))
            with pytest.raises((Crash, NodeError)):
                job.agent(run.store, threads=False).run("go", run_id="job")
        crashed = job.calls.copy()
        job.calls.clear()
        with DurableRun.open(backend, thread, run_id="job") as run:
            held = {e.path for e in run.store.entries(kind="step")}
            result = job.agent(run.store, threads=False).run("go", run_id="job")
            assert comparable(run.store) == reference, f"died after event {count}"
        assert result == ref_result
        again = crashed + job.calls - ref_job.calls
        assert sum(again.values()) <= 2, f"died after event {count}: {again} ran again"
        for (what, k), _ in again.items():
            assert f"job/iter/{k}" not in held, f"{what} {k} ran again after its iteration"
        assert job.payments == ref_job.payments, f"died after event {count}"


def test_the_crash_leaves_what_finished_on_record(place: Place) -> None:
    job = Job(("tick", 3))
    with pytest.raises(Crash):
        job.agent(place.open()).run("go", run_id="job")
    store = place.open()
    log = RunLog(store, "job")
    run = log.run()
    assert run is not None and (run.kind, run.status, run.units) == ("agent", "running", ("agent",))
    assert all(log.get(f"iter/{n}") is not None for n in range(3))
    assert log.get("iter/3/reply") is not None and log.get("iter/3") is None
    work = log.get("iter/3/action/0")  # the single action that finished before the crash
    assert work is not None and work.result["action"]["result"] == {"paid": 3}
    actions = store.value("state", "agent/agent/actions")
    assert [(r["iteration"], r["action"]["type"]) for r in actions][-1] == (3, "work")


def test_a_finished_run_run_again_returns_its_result_and_calls_nothing() -> None:
    job, agent, result = reference()
    events = len(agent.store.events())
    job.calls.clear()
    again = job.agent(agent.store).run("go", run_id="job")
    assert again == result
    assert not job.calls
    assert len(agent.store.events()) == events  # and writes nothing


def test_resuming_twice_from_the_same_crash_point_ends_the_same() -> None:
    _, ref_agent, ref_result = reference()
    job = Job(("work", 3))
    store = Store()
    with pytest.raises(Crash):
        job.agent(store).run("go", run_id="job")
    job.crash = ("work", 5)
    with pytest.raises(Crash):
        job.agent(store).run("go", run_id="job")
    assert job.agent(store).run("go", run_id="job") == ref_result
    assert comparable(store) == comparable(ref_agent.store)


def test_an_iteration_is_recorded_before_the_next_one_starts() -> None:
    store = Store()
    log = RunLog(store, "job")
    seen: list[tuple[bool, bool]] = []

    def look() -> None:
        seen.append((log.get("iter/0") is not None, log.get("iter/1") is not None))

    reply = json.dumps({"next_actions": [[{"type": "look", "args": {}}]]})
    agent = Agent(
        ScriptedReasoner([reply, reply, json.dumps({"task_status": "Completed"})]),
        actor={"look": look},
        store=store,
    )
    agent.run("go", run_id="job")
    assert seen == [(False, False), (True, False)]


def test_runs_without_a_run_id_record_nothing_to_resume() -> None:
    job = Job()
    agent = job.agent(Store())
    agent.run("go")
    assert not agent.store.entries(kind="step")


def test_a_finished_run_is_marked_completed_with_its_output() -> None:
    _, agent, result = reference()
    run = RunLog(agent.store, "job").run()
    assert run is not None and (run.kind, run.status) == ("agent", "completed")
    assert run.output == result.output


def test_a_branchs_own_loop_is_recorded_under_its_branch() -> None:
    _, agent, _ = reference()
    branch = RunLog(agent.store, "job").scope("iter/0/branch/1.0")
    own = branch.get("iter/0")  # the branch agent's first iteration, merged with the group
    assert own is not None and own.kind == "iteration" and own.label == "agent/0.1.0"
    assert own.result["state"]["response"]["instant_response"] == "branch done"
    assert branch.run() is not None  # the same run: its record is the run's


# --------------------------------------------------------------------- keyed calls


def test_call_once_returns_the_recorded_result_when_the_action_runs_again() -> None:
    effects: list[str] = []
    crashes = iter([True])

    def charge(order: str, call_once: Any) -> Any:
        receipt = call_once("charge", lambda: effects.append(order) or {"receipt": order})
        if next(crashes, False):
            raise Crash("after the charge, before the action finished")
        return receipt

    reply = json.dumps({"next_actions": [[{"type": "charge", "args": {"order": "o-1"}}]]})
    replies = ScriptedReasoner([reply, json.dumps({"task_status": "Completed"})])
    store = Store()
    agent = Agent(replies, actor={"charge": charge}, store=store)
    with pytest.raises(Crash):
        agent.run("pay", run_id="job")
    result = Agent(replies, actor={"charge": charge}, store=store).run("pay", run_id="job")
    assert effects == ["o-1"]
    assert result.states[0].action_results.result == {"receipt": "o-1"}
    record = RunLog(store, "job").get("iter/0/action/0/calls/charge")
    assert record is not None and (record.kind, record.label, record.result) == (
        "call",
        "charge",
        {"receipt": "o-1"},
    )


def test_a_keyed_call_is_scoped_to_its_run_and_its_action() -> None:
    """The same key in two actions, or in another run, is another call; a durable run's
    own ``call_once`` keys are the thread's, not an agent action's."""
    fetched: list[str] = []

    async def fetch(url: str, acall_once: Any) -> Any:
        async def get() -> str:
            fetched.append(url)
            return f"page {url}"

        return await acall_once("get", get)

    groups = [[{"type": "fetch", "args": {"url": "u"}}], [{"type": "fetch", "args": {"url": "v"}}]]
    reply = json.dumps({"next_actions": groups})
    done = json.dumps({"task_status": "Completed"})
    with DurableRun.open(InMemoryBackend(), "t", run_id="job") as run:
        replies = ScriptedReasoner([reply, done, reply, done])
        agent = Agent(replies, actor={"fetch": fetch}, store=run.store)
        agent.run("get u and v", run_id="job")
        assert fetched == ["u", "v"]
        record = RunLog(run.store, "job").get("iter/0/action/1/calls/get")
        assert record is not None and record.result == "page v"
        assert run.call_once("get", lambda: "the thread's own") == "the thread's own"
        agent.run("get u and v", run_id="job")  # the run is finished: nothing is called
        assert fetched == ["u", "v"]
        agent.run("get them again", run_id="job-2")
        assert fetched == ["u", "v", "u", "v"]


def test_without_a_run_id_call_once_just_calls() -> None:
    effects: list[int] = []
    reply = json.dumps({"next_actions": [[{"type": "pay", "args": {}}]]})
    agent = Agent(
        ScriptedReasoner([reply, json.dumps({"task_status": "Completed"})]),
        actor={"pay": lambda call_once: call_once("k", lambda: effects.append(1) or 1)},
    )
    agent.run("pay")
    assert effects == [1]
    assert not agent.store.entries(kind="step")


def test_call_once_refuses_an_async_function_and_names_acall_once() -> None:
    async def slow() -> int:
        return 1

    reply = json.dumps({"next_actions": [[{"type": "pay", "args": {}}]]})
    agent = Agent(
        ScriptedReasoner([reply, json.dumps({"task_status": "Completed"})]),
        actor={"pay": lambda call_once: call_once("k", slow)},
    )
    result = agent.run("pay", run_id="job")
    assert "acall_once" in result.states[0].action_results.result["error"]


def test_a_keyed_call_in_a_branchs_own_loop_is_not_made_again_when_the_branch_reruns() -> None:
    """A branch runs again whole after a crash (its loop's records were on its fork), but
    its keyed calls were recorded on the run's store at once."""
    effects: list[str] = []
    crashes = iter([True])
    group = json.dumps({"next_actions": [[{"type": "a"}, {"type": "b"}]]})
    pay = json.dumps({"next_actions": [[{"type": "pay"}]]})
    done = json.dumps({"task_status": "Completed"})

    def reasoner(prompt: str) -> str:
        if '"paid"' in prompt:  # branch b's loop once it paid, and the parent after the group
            return done
        if "from b" in prompt:  # branch b's loop, fed its action's result
            return pay
        return done if "from a" in prompt else group

    def pay_once(call_once: Any) -> Any:
        paid = call_once("pay", lambda: effects.append("pay") or {"paid": 1})
        if next(crashes, False):
            raise Crash("after the payment, inside branch b's loop")
        return paid

    def agent(store: Store) -> Agent:
        actors = {"a": lambda: "from a", "b": lambda: "from b", "pay": pay_once}
        return Agent(reasoner, actor=actors, store=store)

    store = Store()
    with pytest.raises((Crash, NodeError)):
        agent(store).run("go", run_id="job")
    assert effects == ["pay"]
    paid = RunLog(store, "job").get("iter/0/branch/0.1/iter/0/action/0/calls/pay")
    assert paid is not None and paid.result == {"paid": 1}
    resumed = Store.from_events(store.events())
    result = agent(resumed).run("go", run_id="job")
    assert effects == ["pay"]
    assert result.states[0].action_results[1].result == {"paid": 1}


# ------------------------------------------------------------------- the planning agent


def test_solved_problems_of_a_plan_are_not_solved_again() -> None:
    plan = json.dumps(
        {
            "problems": [
                {"request": "find a", "problem_id": "A"},
                {"request": "find b", "problem_id": "B"},
                {"request": "join", "problem_id": "C"},
            ],
            "problem_graph": "A -> C\nB -> C",
        }
    )
    done = json.dumps({"instant_response": "joined", "task_status": "Completed"})
    solved: Counter[str] = Counter()
    crash: list[str] = []

    def solver(request: str, store: Any, previous_agent_results: Any = None) -> str:
        solved[request] += 1
        store.write("shared", f"notes/{request}", request)
        if request in crash:
            crash.clear()
            raise Crash(request)
        return request.upper()

    def planner(store: Store) -> PromptBasedActionPlanningAgent:
        return PromptBasedActionPlanningAgent(
            ScriptedReasoner(lambda p: done if "JOIN" in p else plan),
            solver=solver,
            store=store,
            name="planner",
        )

    reference_store = Store()
    crash_free = planner(reference_store).run("go", run_id="job")
    solved.clear()
    crash.append("join")
    store = Store()
    with pytest.raises((Crash, NodeError)):
        planner(store).run("go", run_id="job")
    assert solved == Counter({"find a": 1, "find b": 1, "join": 1})
    resumed = Store.from_events(store.events())
    result = planner(resumed).run("go", run_id="job")
    assert solved == Counter({"find a": 1, "find b": 1, "join": 2})
    assert result == crash_free
    assert comparable(resumed) == comparable(reference_store)
    assert planner(resumed).run("go", run_id="job") == crash_free
    assert solved["join"] == 2


# ----------------------------------------------------------------- durable joins


class RecordingBackend(InMemoryBackend):
    """Remembers the keys of each appended batch (each batch is one transaction)."""

    def __init__(self) -> None:
        super().__init__()
        self.batches: list[list[str]] = []

    def append(self, thread_id: str, run_id: str, expected: int, events: Any, **kw: Any) -> int:
        self.batches.append([e.key for e in events])
        return super().append(thread_id, run_id, expected, events, **kw)


def test_on_a_durable_run_a_groups_merge_and_its_records_are_one_append() -> None:
    backend = RecordingBackend()
    with DurableRun.open(backend, "t", run_id="job") as run:
        Job().agent(run.store).run("go", run_id="job")
        log = RunLog(run.store, "job")
        branches = [log.get(f"iter/0/branch/1.{k}") for k in (0, 1)]
    (merge,) = [b for b in backend.batches if "step:job/iter/0/group/1/merge" in b]
    # the branches' writes, their records (now committed) and the merge's record
    assert {"state:agent/agent/0.1.0/states", "state:agent/agent/0.1.1/states"} <= set(merge)
    assert {"step:job/iter/0/branch/1.0", "step:job/iter/0/branch/1.1"} <= set(merge)
    assert all(b is not None and b.committed and b.changes is None for b in branches)
    # before the merge each branch was recorded on its own, its writes inside its record
    for k in (0, 1):
        own = [b for b in backend.batches if b == [f"step:job/iter/0/branch/1.{k}"]]
        assert len(own) == 1
    # the summarizer's value is recorded after the merge
    later = backend.batches[backend.batches.index(merge) + 1 :]
    assert ["step:job/iter/0/group/1"] in later


# ----------------------------------------------------------------------- refusals


def test_a_run_id_with_a_slash_is_refused() -> None:
    with pytest.raises(AgentBuildError, match="without '/'"):
        Job().agent(Store()).run("go", run_id="a/b")


def test_a_run_id_recorded_by_another_agent_is_refused() -> None:
    _, agent, _ = reference()
    other = Agent(ScriptedReasoner([]), store=agent.store, name="other")
    with pytest.raises(AgentError, match=r"recorded for .*units \[agent\]"):
        other.run("go", run_id="job")


def test_a_run_id_recorded_by_a_graph_is_refused() -> None:
    store = Store()
    WorkGraph([[lambda: 1]]).run(store=store, run_id="job")
    with pytest.raises(AgentError, match="recorded for a graph"):
        Job().agent(store).run("go", run_id="job")


def test_resuming_after_the_agent_ran_on_is_refused() -> None:
    job = Job(("work", 3))
    store = Store()
    with pytest.raises(Crash):
        job.agent(store).run("go", run_id="job")
    job.agent(store).run("something else")  # iterations 3.. used by another run
    with pytest.raises(AgentError, match="moved on to iteration"):
        job.agent(store).run("go", run_id="job")


def test_a_restored_branch_writes_what_the_branch_wrote() -> None:
    """Reducers, DELETE markers and deletes of a finished branch survive its record."""
    group = json.dumps({"next_actions": [[{"type": "a"}, {"type": "b"}]]})
    done = json.dumps({"instant_response": "ok", "task_status": "Completed"})
    crash: list[bool] = []
    b_ran: list[str] = []

    def reasoner(prompt: str) -> str:
        return done if "ActionResult" in prompt else group

    def setup(store: Store) -> Store:
        store.declare("shared", "profile", reducers.merge)
        if not store.has("shared", "profile"):
            store.write("shared", "profile", {"x": 1, "y": 2})
            store.write("shared", "old", "gone soon")
        return store

    def agent(store: Store) -> Agent:
        async def a() -> str:
            if crash:
                for _ in range(5000):
                    if store.has("step", "job/iter/0/branch/0.1"):
                        break
                    await asyncio.sleep(0.001)
                crash.clear()
                raise Crash("a")
            return "a"

        def b(store: Store) -> str:
            b_ran.append("b")
            store.write("shared", "profile", {"x": DELETE, "z": 3})
            store.delete("shared", "old")
            return "b"

        return Agent(reasoner, actor={"a": a, "b": b}, store=store)

    reference_store = setup(Store())
    agent(reference_store).run("go", run_id="job")
    crash.append(True)
    store = setup(Store())
    with pytest.raises((Crash, NodeError)):
        agent(store).run("go", run_id="job")
    b_ran.clear()
    resumed = setup(Store.from_events(store.events()))
    agent(resumed).run("go", run_id="job")
    assert b_ran == []  # restored from its record
    assert resumed.value("shared", "profile") == {"y": 2, "z": 3}
    assert comparable(resumed) == comparable(reference_store)


# ------------------------------------------------------------- a real process, SIGKILL

HERE = Path(__file__).parent
WORKER_ENV = {**os.environ, "PYTHONPATH": os.pathsep.join([str(HERE), *sys.path])}


@dataclass(frozen=True)
class OnRecord:
    """What a thread held when a worker was killed: the finished iterations, the single
    actions and branches recorded in the unfinished one, and the keyed calls."""

    iterations: frozenset[int]
    actions: frozenset[tuple[str, int]]
    branches: frozenset[tuple[str, int]]
    calls: frozenset[str]

    @classmethod
    def read(cls, database: Path, thread: str) -> OnRecord:
        backend = SQLiteBackend(database)
        try:
            store = load_store(backend, thread)
        finally:
            backend.close()
        steps = [e.path for e in store.entries(kind="step")]
        results = [e.path for e in store.entries(kind="step") if isinstance(e.value, StepRecord)]
        actions = store.value("state", "agent/agent/actions", None) or []
        branch = re.compile(r"job/iter/(\d+)/branch/1\.([01])$")
        call = re.compile(r"job/iter/(\d+)/.*/calls/(pay|note)$")
        return cls(
            iterations=frozenset(int(p.split("/")[2]) for p in steps if p.count("/") == 2),
            actions=frozenset((r["action"]["type"], r["iteration"]) for r in actions),
            branches=frozenset(
                ("ab"[int(m[2])], int(m[1])) for p in steps if (m := branch.match(p))
            ),
            calls=frozenset(  # a call's result, not its intent (a call that began)
                f"{m[2]}-{m[1]}" for p in results if (m := call.match(p))
            ),
        )


def start_worker(database: Path, thread: str, counter: Path, ledger: Path) -> Any:
    script = str(HERE / "agent_crash_worker.py")
    proc = subprocess.Popen(
        [sys.executable, script, str(database), thread, str(counter), str(ledger)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=WORKER_ENV,
    )
    assert proc.stdout is not None
    # read "ready" from the pipe itself: a buffered readline could swallow the start of
    # "done", which a run that has nothing left to do prints at once, and communicate()
    # reads the pipe, not that buffer
    line = b""
    while not line.endswith(b"\n"):
        byte = os.read(proc.stdout.fileno(), 1)
        assert byte, f"the worker ended before it was ready: {proc.communicate()}"
        line += byte
    assert line == b"ready\n"
    return proc


def finish_worker(proc: Any) -> dict[str, Any]:
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    done = [line for line in out.splitlines() if line.startswith("done ")]
    assert done, out + err
    state: dict[str, Any] = json.loads(done[0][5:])
    return state


def runs(counter: Path) -> list[str]:
    """The lines of COUNTER without the pid: ``run work 3``, ``effect pay-3``."""
    lines = counter.read_text().splitlines() if counter.exists() else []
    return [line.split(" ", 1)[1] for line in lines]


def check_nothing_recorded_ran_again(lines: list[str], held: OnRecord) -> None:
    for line in lines:
        what, name, *rest = line.split()
        if what == "effect":
            assert name not in held.calls, f"{name}: its call was recorded, yet it ran again"
            continue
        k = int(rest[0])
        assert k not in held.iterations, f"{line}: its iteration was recorded, yet it ran"
        assert (name, k) not in held.actions, f"{line}: its action was recorded, yet it ran"
        assert (name, k) not in held.branches, f"{line}: its branch was recorded, yet it ran"


def crash_and_resume(attempt: int, folder: Path, total: int) -> tuple[dict[str, Any], list[str]]:
    """Kill a worker once or twice, each time after a random number of actions began plus
    a random fraction of an action's time, then resume in a fresh process until done;
    every resumed process must leave alone what was on record when the last one died."""
    rng = random.Random(20240611 + attempt)
    database, thread = folder / "weft.db", f"crash-{attempt}"
    counter, ledger = folder / f"{thread}.count", folder / f"{thread}.ledger"
    held = OnRecord(frozenset(), frozenset(), frozenset(), frozenset())
    for _kill in range(rng.randint(1, 2)):
        seen = len(runs(counter))
        proc = start_worker(database, thread, counter, ledger)
        began = [line for line in runs(counter) if line.startswith("run")]
        target = len(began) + rng.randint(1, max(1, total - len(began)))
        while len([x for x in runs(counter) if x.startswith("run")]) < target:
            if proc.poll() is not None:
                break
            time.sleep(0.0005)
        time.sleep(rng.uniform(0, 0.004))
        proc.send_signal(signal.SIGKILL)
        proc.communicate()
        check_nothing_recorded_ran_again(runs(counter)[seen:], held)
        held = OnRecord.read(database, thread)
    seen = len(runs(counter))
    state = finish_worker(start_worker(database, thread, counter, ledger))
    check_nothing_recorded_ran_again(runs(counter)[seen:], held)
    return state, sorted(ledger.read_text().split())


def test_sigkill_at_random_points_then_resume_ends_as_an_uninterrupted_run(
    tmp_path: Path,
) -> None:
    """Ten attempts, three at a time: each worker is SIGKILLed once or twice at random
    points (inside actions, between an action and its record, inside branches, joins and
    keyed calls), then resumed in a new process; each must end with the store of an
    uninterrupted run, each keyed effect applied once, and nothing on record run again."""
    ledger = tmp_path / "reference.ledger"
    counter = tmp_path / "reference.count"
    reference = finish_worker(start_worker(tmp_path / "weft.db", "reference", counter, ledger))
    total = len([line for line in runs(counter) if line.startswith("run")])
    keys = sorted(ledger.read_text().split())
    assert len(keys) == 13  # ten payments, three notes
    with ThreadPoolExecutor(max_workers=3) as pool:
        ends = list(pool.map(lambda a: crash_and_resume(a, tmp_path, total), range(10)))
    for attempt, (state, effects) in enumerate(ends):
        assert state == reference, f"attempt {attempt}: the resumed run ended differently"
        assert effects == keys, f"attempt {attempt}: effects applied {effects}"
