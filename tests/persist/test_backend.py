"""The backend interface, the same on memory, SQLite and PostgreSQL."""

from __future__ import annotations

import pytest
from persist_helpers import Factory

from weft.errors import ConflictError, PersistError, StepError
from weft.persist import Backend, Snapshot
from weft.persist.snapshot import capture
from weft.store import Event, Store, reducers


def events(*values: object, start: int = 1, path: str = "messages") -> list[Event]:
    return [
        Event(start + i, "write", "state", path, value, "test", "append", 1000.0 + i, None)
        for i, value in enumerate(values)
    ]


def test_an_unknown_thread_is_empty(backend: Backend) -> None:
    checkpoint = backend.load("nobody")
    assert (checkpoint.step, checkpoint.snapshot, checkpoint.events) == (0, None, ())
    assert backend.last_step("nobody") == 0
    assert backend.thread("nobody") is None


def test_appended_events_load_back_equal(backend: Backend) -> None:
    sent = [
        *events("a", "b"),
        Event(3, "write", "state", "cfg", {"x": [1, 2.5, None]}, None, "replace", 5.0, {"t": 1}),
        Event(4, "delete", "state", "cfg", None, "me", "replace", 6.0, None),
        Event(5, "note", "step", "r/n", {"event": "started"}, "n", "replace", 7.0, None),
        Event(6, "clear", "shared", "", None, None, "replace", 8.0, None),
    ]
    assert backend.append("t", "r1", 0, sent) == 6
    assert list(backend.load("t").events) == sent
    assert [e.event for e in backend.history("t")] == sent
    assert {e.run_id for e in backend.history("t")} == {"r1"}


def test_a_step_costs_its_own_events_only(backend: Backend) -> None:
    """An append logs the appended item, not the list it grows."""
    for i in range(1, 51):
        backend.append("t", "r1", i - 1, events(f"m{i}", start=i))
    stored = backend.history("t")
    assert [e.event.value for e in stored] == [f"m{i}" for i in range(1, 51)]


def test_load_at_a_step_is_time_travel(backend: Backend) -> None:
    backend.append("t", "r1", 0, events("a", "b", "c"))
    store = backend.load("t", step=2).to_store()
    assert store.value("state", "messages") == ["a", "b"]
    assert store.last_seq == 2


def test_a_stale_expected_step_is_a_conflict_and_writes_nothing(backend: Backend) -> None:
    backend.append("t", "winner", 0, events("a"))
    with pytest.raises(ConflictError, match=r"'t'.*expected its last step to be 0.*step 1") as info:
        backend.append("t", "loser", 0, events("b"))
    assert (info.value.thread_id, info.value.expected, info.value.actual) == ("t", 0, 1)
    assert [e.event.value for e in backend.history("t")] == ["a"]
    backend.append("t", "loser", 1, events("b", start=2))  # retried after reloading
    assert backend.load("t").to_store().value("state", "messages") == ["a", "b"]


def test_a_batch_is_all_or_nothing(backend: Backend) -> None:
    backend.append("t", "r1", 0, events("a"))
    with pytest.raises(ConflictError):
        backend.append("t", "r2", 0, events("x", "y", "z"))
    assert backend.last_step("t") == 1
    assert len(backend.history("t")) == 1


def test_a_stale_writer_is_refused_even_when_its_steps_are_free(backend: Backend) -> None:
    """Steps may skip numbers (notes are not kept), so a stale batch whose steps nobody took
    is still refused: the thread's last step is checked, not only the steps' keys."""
    backend.append("t", "winner", 0, events("a", "b", start=2))
    with pytest.raises(ConflictError) as info:
        backend.append("t", "loser", 0, events("x"))  # step 1 is free
    assert (info.value.expected, info.value.actual) == (0, 3)
    with pytest.raises(ConflictError):
        backend.append("t", "loser", 1, events(*"xyz", start=5))
    assert [e.event.value for e in backend.history("t")] == ["a", "b"]


def test_a_batch_larger_than_a_node_commit_is_one_transaction(backend: Backend) -> None:
    backend.append("t", "r1", 0, events(*"abcdefghijkl"))
    with pytest.raises(ConflictError):
        backend.append("t", "r2", 0, events(*"mnopqrstuvwx", start=13))
    assert "".join(e.event.value for e in backend.history("t")) == "abcdefghijkl"


def test_expecting_steps_of_a_missing_thread_is_a_conflict(backend: Backend) -> None:
    with pytest.raises(ConflictError, match="expected its last step to be 3"):
        backend.append("new", "r1", 3, events("a", start=4))


def test_events_out_of_step_order_are_refused(backend: Backend) -> None:
    with pytest.raises(PersistError, match="does not come after step 2"):
        backend.append("t", "r1", 2, events("a", start=2))
    with pytest.raises(PersistError, match="no events"):
        backend.append("t", "r1", 0, [])


def test_threads_and_runs_are_listed(backend: Backend) -> None:
    backend.append("b", "r1", 0, events("a", "b"))
    backend.append("b", "r2", 2, events("c", start=3))
    backend.append("a", "r9", 0, events("x"))
    assert [t.thread_id for t in backend.threads()] == ["a", "b"]
    info = backend.thread("b")
    assert info is not None and (info.last_step, info.first_step) == (3, 0)
    runs = backend.runs("b")
    assert [(r.run_id, r.first_step, r.last_step, r.events) for r in runs] == [
        ("r1", 1, 2, 2),
        ("r2", 3, 3, 1),
    ]


def test_delete_thread_removes_only_that_thread(backend: Backend) -> None:
    backend.append("a", "r1", 0, events("x"))
    backend.append("b", "r1", 0, events("y"))
    assert backend.delete_thread("a") is True
    assert backend.delete_thread("a") is False
    assert backend.load("a").step == 0
    assert backend.load("b").to_store().value("state", "messages") == ["y"]


def test_loading_uses_the_newest_snapshot_at_or_before_the_step(backend: Backend) -> None:
    backend.append("t", "r1", 0, events("a", "b"))
    store = backend.load("t").to_store()
    snap = capture(store)
    backend.append("t", "r1", 2, events("c", start=3))
    backend.append("t", "r1", 3, events("d", start=4), snapshot=_at(store, "c", "d", step=4))
    backend.append("t", "r1", 4, events("e", start=5))
    latest = backend.load("t")
    assert latest.snapshot is not None and latest.snapshot.step == 4
    assert [e.seq for e in latest.events] == [5]
    assert latest.to_store().value("state", "messages") == ["a", "b", "c", "d", "e"]
    early = backend.load("t", step=3)
    assert early.snapshot is None and len(early.events) == 3
    assert snap.step == 2


def _at(store: Store, *more: str, step: int) -> Snapshot:
    grown = store.fork()
    for item in more:
        grown.write("state", "messages", item)
    taken = capture(grown)
    assert taken.step == step
    return taken


def test_only_the_newest_snapshots_are_kept(backend: Backend) -> None:
    store = Store(reducers={"state:messages": reducers.append})
    for i in range(1, 7):
        store.write("state", "messages", i)
        snapshot = capture(store)
        backend.append(
            "t", "r1", i - 1, store.events(since=i - 1), snapshot=snapshot, keep_snapshots=2
        )
    assert backend.load("t", step=6).snapshot.step == 6  # type: ignore[union-attr]
    assert backend.load("t", step=5).snapshot.step == 5  # type: ignore[union-attr]
    assert backend.load("t", step=4).snapshot is None  # older ones dropped: replay from 0
    assert backend.load("t", step=4).to_store().value("state", "messages") == [1, 2, 3, 4]


def test_prune_keeps_the_last_steps_loadable(backend: Backend) -> None:
    backend.append("t", "r1", 0, events(*"abcdefghij"))
    gone = backend.prune("t", keep_last=3)
    assert gone == 7
    info = backend.thread("t")
    assert info is not None and (info.first_step, info.last_step) == (7, 10)
    assert backend.load("t").to_store().value("state", "messages") == list("abcdefghij")
    assert backend.load("t", step=7).to_store().value("state", "messages") == list("abcdefg")
    with pytest.raises(StepError, match=r"pruned and starts at step 7, so step 6"):
        backend.load("t", step=6)
    backend.append("t", "r1", 10, events("k", start=11))
    assert backend.load("t").to_store().value("state", "messages")[-1] == "k"
    assert backend.prune("t", keep_last=100) == 0


def test_a_pruned_thread_keeps_its_base_snapshot_through_later_snapshots(
    backend: Backend,
) -> None:
    store = Store(reducers={"state:messages": reducers.append})
    for i in range(1, 4):
        store.write("state", "messages", i)
    backend.append("t", "r1", 0, store.events())
    backend.prune("t", keep_last=1)  # base snapshot at 2
    for i in range(4, 8):
        store.write("state", "messages", i)
        backend.append(
            "t", "r1", i - 1, store.events(since=i - 1), snapshot=capture(store), keep_snapshots=1
        )
    assert backend.load("t", step=3).to_store().value("state", "messages") == [1, 2, 3]


def test_a_step_past_the_end_is_a_step_error(backend: Backend) -> None:
    backend.append("t", "r1", 0, events("a"))
    with pytest.raises(StepError, match="no step 5: its last step is 1"):
        backend.load("t", step=5)
    with pytest.raises(StepError, match="does not exist"):
        backend.load("nobody", step=2)


def test_create_thread_starts_a_fork_at_a_snapshot(backend: Backend) -> None:
    backend.append("t", "r1", 0, events("a", "b"))
    snapshot = capture(backend.load("t").to_store())
    backend.create_thread("f", snapshot, parent=("t", 2))
    info = backend.thread("f")
    assert info is not None
    assert (info.first_step, info.last_step, info.parent_thread, info.parent_step) == (2, 2, "t", 2)
    assert backend.load("f").to_store().value("state", "messages") == ["a", "b"]
    with pytest.raises(ConflictError, match="exists already"):
        backend.create_thread("f", snapshot)
    with pytest.raises(StepError, match=r"forked and starts at step 2.*its parent 't'"):
        backend.load("f", step=1)


def test_ids_must_be_non_empty_strings(backend: Backend) -> None:
    with pytest.raises(PersistError, match="thread_id=''"):
        backend.load("")
    with pytest.raises(PersistError, match="run_id=None"):
        backend.append("t", None, 0, events("a"))  # type: ignore[arg-type]


def test_ids_are_checked_at_every_append_after_good_ones(backend: Backend) -> None:
    """An append checks ids it has not seen just before, whatever came first."""
    with pytest.raises(PersistError, match="thread_id=None"):
        backend.append(None, None, 0, events("a"))  # type: ignore[arg-type]
    assert backend.append("t", "r1", 0, events("a")) == 1
    for thread_id, run_id, bad in [
        ("t", "", "run_id=''"),
        ("", "r1", "thread_id=''"),
        (None, None, "thread_id=None"),
        ("t", "r\x00", "run_id="),
    ]:
        with pytest.raises(PersistError, match=bad):
            backend.append(thread_id, run_id, 1, events("b", start=2))  # type: ignore[arg-type]
    assert backend.append("t", "r1", 1, events("b", start=2)) == 2
    assert [e.value for e in backend.load("t").events] == ["a", "b"]


def test_data_survives_reopening(open_backend: Factory) -> None:
    first = open_backend()
    first.append("t", "r1", 0, events("a", "b"))
    second = open_backend()
    assert second.load("t").to_store().value("state", "messages") == ["a", "b"]
