"""Typed records and RunLog: the one record of finished work, and the one resume."""

from __future__ import annotations

import asyncio
import dataclasses
from typing import Any

import pytest

from weft.errors import StoreError, ValueTypeError
from weft.store import Event, Note, RunLog, RunRecord, StepRecord, Store
from weft.store.records import KIND, node_note, node_record


def test_a_new_run_is_begun_once_and_checked_when_it_begins_again() -> None:
    store = Store()
    first = RunLog(store, "job-1").begin("graph", ("a#0", "b#1"))
    assert (first.kind, first.status, first.units) == ("graph", "running", ("a#0", "b#1"))
    again = RunLog(store, "job-1").begin("graph", ("a#0", "b#1"))
    assert again == first
    assert store.value(KIND, "job-1") == first
    with pytest.raises(StoreError, match=r"recorded for a graph \(units \[a#0, b#1\]\)"):
        RunLog(store, "job-1").begin("graph", ("a#0",))
    with pytest.raises(StoreError, match="not for this agent"):
        RunLog(store, "job-1").begin("agent", ("a#0", "b#1"))


def test_a_run_id_that_names_something_else_is_refused_with_what_it_holds() -> None:
    store = Store()
    store.write(KIND, "research", {"result": "an executor's step"})
    with pytest.raises(StoreError, match=r"step:research holds a FrozenDict.*another run_id"):
        RunLog(store, "research").begin("graph", ("a#0",))
    assert store.value(KIND, "research") == {"result": "an executor's step"}


@pytest.mark.parametrize("bad", ["", "a/b", 7, None])
def test_a_run_id_is_a_plain_name(bad: Any) -> None:
    with pytest.raises(StoreError, match="a run id is a non-empty string without '/'"):
        RunLog(Store(), bad)


def test_units_are_recorded_read_and_listed_by_path() -> None:
    store = Store()
    log = RunLog(store, "r")
    log.begin("agent")
    log.record("iter/1", StepRecord(kind="iteration", result={"answer": 42}))
    log.scope("iter/2").record("branch/0", StepRecord(kind="branch", result=[1, 2]))
    got = log.get("iter/1")
    assert got is not None and got.result == {"answer": 42}
    assert log.get("iter/3") is None
    assert set(log.recorded()) == {"iter/1", "iter/2/branch/0"}
    assert log.scope("iter/2").path("branch/0") == "r/iter/2/branch/0"
    assert store.has(KIND, "r/iter/2/branch/0")


def test_a_record_written_into_a_fork_lands_with_the_forks_writes_as_one_commit() -> None:
    store = Store()
    batches: list[tuple[Event, ...]] = []
    store.subscribe(batches.append, batches=True)
    log = RunLog(store, "r")
    with store.transaction() as tx:
        tx.write("state", "x", 1)
        log.record("n#0", StepRecord(result="done"), into=tx)
        assert log.get("n#0") is None  # not in the store until the commit
    assert [[(e.kind, e.path) for e in batch] for batch in batches] == [
        [("state", "x"), (KIND, "r/n#0")]
    ]


def test_complete_marks_the_run_with_its_output_and_keeps_the_status_if_it_cannot() -> None:
    store = Store()
    log = RunLog(store, "r")
    log.complete("nothing began")  # no run record: nothing to complete
    assert log.run() is None
    log.begin("plan")
    log.complete({"total": 3})
    done = log.run()
    assert done is not None and (done.status, done.output) == ("completed", {"total": 3})
    assert done.duration_ms is not None and done.duration_ms >= 0
    other = RunLog(store, "r2")
    other.begin("plan")
    other.complete(object())  # cannot be stored: the status is still recorded
    assert other.run() == RunRecord(
        kind="plan",
        status="completed",
        began=other.run().began,  # type: ignore[union-attr]
        started_at=other.run().started_at,  # type: ignore[union-attr]
        duration_ms=other.run().duration_ms,  # type: ignore[union-attr]
    )


def test_a_keyed_call_runs_once_and_returns_its_recorded_result_after() -> None:
    store = Store()
    log = RunLog(store, "r")
    made: list[int] = []

    def charge(amount: int) -> tuple[str, int]:
        made.append(amount)
        return ("receipt", amount)

    assert log.once("pay", "charge-1", charge, 5) == ("receipt", 5)
    assert RunLog(store, "r").once("pay", "charge-1", charge, 5) == ("receipt", 5)  # a tuple again
    assert log.once("", "whole-run", charge, 6) == ("receipt", 6)
    assert made == [5, 6]
    assert store.value(KIND, "r/pay/calls/charge-1").kind == "call"
    assert store.has(KIND, "r/calls/whole-run")


def test_a_failed_keyed_call_is_not_recorded_and_runs_again() -> None:
    log = RunLog(Store(), "r")
    tries: list[int] = []

    def flaky() -> str:
        tries.append(1)
        if len(tries) == 1:
            raise ConnectionError("down")
        return "ok"

    with pytest.raises(ConnectionError):
        log.once("u", "k", flaky)
    assert log.once("u", "k", flaky) == "ok"
    assert len(tries) == 2


def test_a_keyed_call_refuses_an_async_function_and_a_bad_key() -> None:
    log = RunLog(Store(), "r")

    async def later() -> int:
        return 1

    with pytest.raises(StoreError, match="use the async form"):
        log.once("u", "k", later)
    with pytest.raises(StoreError, match="idempotency key ''"):
        log.once("u", "", lambda: 1)
    assert asyncio.run(log.aonce("u", "k", later)) == 1
    assert log.once("u", "k", later) == 1  # recorded: not called again


def test_records_refuse_values_that_cannot_be_stored() -> None:
    with pytest.raises(ValueTypeError, match="the result of a call"):
        StepRecord(kind="call", result=object())
    with pytest.raises(StoreError, match="changes are not events"):
        StepRecord(changes=(1, 2))  # type: ignore[arg-type]


def test_a_step_record_keeps_each_field_it_is_given_under_its_own_name() -> None:
    given: dict[str, Any] = {
        "kind": "call",
        "label": "fetch",
        "result": [1],
        "flag": "AbortBranch",
        "tuple_result": True,
        "changes": (),
        "committed": False,
        "writes": 3,
        "began": 7,
        "started_at": 1.5,
        "duration_ms": 2.5,
    }
    record = StepRecord(**given)
    assert {name: getattr(record, name) for name in given} == given
    assert set(given) == {f.name for f in dataclasses.fields(StepRecord)}
    with pytest.raises(dataclasses.FrozenInstanceError):
        record.kind = "node"  # type: ignore[misc]


def test_a_node_record_built_straight_equals_the_step_record_built_by_keywords() -> None:
    record = node_record(2, 1.5, 0.25)
    assert record == StepRecord(writes=2, started_at=1.5, duration_ms=0.25)
    assert record.__class__ is StepRecord and hash(record) == hash(
        StepRecord(**{f.name: getattr(record, f.name) for f in dataclasses.fields(StepRecord)})
    )


def test_a_note_keeps_each_field_it_is_given_under_its_own_name() -> None:
    given: dict[str, Any] = {
        "event": "failed",
        "unit": "fetch#2",
        "kind": "action",
        "label": "fetch",
        "run_id": "run-1",
        "duration_ms": 2.5,
        "flag": "AbortBranch",
        "error": "ValueError: no",
        "reason": "cancelled",
    }
    note = Note(**given)
    assert {name: getattr(note, name) for name in given} == given
    assert set(given) == {f.name for f in dataclasses.fields(Note)}
    assert Note(event="started", unit="a#0") == Note(
        event="started", unit="a#0", kind="node", label=None, run_id=None
    )
    with pytest.raises(dataclasses.FrozenInstanceError):
        note.unit = "other"  # type: ignore[misc]


def test_a_node_note_built_straight_equals_the_note_built_by_keywords() -> None:
    note = node_note("finished", "a#0", "a", "run-1", 0.25, "Terminate")
    assert note == Note(
        event="finished", unit="a#0", label="a", run_id="run-1", duration_ms=0.25, flag="Terminate"
    )
    assert note.__class__ is Note and hash(note) == hash(
        Note(**{f.name: getattr(note, f.name) for f in dataclasses.fields(Note)})
    )
