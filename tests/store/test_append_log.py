"""Append-reduced lists: O(1) appends, built on read, and every version stays as it was."""

from __future__ import annotations

import operator

import pytest

from weft.errors import ReducerError
from weft.store import FrozenList, Store, reducers
from weft.store._log import TAIL, AppendLog


def test_appends_past_many_links_read_back_in_order() -> None:
    store = Store(reducers={"state:log": reducers.append})
    for i in range(5 * TAIL + 3):
        store.write("state", "log", i)
    value = store.value("state", "log")
    assert type(value) is FrozenList
    assert value == list(range(5 * TAIL + 3))


def test_a_read_list_never_changes_when_appends_follow() -> None:
    store = Store(reducers={"state:log": reducers.append})
    store.write("state", "log", "a")
    held = store.value("state", "log")
    store.write("state", "log", "b")
    assert held == ["a"]
    assert store.value("state", "log") == ["a", "b"]


def test_every_version_stays_valid_after_branches_append() -> None:
    store = Store(reducers={"state:log": reducers.append})
    store.write("state", "log", "root")
    before = store.get("state", "log")
    left, right = store.fork(name="l"), store.fork(name="r")
    left.write("state", "log", "L")
    right.write("state", "log", "R")
    assert before is not None
    assert before.value == ["root"]
    assert left.value("state", "log") == ["root", "L"]
    assert right.value("state", "log") == ["root", "R"]
    store.merge([left, right])
    assert store.value("state", "log") == ["root", "L", "R"]


def test_extend_and_operator_add_grow_the_same_way() -> None:
    store = Store(reducers={"state:a": reducers.extend, "state:b": operator.add})
    for chunk in ([1, 2], [3], [], [4, 5]):
        store.write("state", "a", chunk)
        store.write("state", "b", chunk)
    assert store.value("state", "a") == [1, 2, 3, 4, 5]
    assert store.value("state", "b") == [1, 2, 3, 4, 5]


def test_append_after_a_replace_starts_from_the_replaced_list() -> None:
    store = Store(reducers={"state:log": reducers.append})
    store.write("state", "log", ["x", "y"], replace=True)
    store.write("state", "log", "z")
    assert store.value("state", "log") == ["x", "y", "z"]


def test_append_onto_a_non_list_is_still_a_reducer_error() -> None:
    store = Store(reducers={"state:log": reducers.append})
    store.write("state", "log", "not a list", replace=True)
    with pytest.raises(ReducerError, match="append needs a list"):
        store.write("state", "log", "x")
    assert store.value("state", "log") == "not a list"


def test_entries_compare_and_rebuild_equal_whatever_was_read() -> None:
    store = Store(reducers={"state:log": reducers.append})
    for i in range(3 * TAIL):
        store.write("state", "log", {"n": i})
    rebuilt = Store.from_events(store.events())
    store.value("state", "log")  # one side materialised, the other not
    assert rebuilt.entries() == store.entries()
    assert hash(AppendLog.grow(None, (1, 2))) == hash(FrozenList([1, 2]))
