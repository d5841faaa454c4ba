"""The store's rules: kinds and paths, writes through reducers, reads, deletes, the log."""

from __future__ import annotations

import logging
import operator
from typing import Any

import pytest

from weft.errors import InvalidKeyError, MissingEntryError, ReducerError, StoreError, ValueTypeError
from weft.store import DELETE, Event, Store, reducers


def test_write_then_read_by_kind_and_path() -> None:
    store = Store()
    entry = store.write("input", "topic", "otters", source="caller")
    assert entry.key == "input:topic"
    assert store.value("input", "topic") == "otters"
    assert store.get("input", "topic") == entry
    assert store.has("input", "topic")
    assert not store.has("state", "topic")


@pytest.mark.parametrize("kind", ["input", "state", "step", "task", "shared"])
def test_every_kind_is_accepted(kind: str) -> None:
    store = Store()
    store.write(kind, "x", 1)
    assert store.value(kind, "x") == 1


def test_unknown_kind_is_refused_with_the_kinds_listed() -> None:
    with pytest.raises(InvalidKeyError, match=r"unknown kind 'stat'.*input, state, step"):
        Store().write("stat", "x", 1)


@pytest.mark.parametrize("path", ["", None, 3])
def test_empty_or_non_string_path_is_refused(path: Any) -> None:
    with pytest.raises(InvalidKeyError, match="non-empty string"):
        Store().write("state", path, 1)


def test_missing_read_names_the_key_and_lists_what_exists() -> None:
    store = Store()
    store.write("state", "messages", [])
    store.write("state", "summary", "")
    with pytest.raises(MissingEntryError) as info:
        store.value("state", "mesages")
    message = str(info.value)
    assert "state:mesages" in message
    assert "state:messages" in message and "state:summary" in message
    assert "default" in message


def test_missing_read_with_default_returns_it_even_when_none() -> None:
    store = Store()
    assert store.value("state", "absent", None) is None
    assert store.get("state", "absent") is None


class _Opaque:
    pass


def test_non_json_value_is_refused_naming_key_and_type() -> None:
    store = Store()
    with pytest.raises(ValueTypeError, match=r"state:cfg\.inner\[1\].*_Opaque"):
        store.write("state", "cfg", {"inner": [1, _Opaque()]})
    assert not store.has("state", "cfg")
    assert store.events() == []


def test_refused_write_loses_nothing_already_written() -> None:
    store = Store()
    store.write("state", "cfg", {"a": 1})
    with pytest.raises(ValueTypeError):
        store.write("state", "cfg", {"a": {1, 2}})
    assert store.value("state", "cfg") == {"a": 1}
    assert len(store.events()) == 1


def test_non_string_dict_key_is_refused() -> None:
    with pytest.raises(ValueTypeError, match="dict key 1 is a int"):
        Store().write("state", "m", {1: "one"})


def test_nan_is_refused() -> None:
    with pytest.raises(ValueTypeError, match="not a JSON number"):
        Store().write("state", "x", float("nan"))


def test_rewrite_keeps_created_at_and_moves_updated_at() -> None:
    store = Store()
    first = store.write("shared", "fact", 1)
    second = store.write("shared", "fact", 2)
    assert second.created_at == first.created_at
    assert second.updated_at >= first.updated_at
    assert second.seq > first.seq


def test_meta_is_replaced_when_given_and_kept_when_omitted() -> None:
    store = Store()
    store.write("shared", "fact", 1, meta={"title": "A fact"})
    assert store.write("shared", "fact", 2).meta == {"title": "A fact"}
    assert store.write("shared", "fact", 3, meta={"title": "B"}).meta == {"title": "B"}


def test_declared_reducer_applies_to_every_write() -> None:
    store = Store(reducers={"state:log": reducers.append})
    store.write("state", "log", "a")
    store.write("state", "log", "b")
    assert store.value("state", "log") == ["a", "b"]


def test_replace_true_overrides_the_reducer_for_one_write() -> None:
    store = Store(reducers={"state:log": reducers.append})
    store.write("state", "log", "a")
    store.write("state", "log", ["reset"], replace=True)
    store.write("state", "log", "b")
    assert store.value("state", "log") == ["reset", "b"]


def test_operator_add_works_as_a_reducer() -> None:
    store = Store(reducers={"state:items": operator.add, "state:n": operator.add})
    store.write("state", "items", [1])
    store.write("state", "items", [2, 3])
    store.write("state", "n", 2)
    store.write("state", "n", 5)
    assert store.value("state", "items") == [1, 2, 3]
    assert store.value("state", "n") == 7


def test_user_reducer_gets_current_and_update() -> None:
    def longest(current: str, update: str) -> str:
        return update if len(update) > len(current) else current

    store = Store(reducers={"state:best": longest})
    for word in ["ab", "abcd", "abc"]:
        store.write("state", "best", word)
    assert store.value("state", "best") == "abcd"
    assert store.events()[-1].reducer.endswith("longest")


def test_a_reducer_is_declared_once() -> None:
    store = Store()
    store.declare("state", "log", reducers.append)
    store.declare("state", "log", reducers.append)  # the same again is fine
    with pytest.raises(ReducerError, match="state:log already has the reducer 'append'"):
        store.declare("state", "log", reducers.extend)


def test_failing_reducer_names_the_field_and_writes_nothing() -> None:
    store = Store(reducers={"state:d": reducers.merge})
    store.write("state", "d", {"a": 1})
    with pytest.raises(ReducerError, match=r"reducer 'merge' of state:d failed.*dict update"):
        store.write("state", "d", [1, 2])
    assert store.value("state", "d") == {"a": 1}
    assert len(store.events()) == 1


def test_merge_reducer_deletes_keys_marked_delete() -> None:
    store = Store(reducers={"state:diag": reducers.merge})
    store.write("state", "diag", {"stale": 1, "keep": 2})
    store.write("state", "diag", {"stale": DELETE, "new": 3})
    assert store.value("state", "diag") == {"keep": 2, "new": 3}


def test_delete_marker_outside_a_merge_field_is_refused() -> None:
    with pytest.raises(ValueTypeError, match="DELETE only means something"):
        Store().write("state", "x", {"a": DELETE})


def test_delete_removes_the_key_and_is_logged() -> None:
    store = Store()
    store.write("task", "t1", 1)
    assert store.delete("task", "t1", source="janitor")
    assert not store.has("task", "t1")
    assert not store.delete("task", "t1")
    assert [(e.op, e.key, e.source) for e in store.events()] == [
        ("write", "task:t1", None),
        ("delete", "task:t1", "janitor"),
    ]


def test_clear_by_kind_and_by_prefix() -> None:
    store = Store()
    for key in ["a", "ab", "b"]:
        store.write("step", key, key)
        store.write("task", key, key)
    assert store.clear(kind="step", key_prefix="step:a") == 2
    assert store.to_dict(kind="step") == {"step:b": "b"}
    assert store.clear(kind="task") == 3
    assert store.to_dict() == {"step:b": "b"}
    assert store.clear() == 1
    assert len(store) == 0
    assert [e.op for e in store.events()][-3:] == ["clear", "clear", "clear"]


def test_entries_are_in_key_order_and_filtered() -> None:
    store = Store()
    for kind, path in [("task", "b"), ("step", "z"), ("step", "a"), ("input", "q")]:
        store.write(kind, path, 0)
    assert [e.key for e in store.entries()] == ["input:q", "step:a", "step:z", "task:b"]
    assert [e.key for e in store.entries(kind="step")] == ["step:a", "step:z"]
    assert [e.key for e in store.entries(kind=["task", "input"])] == ["input:q", "task:b"]
    assert [e.key for e in store.entries(key_prefix="step:z")] == ["step:z"]


def test_events_since_returns_only_newer_events() -> None:
    store = Store()
    for i in range(5):
        store.write("state", f"k{i}", i)
    assert [e.seq for e in store.events(since=3)] == [4, 5]
    assert store.last_seq == 5


def test_event_records_the_update_not_the_new_value() -> None:
    store = Store(reducers={"state:log": reducers.append})
    store.write("state", "log", "a")
    store.write("state", "log", "b", source="w")
    event = store.events()[-1]
    assert (event.op, event.key, event.value, event.source, event.reducer) == (
        "write",
        "state:log",
        "b",
        "w",
        "append",
    )


def test_note_logs_without_changing_entries() -> None:
    store = Store()
    seen: list[Event] = []
    store.subscribe(seen.append)
    store.note("step", "run1/A#0", {"event": "started"})
    assert len(store) == 0
    assert seen[0].op == "note" and seen[0].value == {"event": "started"}


def test_subscriber_gets_writes_deletes_and_clears_in_order() -> None:
    store = Store()
    seen: list[tuple[str, str]] = []
    store.subscribe(lambda e: seen.append((e.op, e.key)))
    store.write("shared", "a", 1)
    store.delete("shared", "a")
    store.write("shared", "b", 1)
    store.clear(kind="shared")
    assert seen == [
        ("write", "shared:a"),
        ("delete", "shared:a"),
        ("write", "shared:b"),
        ("clear", "shared:"),
    ]


def test_unsubscribe_stops_delivery() -> None:
    store = Store()
    seen: list[Event] = []
    unsubscribe = store.subscribe(seen.append)
    store.write("shared", "a", 1)
    unsubscribe()
    store.write("shared", "b", 1)
    assert [e.key for e in seen] == ["shared:a"]


def test_raising_subscriber_is_logged_by_name_and_breaks_nothing(
    caplog: pytest.LogCaptureFixture,
) -> None:
    store = Store()
    after: list[Event] = []

    def broken_panel(event: Event) -> None:
        raise RuntimeError("panel is down")

    store.subscribe(broken_panel)
    store.subscribe(after.append)
    with caplog.at_level(logging.ERROR, logger="weft.store"):
        store.write("shared", "a", 1)
    assert store.value("shared", "a") == 1
    assert len(after) == 1
    assert "broken_panel" in caplog.text
    assert "panel is down" in caplog.text


def test_stored_values_are_read_only_and_isolated_from_the_caller() -> None:
    store = Store()
    mine = {"items": [1, 2]}
    store.write("state", "cfg", mine)
    mine["items"].append(3)
    stored = store.value("state", "cfg")
    assert stored == {"items": [1, 2]}
    with pytest.raises(TypeError, match="read-only"):
        stored["items"].append(3)
    with pytest.raises(TypeError, match="read-only"):
        stored["new"] = 1


def test_append_never_mutates_a_value_someone_holds() -> None:
    store = Store(reducers={"state:log": reducers.append})
    store.write("state", "log", "a")
    held = store.value("state", "log")
    store.write("state", "log", "b")
    assert held == ["a"]


def test_from_events_rebuilds_entries_times_and_sources() -> None:
    store = Store(reducers={"state:log": reducers.append, "state:d": reducers.merge})
    store.write("state", "log", "a", source="n1")
    store.write("state", "d", {"x": 1, "y": 2})
    store.write("state", "d", {"x": DELETE})
    store.write("shared", "f", {"k": [1, 2]}, meta={"title": "F"})
    store.write("state", "log", "b", source="n2")
    store.delete("shared", "f")
    store.write("step", "s", 1)
    rebuilt = Store.from_events(store.events())
    assert rebuilt.entries() == store.entries()
    assert rebuilt.events() == store.events()
    assert rebuilt.reducer_of("state", "log") == "append"


def test_from_events_needs_user_reducers_declared() -> None:
    def keep_max(current: int, update: int) -> int:
        return max(current, update)

    store = Store(reducers={"state:m": keep_max})
    store.write("state", "m", 3)
    store.write("state", "m", 1)
    with pytest.raises(ReducerError, match="not a built-in"):
        Store.from_events(store.events())
    rebuilt = Store.from_events(store.events(), reducers={"state:m": keep_max})
    assert rebuilt.value("state", "m") == 3


def test_from_events_refuses_a_reducer_that_disagrees_with_the_log() -> None:
    store = Store(reducers={"state:log": reducers.append})
    store.write("state", "log", [1])
    with pytest.raises(ReducerError, match="through 'append' but this store declares 'extend'"):
        Store.from_events(store.events(), reducers={"state:log": reducers.extend})


def test_from_events_refuses_events_out_of_order() -> None:
    store = Store()
    store.write("state", "a", 1)
    store.write("state", "b", 2)
    with pytest.raises(StoreError, match="oldest first"):
        Store.from_events(list(reversed(store.events())))
