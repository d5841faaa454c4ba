"""A hostile write to a durable run is refused when written, with weft's own error, and the
run goes on: the next write is appended and the thread loads (memory, SQLite, PostgreSQL)."""

from __future__ import annotations

import dataclasses
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from persist_helpers import Factory

from weft.errors import CorruptRecordError, NodeError, StoreError, WeftError
from weft.graph import WorkGraph, WorkGraphNode
from weft.memory import AgentMemory, memory_tools
from weft.persist import Backend, DurableRun, SQLiteBackend, load_store
from weft.store import MAX_DEPTH, Note, Store, register_type

LONE = "\udc80"


@dataclasses.dataclass
class Gauge:
    reading: float


register_type(Gauge, "hostile.persist.Gauge")


def nested(depth: int) -> Any:
    value: Any = []
    for _ in range(depth - 1):
        value = [value]
    return value


HOSTILE = {
    "surrogate key": lambda s: s.write("shared", f"notes{LONE}", "x"),
    "surrogate value": lambda s: s.write("shared", "k", {"text": f"a{LONE}"}),
    "surrogate dict key": lambda s: s.write("shared", "k", {f"a{LONE}": 1}),
    "surrogate source": lambda s: s.write("shared", "k", 1, source=LONE),
    "source not a string": lambda s: s.write("shared", "k", 1, source=42),
    "int of 5000 digits": lambda s: s.write("shared", "k", 10**5000),
    "list nested 700 deep": lambda s: s.write("shared", "k", nested(700)),
    "list nested past recursion": lambda s: s.write("shared", "k", nested(50_000)),
    "one level past MAX_DEPTH": lambda s: s.write("shared", "k", nested(MAX_DEPTH + 1)),
    "nan in a dataclass": lambda s: s.write("shared", "k", Gauge(float("nan"))),
    "surrogate in a batch": lambda s: s.write_many("shared", [("a", 1, None), (LONE, 2, None)]),
    "surrogate in a transaction": lambda s: _in_transaction(s),
}


def _in_transaction(store: Store) -> None:
    with store.transaction() as tx:
        tx.write("shared", "a", 1)
        tx.write("shared", "b", {"x": LONE})


@pytest.mark.parametrize("name", list(HOSTILE))
def test_a_hostile_write_is_refused_and_the_durable_run_goes_on(
    name: str, open_backend: Factory
) -> None:
    run = DurableRun.open(open_backend(), "t", run_id="r1")
    run.store.write("shared", "before", 1)
    with pytest.raises(StoreError):
        HOSTILE[name](run.store)
    run.store.write("shared", "after", 2)  # no reload(): the run was never wedged
    run.store.write("shared", "after", 3)
    assert run.step == 3
    run.close()
    again = load_store(open_backend(), "t")
    assert {e.key: e.value for e in again.entries()} == {"shared:before": 1, "shared:after": 3}


def test_a_hostile_note_with_lazy_notes_never_wedges_later_commits(open_backend: Factory) -> None:
    run = DurableRun.open(open_backend(), "t", notes="lazy")
    with pytest.raises(StoreError, match=r"note state:agent\.raw: the text holds a lone"):
        run.store.note("state", "agent", {"event": "retry", "raw": f"reply {LONE}"})
    run.store.note("state", "agent", {"event": "retry", "raw": "fine"})
    run.store.write("state", "x", 1)
    run.close()
    history = open_backend().history("t")
    assert [(e.event.op, e.event.path) for e in history] == [("note", "agent"), ("write", "x")]


def test_a_model_cannot_switch_off_durability_through_memory_write(
    open_backend: Factory,
) -> None:
    run = DurableRun.open(open_backend(), "t")
    tools = memory_tools(AgentMemory(run.store))
    for args in (
        {"key": f"plan{LONE}", "value": "x"},
        {"key": "plan", "value": {"steps": [f"{LONE}"]}},
        {"key": "plan", "value": nested(MAX_DEPTH + 5)},
    ):
        refused = tools.call("memory_write", args)
        assert refused["ok"] is False, refused
    assert tools.call("memory_write", {"key": "plan", "value": "ok"})["ok"] is True
    run.close()
    assert load_store(open_backend(), "t").value("shared", "plan") == "ok"


@pytest.mark.parametrize(
    ("value", "why"),
    [
        ('{"r":NaN}', "NaN is not a JSON number"),
        ('{"r":-Infinity}', "-Infinity is not a JSON number"),
        ('"\\ud800"', "surrogates not allowed"),
        ("1" * 5000, "4300"),
        ("[" * 50_000 + "]" * 50_000, "nests too deeply"),
    ],
)
def test_a_stored_record_weft_would_not_write_is_a_corrupt_record_naming_the_step(
    tmp_path: Path, value: str, why: str
) -> None:
    path = tmp_path / "weft.db"
    with SQLiteBackend(path) as backend:
        run = DurableRun.open(backend, "t")
        run.store.write("state", "good", 1)
        run.store.write("state", "r", {"r": 1.5})
        run.store.write("state", "last", 3)  # SQLite reads the last record's time itself
        run.close()
    record = f'{{"v":1,"op":"write","kind":"state","path":"r","time":1.0,"value":{value}}}'
    with sqlite3.connect(path) as conn:
        conn.execute("UPDATE weft_events SET record = ? WHERE seq & 4294967295 = 2", (record,))
    conn.close()
    with SQLiteBackend(path) as backend:
        with pytest.raises(CorruptRecordError, match=f"step 2 of thread 't'.*{why}"):
            DurableRun.open(backend, "t")
        assert load_store(backend, "t", step=1).value("state", "good") == 1


def test_a_registered_type_with_a_non_finite_float_never_reaches_the_backend(
    backend: Backend,
) -> None:
    run = DurableRun.open(backend, "t")
    with pytest.raises(WeftError, match=r"shared:g\.reading: inf is not a JSON number"):
        run.store.write("shared", "g", Gauge(float("inf")))
    run.store.write("shared", "g", Gauge(2.5))
    run.close()
    assert load_store(backend, "t").value("shared", "g") == Gauge(2.5)


def test_a_failure_whose_message_holds_a_lone_surrogate_is_reported_not_hidden(
    open_backend: Factory,
) -> None:
    def tool() -> None:
        raise ValueError(f"the model sent {LONE}")

    run = DurableRun.open(open_backend(), "t", notes="eager")
    seen: list[Any] = []
    run.store.subscribe(seen.append)  # observed: the engine writes its nodes' notes
    with pytest.raises(NodeError) as caught:
        run.run_graph(WorkGraph(start_nodes=[WorkGraphNode(tool)]))
    assert isinstance(caught.value.__cause__, ValueError)  # the node's own error, not a refusal
    run.store.write("state", "after", 1)
    run.close()
    history = open_backend().history("t")
    notes = [e.event.value for e in history if isinstance(e.event.value, Note)]  # the nodes'
    assert notes[-1].error == "ValueError: the model sent \\udc80"
    assert load_store(open_backend(), "t").value("state", "after") == 1
