"""Durable runs: live appends, restarts, time travel, forks, concurrency, exactly-once calls."""

from __future__ import annotations

from typing import Any

import pytest
from persist_helpers import Factory

from weft.errors import ConflictError, NodeError, PersistError, StorageError
from weft.graph import ResultPassDownMode, WorkGraph, WorkGraphNode
from weft.memory import AgentMemory, memory_keys, memory_tools
from weft.persist import Backend, DurableRun, SQLiteBackend, fork_thread, load_store
from weft.store import reducers

APPEND = {"state:messages": reducers.append}


def test_every_write_is_appended_as_it_happens(backend: Backend) -> None:
    run = DurableRun.open(backend, "t", run_id="r1", reducers=APPEND)
    run.store.write("state", "messages", "hi")
    assert backend.last_step("t") == 1
    run.store.write("state", "messages", "there")
    run.store.delete("state", "messages")
    run.store.write("shared", "x", 1)
    assert backend.last_step("t") == run.step == 4
    assert [e.event.op for e in backend.history("t")] == ["write", "write", "delete", "write"]
    run.close()


def test_a_reopened_thread_continues_where_it_was(open_backend: Factory) -> None:
    first = DurableRun.open(open_backend(), "t", reducers=APPEND)
    for i in range(7):
        first.store.write("state", "messages", i)
    first.close()
    second = DurableRun.open(open_backend(), "t")  # built-in reducers are found by name
    assert second.store.value("state", "messages") == list(range(7))
    second.store.write("state", "messages", 7)
    assert second.step == 8
    assert load_store(open_backend(), "t").value("state", "messages") == list(range(8))
    second.close()


def test_a_field_declared_unpersisted_never_reaches_the_log(open_backend: Factory) -> None:
    backend = open_backend()
    with DurableRun.open(backend, "t", snapshot_every=2) as run:
        run.store.declare("state", "scratch", reducers.replace, persist=False)
        run.store.write("state", "scratch", "a live client")
        run.store.write("state", "kept", 1)
        run.store.delete("state", "scratch")
        run.store.write("state", "scratch", "another")
        run.store.write_many("state", {"scratch": "third", "kept": 2})
        assert run.store.value("state", "scratch") == "third"
    history = backend.history("t")
    assert [(e.event.op, e.event.path) for e in history] == [("write", "kept"), ("write", "kept")]
    reopened = load_store(open_backend(), "t")  # from a snapshot and the log: no scratch
    assert reopened.value("state", "kept") == 2
    assert not reopened.has("state", "scratch")


def test_loading_replays_only_the_events_since_the_last_snapshot(backend: Backend) -> None:
    with DurableRun.open(backend, "t", snapshot_every=10) as run:
        for i in range(95):
            run.store.write("state", "plan", i)  # a small state: a snapshot every 10 events
        whole = run.store.to_dict()
    checkpoint = backend.load("t")
    assert checkpoint.snapshot is not None
    assert len(checkpoint.events) < 10
    assert checkpoint.to_store().to_dict() == whole
    assert len(backend.history("t")) == 95  # the log itself is complete


def test_snapshots_grow_apart_as_the_state_grows(backend: Backend) -> None:
    with DurableRun.open(backend, "t", reducers=APPEND, snapshot_every=10) as run:
        for i in range(95):
            run.store.write("state", "messages", i)
        whole = run.store.to_dict()
    checkpoint = backend.load("t")
    # snapshots at 10, 20, 30, 45, 67: each waits for half the state's items since the last
    assert checkpoint.snapshot is not None
    assert checkpoint.snapshot.step == 67
    assert len(checkpoint.events) == 95 - 67 <= 95 // 2
    assert checkpoint.to_store().to_dict() == whole


def test_time_travel_loads_any_step_without_changing_history(backend: Backend) -> None:
    with DurableRun.open(backend, "t", snapshot_every=4) as run:
        for plan in "ABCDEFGHIJ":
            run.store.write("state", "plan", plan)
        for step, plan in enumerate("ABCDEFGHIJ", start=1):
            assert run.state_at(step).value("state", "plan") == plan
        assert run.store.value("state", "plan") == "J"
        assert len(run.history()) == 10


def test_fork_starts_a_new_thread_with_values_overridden(backend: Backend) -> None:
    with DurableRun.open(backend, "t", reducers=APPEND) as run:
        for m in ("a", "b", "c"):
            run.store.write("state", "messages", m)
        run.store.write("state", "plan", "A")
        branch = run.fork(2, values={"state:plan": "B"}, thread_id="t-alt")
        assert branch.store.value("state", "messages") == ["a", "b"]
        assert branch.store.value("state", "plan") == "B"
        branch.store.write("state", "messages", "z")  # the reducer carried over
        assert branch.store.value("state", "messages") == ["a", "b", "z"]
        branch.close()
        assert run.store.value("state", "messages") == ["a", "b", "c"]
        assert [e.event.value for e in run.history()] == ["a", "b", "c", "A"]
    info = backend.thread("t-alt")
    assert info is not None and (info.parent_thread, info.parent_step) == ("t", 2)
    assert load_store(backend, "t-alt").value("state", "messages") == ["a", "b", "z"]
    with pytest.raises(ConflictError, match="exists already"):
        fork_thread(backend, "t", step=1, thread_id="t-alt")


def test_a_second_writer_gets_a_conflict_and_nothing_is_lost(open_backend: Factory) -> None:
    a = DurableRun.open(open_backend(), "t", run_id="a", reducers=APPEND)
    b = DurableRun.open(open_backend(), "t", run_id="b", reducers=APPEND)
    a.store.write("state", "messages", "from a")
    with pytest.raises(ConflictError, match=r"'t'.*expected its last step to be 0.*step 1"):
        b.store.write("state", "messages", "from b")
    with pytest.raises(ConflictError):
        b.store.write("state", "other", 1)  # stays refused until reload
    b.reload()
    b.store.write("state", "messages", "from b")
    assert load_store(open_backend(), "t").value("state", "messages") == ["from a", "from b"]
    assert [r.run_id for r in open_backend().runs("t")] == ["a", "b"]


def test_a_transaction_is_all_or_nothing_and_retries_after_reload(open_backend: Factory) -> None:
    a = DurableRun.open(open_backend(), "t", run_id="a")
    b = DurableRun.open(open_backend(), "t", run_id="b")
    with a.store.transaction() as tx:
        tx.write("shared", "x", 1)
        tx.write("shared", "y", 1)
    assert a.store.to_dict() == {"shared:x": 1, "shared:y": 1}

    def both() -> None:
        with b.store.transaction() as tx:
            tx.write("shared", "x", 2)
            tx.write("shared", "z", 2)

    with pytest.raises(ConflictError):
        both()
    assert b.store.to_dict() == {}  # nothing merged, nothing stored
    b.reload()
    with b.store.transaction() as tx:
        tx.write("shared", "z", 2)
    assert load_store(open_backend(), "t").to_dict() == {
        "shared:x": 1,
        "shared:y": 1,
        "shared:z": 2,
    }


def test_a_failed_transaction_body_writes_nothing(backend: Backend) -> None:
    run = DurableRun.open(backend, "t")

    def change_of_mind() -> None:
        with run.store.transaction() as tx:
            tx.write("shared", "x", 1)
            raise RuntimeError("changed my mind")

    with pytest.raises(RuntimeError):
        change_of_mind()
    assert run.store.to_dict() == {} and backend.last_step("t") == 0


def test_call_once_runs_a_keyed_call_once_across_restarts(open_backend: Factory) -> None:
    calls: list[str] = []

    def charge(amount: int) -> dict[str, Any]:
        calls.append("charged")
        return {"receipt": f"r-{amount}"}

    first = DurableRun.open(open_backend(), "t")
    assert first.call_once("charge-42", charge, 42) == {"receipt": "r-42"}
    assert first.call_once("charge-42", charge, 42) == {"receipt": "r-42"}
    second = DurableRun.open(open_backend(), "t")  # a new process, say
    assert second.call_once("charge-42", charge, 42) == {"receipt": "r-42"}
    assert calls == ["charged"]
    assert second.call_once("charge-43", charge, 43) == {"receipt": "r-43"}
    assert calls == ["charged", "charged"]


async def test_acall_once_records_an_async_call(backend: Backend) -> None:
    calls = 0

    async def fetch() -> str:
        nonlocal calls
        calls += 1
        return "page"

    run = DurableRun.open(backend, "t")
    assert await run.acall_once("fetch-1", fetch) == "page"
    assert await run.acall_once("fetch-1", fetch) == "page"
    assert calls == 1


def test_a_failed_call_is_not_recorded(backend: Backend) -> None:
    run = DurableRun.open(backend, "t")

    def boom() -> None:
        raise TimeoutError("down")

    with pytest.raises(TimeoutError):
        run.call_once("k", boom)
    assert run.call_once("k", lambda: "ok") == "ok"


@pytest.mark.parametrize("notes", ["lazy", "eager", "off"])
def test_notes_are_appended_lazily_eagerly_or_not_at_all(backend: Backend, notes: str) -> None:
    run = DurableRun.open(backend, "t", notes=notes)  # type: ignore[arg-type]
    run.store.note("step", "r/a", {"event": "started"})
    stored_now = len(backend.history("t"))
    run.store.write("state", "x", 1)
    run.store.note("step", "r/a", {"event": "finished"})
    run.close()
    ops = [e.event.op for e in backend.history("t")]
    if notes == "lazy":
        assert stored_now == 0 and ops == ["note", "write", "note"]
    elif notes == "eager":
        assert stored_now == 1 and ops == ["note", "write", "note"]
    else:
        assert ops == ["write"]
    reopened = DurableRun.open(backend, "t")
    assert reopened.store.value("state", "x") == 1
    reopened.store.write("state", "y", 2)
    assert reopened.step == run.step + 1 or notes == "off"


def test_a_refused_append_undoes_the_write_that_needed_it(tmp_path: Any) -> None:
    backend = SQLiteBackend(tmp_path / "w.db")
    run = DurableRun.open(backend, "t")
    run.store.write("state", "x", 1)
    seen: list[str] = []
    run.store.subscribe(lambda event: seen.append(event.key))
    backend.close()
    with pytest.raises(StorageError):
        run.store.write("state", "x", 2)
    assert run.store.value("state", "x") == 1 and run.store.last_seq == 1  # undone
    assert seen == []  # and nobody heard of it
    with pytest.raises(StorageError):
        run.store.delete("state", "x")
    branch = run.store.fork()
    branch.write("state", "y", 1)  # a fork is not durable itself: its merge is
    with pytest.raises(StorageError):
        run.store.merge([branch])
    assert not run.store.has("state", "y")
    reopened = DurableRun.open(SQLiteBackend(tmp_path / "w.db"), "t")
    assert reopened.store.to_dict() == {"state:x": 1}
    reopened.store.write("state", "x", 2)  # the thread goes on where it was
    assert reopened.step == 2


def test_options_are_checked(backend: Backend) -> None:
    with pytest.raises(PersistError, match="notes='loud'"):
        DurableRun.open(backend, "t", notes="loud")  # type: ignore[arg-type]
    with pytest.raises(PersistError, match="snapshot_every=-1"):
        DurableRun.open(backend, "t", snapshot_every=-1)
    with pytest.raises(PersistError, match="idempotency key ''"):
        DurableRun.open(backend, "t").call_once("", print)


def test_memory_is_prepopulated_from_a_checkpoint(open_backend: Factory) -> None:
    """Seed 001: restore AgentMemory from a checkpoint, then an agent sees the entries."""
    with DurableRun.open(open_backend(), "research") as run:
        memory = AgentMemory(run.store)
        memory.set(memory_keys.task("prior_research"), {"findings": ["a", "b"]},
                   kind="task_result", title="Cached prior research")  # fmt: skip
    restored = AgentMemory(DurableRun.open(open_backend(), "research").store)
    assert restored.get_value(memory_keys.task("prior_research")) == {"findings": ["a", "b"]}
    listing = memory_tools(restored).memory_list({})
    assert [e["key"] for e in listing["entries"]] == ["task:prior_research"]


# ------------------------------------------------------------------ WorkGraph resume


class Counting:
    def __init__(self) -> None:
        self.calls: dict[str, int] = {}
        self.fail: set[str] = set()

    def node(self, name: str, *, state: bool = False) -> WorkGraphNode:
        def call(*args: Any) -> Any:
            self.calls[name] = self.calls.get(name, 0) + 1
            if name in self.fail:
                raise RuntimeError(f"{name} is down")
            if state:
                return {"log": name}
            return f"{name}({args[-1] if args else ''})"

        return WorkGraphNode(call, ResultPassDownMode.ResultAsFirstArg, id=name, state=state)


def diamond(counting: Counting) -> WorkGraph:
    start = counting.node("start")
    left, right = counting.node("left", state=True), counting.node("right", state=True)
    join = counting.node("join")
    start.add_next(left).add_next(join)
    start.add_next(right).add_next(join)
    return WorkGraph(start_nodes=[start])


LOG = {"state:log": reducers.append}


def test_a_graph_resumes_from_its_last_finished_node(open_backend: Factory) -> None:
    counting = Counting()
    counting.fail = {"join"}
    run = DurableRun.open(open_backend(), "t", run_id="job", reducers=LOG)
    run.store.declare("state", "log", reducers.append)
    with pytest.raises(NodeError, match="join"):
        run.run_graph(diamond(counting), "x")
    assert open_backend().load("t").to_store().has("step", "job/left#1")
    counting.fail = set()
    resumed = DurableRun.open(open_backend(), "t", run_id="job", reducers=LOG)  # a new process
    result = resumed.run_graph(diamond(counting), "x")
    assert counting.calls == {"start": 1, "left": 1, "right": 1, "join": 2}
    assert resumed.store.value("state", "log") == ["left", "right"]
    reference = DurableRun.open(open_backend(), "ref", run_id="job", reducers=LOG)
    reference.store.declare("state", "log", reducers.append)
    assert reference.run_graph(diamond(Counting()), "x") == result
    assert reference.store.to_dict(kind="state") == resumed.store.to_dict(kind="state")
    steps = {e.path: e.value.result for e in resumed.store.entries(kind="step") if "/" in e.path}
    assert steps == {
        e.path: e.value.result for e in reference.store.entries(kind="step") if "/" in e.path
    }


def test_each_node_is_committed_whole_or_not_at_all(open_backend: Factory) -> None:
    broken = {"on": True}

    def picky(current: Any, update: Any) -> Any:
        if broken["on"] and len(current) == 2:
            raise ValueError("disk full, say")
        return [*current, update]

    counting = Counting()
    a, b, c = (
        counting.node("a", state=True),
        counting.node("b", state=True),
        counting.node("c", state=True),
    )
    a.add_next(b).add_next(c)
    graph = WorkGraph(start_nodes=[a])
    run = DurableRun.open(open_backend(), "t", run_id="job", reducers={"state:log": picky})
    with pytest.raises(Exception, match="disk full"):
        run.run_graph(graph)
    stored = [e.event for e in open_backend().history("t")]
    assert [e.value for e in stored if e.kind == "state"] == ["a", "b"]  # c: nothing at all
    assert [e.path for e in stored if e.kind == "step"] == ["job/a#0", "job/b#1"]
    assert run.store.value("state", "log") == ["a", "b"]  # the live store agrees with disk
    broken["on"] = False
    resumed = DurableRun.open(open_backend(), "t", run_id="job", reducers={"state:log": picky})
    resumed.run_graph(graph)
    assert resumed.store.value("state", "log") == ["a", "b", "c"]
    assert counting.calls == {"a": 1, "b": 1, "c": 2}  # c's first delta was never committed
    assert load_store(open_backend(), "t", reducers={"state:log": picky}).value("state", "log") == [
        "a",
        "b",
        "c",
    ]
