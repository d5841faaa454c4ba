"""``Store.write_many``: the same entries and events as one write after another, all or none."""

from __future__ import annotations

import operator
from typing import Any

import pytest

from weft.errors import InvalidKeyError, ReducerError, StoreError, ValueTypeError
from weft.store import DELETE, Event, Store, reducers

REDUCERS: dict[str, Any] = {
    "state:log": reducers.append,
    "state:parts": reducers.extend,
    "state:profile": reducers.merge,
    "state:tags": reducers.union,
    "state:count": reducers.add,
    "state:best": max,
    "state:sum": operator.add,
}

WRITES: list[tuple[str, Any, str | None]] = [
    ("log", "a", "n1"),
    ("plan", {"steps": [1, 2]}, "n1"),
    ("log", {"text": "b"}, "n2"),
    ("parts", [1, 2], "n2"),
    ("profile", {"name": "Ada", "city": "Paris"}, None),
    ("tags", ["x"], "n3"),
    ("count", 2, "n3"),
    ("best", 4, "n4"),
    ("best", 9, "n4"),
    ("best", 3, "n5"),
    ("sum", [1], "n5"),
    ("sum", [2], "n5"),
    ("parts", [3], "n6"),
    ("profile", {"city": DELETE}, "n6"),
    ("tags", ["y", "x"], "n6"),
    ("count", 3, "n7"),
    ("plan", "replaced", "n7"),
]


def both() -> tuple[Store, Store]:
    one, many = Store(reducers=REDUCERS, name="s"), Store(reducers=REDUCERS, name="s")
    for store in (one, many):
        store.write("state", "log", "before", source="seed")
        store.write("state", "count", 1, source="seed", meta={"title": "a counter"})
    return one, many


def test_the_same_entries_and_events_as_one_write_after_another() -> None:
    one, many = both()
    for path, value, source in WRITES:
        one.write("state", path, value, source=source)
    assert many.write_many("state", WRITES) == len(WRITES)

    def shape(store: Store) -> tuple[Any, ...]:
        entries = [(e.key, e.value, e.source, e.seq, e.meta) for e in store.entries()]
        events = [(e.seq, e.op, e.key, e.value, e.source, e.reducer) for e in store.events()]
        return entries, events, store.last_seq

    assert shape(many) == shape(one)
    assert many.value("state", "log") == ["before", "a", {"text": "b"}]
    assert many.value("state", "profile") == {"name": "Ada"}
    assert many.get("state", "count").meta == {"title": "a counter"}  # type: ignore[union-attr]
    assert Store.from_events(many.events(), reducers=REDUCERS).value("state", "best") == 9


def test_a_batch_has_one_timestamp_and_keeps_created_at() -> None:
    _, store = both()
    created = store.get("state", "log").created_at  # type: ignore[union-attr]
    store.write_many("state", [("log", 1, None), ("new", 2, None)])
    log, new = store.get("state", "log"), store.get("state", "new")
    assert log is not None and new is not None
    assert log.created_at == created
    assert log.updated_at == new.updated_at == new.created_at


def test_values_are_frozen_copies() -> None:
    store = Store()
    plan = {"steps": [1]}
    store.write_many("state", [("plan", plan, None)])
    plan["steps"].append(2)
    assert store.value("state", "plan") == {"steps": [1]}
    with pytest.raises(TypeError):
        store.value("state", "plan")["steps"].append(3)


def test_a_value_the_store_cannot_keep_writes_nothing() -> None:
    _, store = both()
    before = (list(store.entries()), store.last_seq)
    with pytest.raises(ValueTypeError, match="state:bad"):
        store.write_many("state", [("log", "kept?", None), ("bad", object(), None)])
    assert (list(store.entries()), store.last_seq) == before
    assert len(store.events()) == 2


def test_a_failing_reducer_writes_nothing_and_names_the_field() -> None:
    _, store = both()
    seen: list[Event] = []
    store.subscribe(seen.append)
    before = (list(store.entries()), store.last_seq)
    with pytest.raises(
        ReducerError,
        match=r"reducer 'add' of state:count failed on update 2 \(from 'n2'\).* of the batch",
    ) as caught:
        store.write_many("state", [("log", "x", "n1"), ("count", "not a number", "n2")])
    assert isinstance(caught.value.__cause__, TypeError)
    assert (list(store.entries()), store.last_seq) == before
    assert seen == []
    store.write_many("state", [("log", "x", None)])  # the store still takes writes
    assert store.value("state", "log") == ["before", "x"]


def test_a_bad_path_or_kind_writes_nothing() -> None:
    store = Store()
    with pytest.raises(InvalidKeyError, match="non-empty string"):
        store.write_many("state", [("ok", 1, None), ("", 2, None)])
    with pytest.raises(InvalidKeyError, match="unknown kind 'stat'"):
        store.write_many("stat", [("ok", 1, None)])
    assert list(store.entries()) == []


def test_subscribers_hear_every_event_after_the_batch_is_in() -> None:
    store = Store(reducers={"state:log": reducers.append})
    heard: list[tuple[int, Any]] = []
    store.subscribe(lambda e: heard.append((e.seq, store.value("state", "log"))))
    store.write_many("state", [("log", 1, None), ("log", 2, None)])
    assert heard == [(1, [1, 2]), (2, [1, 2])]


def test_a_fork_batch_merges_like_single_writes() -> None:
    store = Store(reducers={"state:log": reducers.append})
    a, b = store.fork(name="a"), store.fork(name="b")
    a.write_many("state", [("log", 1, None), ("log", 2, None)])
    b.write_many("state", [("log", 3, None)])
    assert store.value("state", "log", None) is None
    store.merge([b, a])
    assert store.value("state", "log") == [3, 1, 2]
    assert [e.source for e in store.events()] == ["b", "a", "a"]


def test_an_empty_batch_writes_nothing() -> None:
    store = Store()
    assert store.write_many("state", []) == 0
    assert store.last_seq == 0


def test_note_many_logs_like_note_one_after_another() -> None:
    one, many = Store(name="s"), Store(name="s")
    notes: list[tuple[str, Any, str | None]] = [
        ("r1/a", {"event": "started"}, "a"),
        ("r1/b", {"event": "started", "tags": ["x"]}, None),
        ("r1/a", None, "a"),
    ]
    for path, value, source in notes:
        one.note("step", path, value, source=source)
    heard: list[Event] = []
    many.subscribe(heard.append)
    assert many.note_many("step", notes) == 3
    shape = [(e.seq, e.op, e.key, e.value, e.source) for e in one.events()]
    assert [(e.seq, e.op, e.key, e.value, e.source) for e in many.events()] == shape
    assert heard == many.events()
    assert list(many.entries()) == []  # notes change no entry


def test_note_many_with_a_value_the_store_cannot_keep_logs_nothing() -> None:
    store = Store()
    with pytest.raises(ValueTypeError, match=r"note step:r1/b"):
        store.note_many("step", [("r1/a", 1, None), ("r1/b", object(), None)])
    assert store.events() == [] and store.last_seq == 0


@pytest.mark.parametrize("item", [("log", 1), 5, ("log", 1, None, "extra")])
def test_an_update_that_is_not_a_triple_writes_nothing(item: Any) -> None:
    store = Store()
    with pytest.raises(StoreError, match=r"write_many takes \(path, value, source\) tuples"):
        store.write_many("state", [("ok", 1, None), item])
    with pytest.raises(StoreError, match=r"note_many takes \(path, value, source\) tuples"):
        store.note_many("step", [("ok", 1, None), item])
    assert list(store.entries()) == [] and store.events() == []


def test_a_bad_note_path_logs_nothing() -> None:
    store = Store()
    with pytest.raises(InvalidKeyError, match="non-empty string"):
        store.note_many("step", [("r1/a", 1, None), ("", 2, None)])
    assert store.events() == []


def test_a_batch_in_a_store_with_no_reducer_stages_as_one_with_reducers_does() -> None:
    """``_stage_replaces`` (no field declared) against ``_stage_batch``'s general loop."""

    def staged(store: Store) -> tuple[list[Any], list[Any]]:
        first = store.write("state", "x", 0, source="first").created_at
        store.write_many("state", [("x", 1, "a"), ("y", 2, "b"), ("x", 3, "c")])
        store.merge([store.delta([("state", "z", 4, "d"), ("step", "r/n", 5, "e")])])
        events = [e._replace(time=0.0) for e in store.events()]
        entries = [
            (e.kind, e.path, e.value, e.source, e.seq, e.path != "x" or e.created_at == first)
            for e in store.entries()
        ]
        return events, entries

    general = Store(reducers={"state:log": reducers.append})  # declares one field
    assert staged(Store()) == staged(general)


def test_a_name_written_before_does_not_let_a_bad_one_through() -> None:
    """A one-field write looks up the names ``plain_key`` passed before: a good name
    remembered must not make a near one (another kind, a non-ASCII source, a path
    that is no str, an unknown kind that cannot be hashed) pass unchecked."""
    store = Store()
    store.write_many("state", [("memo", 1, "writer")])  # remembered: state:memo, "writer"
    store.write_many("state", [("memo", 2, "writer")])  # and looked up
    with pytest.raises(InvalidKeyError, match="unknown kind 'stat'"):
        store.write_many("stat", [("memo", 3, "writer")])
    with pytest.raises(InvalidKeyError, match="unknown kind"):
        store.write_many(["state"], [("memo", 3, "writer")])  # type: ignore[arg-type]
    with pytest.raises(InvalidKeyError, match="non-empty string"):
        store.write_many("state", [(5, 3, "writer")])
    with pytest.raises(InvalidKeyError, match="non-empty string"):
        store.write_many("state", [(["memo"], 3, "writer")])
    with pytest.raises(StoreError, match=r"source='wr\\udcffiter': the text holds a lone"):
        store.write_many("state", [("memo", 3, "wr\udcffiter")])
    with pytest.raises(StoreError, match=r"source=\['writer'\]"):
        store.write_many("state", [("memo", 3, ["writer"])])
    assert store.value("state", "memo") == 2 and store.last_seq == 2
    assert store.get("state", "memo").source == "writer"  # type: ignore[union-attr]


def test_more_names_than_the_store_remembers_are_written_and_read_as_any() -> None:
    from weft.graph.state import StateView
    from weft.store._staging import _KEYS, _REMEMBERED, _SOURCES

    store = Store()
    n = _REMEMBERED * 2 + 10
    for i in range(n):
        store.write_many("state", [(f"k{i}", i, f"s{i}")])
    view = StateView(store)
    assert [view[f"k{i}"] for i in range(n)] == list(range(n))
    assert [store.get("state", f"k{i}").source for i in (0, n - 1)]  # type: ignore[union-attr] == ["s0", f"s{n - 1}"]
    assert len(_KEYS["state"]) <= _REMEMBERED and len(_SOURCES) <= _REMEMBERED
