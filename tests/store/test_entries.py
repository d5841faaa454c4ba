"""How a store keeps its entries: two tiers (recent and settled) that read as one store."""

from __future__ import annotations

import gc
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from weft.errors import MergeConflictError
from weft.store import Entry, Event, Store, _entries, reducers


@contextmanager
def settling_every(n: int) -> Iterator[None]:
    """Stores settle once their recent tier holds more than ``n`` keys (4096 by default)."""
    before = _entries.SETTLE_MIN
    _entries.SETTLE_MIN = n
    try:
        yield
    finally:
        _entries.SETTLE_MIN = before


class Refusing:
    """A journal that refuses every commit."""

    def commit(self, store: Store, events: Sequence[Event]) -> None:
        raise RuntimeError("disk full")

    def state_at(self, seq: int) -> Store | None:
        return None


def settled_store(n: int) -> Store:
    store = Store()
    for i in range(n):
        store.write("state", f"k{i:05}", i)
    assert store._settled, "the store settled some of its entries"
    return store


def test_settled_entries_read_like_recent_ones() -> None:
    with settling_every(8):
        store = settled_store(100)
    assert len(store) == 100
    assert store.value("state", "k00003") == 3
    assert store.has("state", "k00003") and "state:k00003" in store
    entry = store.get("state", "k00003")
    assert isinstance(entry, Entry) and entry.value == 3 and entry.seq == 4
    assert [e.value for e in store.entries(key_prefix="state:k0000")] == list(range(10))
    assert store.to_dict()["state:k00099"] == 99


def test_rewriting_a_settled_entry_keeps_its_created_at() -> None:
    with settling_every(8):
        store = settled_store(100)
        before = store.get("state", "k00001")
        assert before is not None
        store.write("state", "k00001", "new")
    after = store.get("state", "k00001")
    assert after is not None and after.value == "new"
    assert after.created_at == before.created_at and after.seq == 101


def test_a_deleted_settled_entry_is_gone_until_written_again() -> None:
    with settling_every(8):
        store = settled_store(100)
        assert store.delete("state", "k00001")
        assert not store.delete("state", "k00001")
        assert store.get("state", "k00001") is None
        assert not store.has("state", "k00001") and "state:k00001" not in store
        assert store.value("state", "k00001", "-") == "-"
        assert len(store) == 99
        assert store.clear(key_prefix="state:k0000") == 9
        assert len(store) == 90
        store.write("state", "k00001", "back")
    assert store.value("state", "k00001") == "back"
    assert [e.path for e in store.entries(key_prefix="state:k0000")] == ["k00001"]


def test_a_forks_first_writes_share_the_settled_entries() -> None:
    """A fork settles only after writing its own share of the store, so forking a large
    store and writing a little never copies it, however close the parent is to settling."""
    with settling_every(8):
        store = settled_store(100)
        while len(store._recent) < store._settle_at:  # the parent is about to settle
            store.write("state", f"more{len(store._recent)}", 0)
        child = store.fork()
        for i in range(5):
            child.write("state", f"c{i}", i)
    assert child._settled is store._settled
    assert child.value("state", "c4") == 4 and child.value("state", "k00050") == 50


def test_a_refused_commit_that_settled_leaves_the_store_as_it_was() -> None:
    with settling_every(8):
        store = settled_store(100)
        while len(store._recent) < store._settle_at:
            store.write("state", f"more{len(store._recent)}", 0)
        before = (store.to_dict(), len(store), store.last_seq, store._settled)
        store.set_journal(Refusing())
        with pytest.raises(RuntimeError, match="disk full"):
            store.write("state", "one too many", 1)
    assert (store.to_dict(), len(store), store.last_seq, store._settled) == before


def test_a_merge_sees_through_a_settle_for_conflicts() -> None:
    with settling_every(8):
        store = settled_store(100)
        untouched, rewritten = store.fork(name="a"), store.fork(name="b")
        untouched.write("state", "k00001", "a")
        rewritten.write("state", "k00002", "b")
        store.write("state", "k00002", "direct")
        for i in range(50):  # the parent settles again in between
            store.write("state", f"later{i}", i)
        store.merge([untouched])  # k00001 was only settled, not changed: no conflict
        assert store.value("state", "k00001") == "a"
        with pytest.raises(MergeConflictError, match="state:k00002"):
            store.merge([rewritten])


def test_a_fast_forward_adopts_what_the_fork_settled() -> None:
    with settling_every(8):
        store = settled_store(100)
        child = store.fork()
        for i in range(100):
            child.write("state", f"c{i:03}", i)
        assert child._settled is not store._settled
        store.merge([child])
    assert store._settled is child._settled
    assert len(store) == 200 and store.value("state", "c099") == 99
    assert [e.seq for e in store.events()] == list(range(1, 201))


def test_the_settled_entries_are_left_alone_by_the_garbage_collector() -> None:
    """Plain rows of atomic values are untracked by CPython's cyclic collector, and so is a
    dict of them: a store of many entries does not make every collection walk them all."""
    store = settled_store(10_000)
    gc.collect()
    assert not gc.is_tracked(store._settled)
    assert not any(gc.is_tracked(event) for event in store._own)


OPS = st.one_of(
    st.tuples(st.just("write"), st.integers(0, 30), st.integers(0, 9)),
    st.tuples(st.just("append"), st.integers(0, 9)),
    st.tuples(st.just("delete"), st.integers(0, 30)),
    st.tuples(st.just("clear"), st.integers(0, 3)),
    st.tuples(st.just("batch"), st.lists(st.integers(0, 30), max_size=6)),
    st.tuples(st.just("fork"), st.lists(st.integers(0, 30), max_size=6), st.booleans()),
)


@settings(max_examples=150, deadline=None)
@given(st.lists(OPS, max_size=60))
def test_a_store_that_settles_reads_like_a_dict(ops: list[tuple[Any, ...]]) -> None:
    """Every read agrees with a plain dict after any mix of changes, merges and settles."""
    with settling_every(3):
        store = Store(reducers={"state:log": reducers.append})
        model: dict[str, Any] = {}
        for op, *args in ops:
            if op == "write":
                store.write("state", f"k{args[0]:02}", args[1])
                model[f"state:k{args[0]:02}"] = args[1]
            elif op == "append":
                store.write("state", "log", args[0])
                model["state:log"] = [*model.get("state:log", []), args[0]]
            elif op == "delete":
                assert store.delete("state", f"k{args[0]:02}") == (f"state:k{args[0]:02}" in model)
                model.pop(f"state:k{args[0]:02}", None)
            elif op == "clear":
                prefix = f"state:k{args[0]}"
                gone = [key for key in model if key.startswith(prefix)]
                assert store.clear(key_prefix=prefix) == len(gone)
                for key in gone:
                    del model[key]
            elif op == "batch":
                store.write_many("state", [(f"k{n:02}", -n, None) for n in args[0]])
                model.update({f"state:k{n:02}": -n for n in args[0]})
            else:
                child = store.fork()
                child.write_many("state", [(f"k{n:02}", n * 10, None) for n in args[0]])
                if args[1]:  # the parent moves on: the merge replays the child's writes
                    store.write("state", "log", "parent")
                    model["state:log"] = [*model.get("state:log", []), "parent"]
                store.merge([child])
                model.update({f"state:k{n:02}": n * 10 for n in args[0]})
            assert store.to_dict() == dict(sorted(model.items()))
            assert len(store) == len(model)
            for n in range(31):
                key = f"state:k{n:02}"
                assert (key in store) == (key in model)
                assert store.value("state", f"k{n:02}", None) == model.get(key)
        assert Store.from_events(store.events()).to_dict() == store.to_dict()
        assert store.at(store.last_seq).to_dict() == store.to_dict()
