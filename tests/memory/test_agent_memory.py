"""AgentMemory: keys and kinds, writes, reads, filters, clear, subscriptions."""

from __future__ import annotations

import logging
import time
from datetime import UTC, datetime
from typing import Any

import pytest

from weft.errors import MemoryKeyError, ValueTypeError
from weft.memory import AgentMemory, MemoryEntry, MemoryEvent, memory_keys
from weft.store import Entry, Store, thaw


@pytest.fixture
def memory() -> AgentMemory:
    return AgentMemory()


def fill(memory: AgentMemory) -> None:
    memory.set("input:topic", "forks", source="caller")
    memory.set("step:search", [1, 2], source="search")
    memory.set("step:summarize", "short", source="summarize")
    memory.set("task:research", {"findings": ["a"]}, source="research")
    memory.set("shared:top", "url", source="researcher")


def keys_of(entries: list[MemoryEntry]) -> list[str]:
    return [e.key for e in entries]


# ---------------------------------------------------------------- keys, kinds


def test_memory_keys_build_namespaced_keys() -> None:
    assert memory_keys.step("s1") == "step:s1"
    assert memory_keys.task("t1") == "task:t1"
    assert memory_keys.input("topic") == "input:topic"
    assert memory_keys.shared("top") == "shared:top"


@pytest.mark.parametrize("build", [memory_keys.step, memory_keys.task, memory_keys.input])
def test_memory_keys_refuse_empty_ids(build: object) -> None:
    with pytest.raises(MemoryKeyError, match="non-empty"):
        build("")  # type: ignore[operator]


def test_memory_key_is_the_store_key(memory: AgentMemory) -> None:
    memory.set("step:foo", 1)
    entry = memory.store.get("step", "foo")
    assert entry is not None
    assert entry.key == "step:foo"
    assert entry.value == 1


@pytest.mark.parametrize(
    ("key", "kind"),
    [
        ("task:t", "task_result"),
        ("step:s", "step_result"),
        ("input:i", "input"),
        ("shared:x", "shared"),
    ],
)
def test_kind_is_inferred_from_the_namespace(memory: AgentMemory, key: str, kind: str) -> None:
    assert memory.set(key, 1).kind == kind
    assert memory.set(key, 2, kind=kind).kind == kind  # type: ignore[arg-type]


def test_kind_that_disagrees_with_the_key_is_refused(memory: AgentMemory) -> None:
    with pytest.raises(MemoryKeyError) as info:
        memory.set("step:foo", 1, kind="task_result")
    message = str(info.value)
    assert "'step:foo'" in message
    assert "task_result" in message
    assert "task:" in message  # the namespace that kind needs
    assert not memory.has("step:foo")


@pytest.mark.parametrize("key", ["foo", "state:x", "bogus:x", "step:", ":x", ""])
def test_key_without_a_memory_namespace_is_refused(memory: AgentMemory, key: str) -> None:
    with pytest.raises(MemoryKeyError) as info:
        memory.set(key, 1)
    message = str(info.value)
    for namespace in ("task:", "step:", "input:", "shared:"):
        assert namespace in message
    assert "memory_keys" in message
    assert len(memory.store) == 0


def test_unknown_kind_filter_is_refused(memory: AgentMemory) -> None:
    with pytest.raises(MemoryKeyError, match="step_result"):
        memory.list(kind="step")  # type: ignore[arg-type]


# --------------------------------------------------------------------- writes


def test_set_returns_the_entry_with_title_and_utc_times(memory: AgentMemory) -> None:
    entry = memory.set("task:t", {"a": 1}, source="t", title="Title", description="Desc")
    assert entry.key == "task:t"
    assert entry.value == {"a": 1}
    assert (entry.source, entry.title, entry.description) == ("t", "Title", "Desc")
    assert entry.created_at.tzinfo is UTC
    assert abs((datetime.now(UTC) - entry.created_at).total_seconds()) < 5
    assert memory.store.get("task", "t").meta == {  # type: ignore[union-attr]
        "title": "Title",
        "description": "Desc",
    }


def test_rewrite_keeps_created_at_and_updates_updated_at(memory: AgentMemory) -> None:
    first = memory.set("step:s", 1, title="first")
    time.sleep(0.002)
    second = memory.set("step:s", 2)
    assert second.created_at == first.created_at
    assert second.updated_at > first.updated_at
    assert second.value == 2
    assert second.title is None  # set overwrites the whole entry


def test_non_json_value_is_refused_naming_the_key(memory: AgentMemory) -> None:
    with pytest.raises(ValueTypeError, match="step:bad"):
        memory.set("step:bad", {1, 2})
    assert not memory.has("step:bad")


def test_set_overwrites_a_field_that_has_a_reducer() -> None:
    from weft.store import reducers

    store = Store(reducers={"shared:log": reducers.append})
    memory = AgentMemory(store)
    memory.set("shared:log", "a")
    memory.set("shared:log", "b")
    assert memory.get_value("shared:log") == "b"


def test_delete(memory: AgentMemory) -> None:
    memory.set("step:s", 1)
    assert memory.delete("step:s") is True
    assert memory.delete("step:s") is False
    assert memory.get("step:s") is None


# ---------------------------------------------------------------------- reads


def test_get_get_value_has(memory: AgentMemory) -> None:
    memory.set("task:t", [1])
    assert memory.get("task:t") is not None
    assert memory.get("task:none") is None
    assert memory.get_value("task:t") == [1]
    assert memory.get_value("task:none") is None
    assert memory.get_value("task:none", "dflt") == "dflt"
    assert memory.has("task:t")
    assert not memory.has("task:none")


def test_value_read_cannot_be_mutated_into_the_store(memory: AgentMemory) -> None:
    original = {"items": [1, 2], "meta": {"a": 1}}
    memory.set("step:s", original)
    original["items"].append(3)  # the caller's object is not the stored one
    value = memory.get_value("step:s")
    with pytest.raises(TypeError):
        value["items"].append(99)
    with pytest.raises(TypeError):
        value["meta"]["a"] = 2
    with pytest.raises(TypeError):
        value["new"] = 1
    assert memory.get_value("step:s") == {"items": [1, 2], "meta": {"a": 1}}
    copy = thaw(value)
    copy["items"].append(3)
    assert memory.get_value("step:s") == {"items": [1, 2], "meta": {"a": 1}}


def test_state_is_not_part_of_memory(memory: AgentMemory) -> None:
    memory.store.write("state", "x", 1)
    fill(memory)
    assert "state:x" not in keys_of(memory.snapshot())
    assert memory.list(key_prefix="sta") == []
    assert memory.clear(key_prefix="state:") == 0
    assert memory.clear() == 5
    assert memory.store.value("state", "x") == 1
    assert len(memory) == 0


def test_list_is_ordered_by_last_write(memory: AgentMemory) -> None:
    fill(memory)
    memory.set("input:topic", "rewritten")
    assert keys_of(memory.list()) == [
        "step:search",
        "step:summarize",
        "task:research",
        "shared:top",
        "input:topic",
    ]


@pytest.mark.parametrize(
    ("filters", "expected"),
    [
        ({"kind": "step_result"}, ["step:search", "step:summarize"]),
        ({"kind": ["task_result", "input"]}, ["input:topic", "task:research"]),
        ({"kind": []}, []),
        ({"keys": ["task:research", "step:search", "step:nope"]}, ["step:search", "task:research"]),
        ({"key_prefix": "step:s"}, ["step:search", "step:summarize"]),
        ({"key_prefix": "step:su"}, ["step:summarize"]),
        ({"key_prefix": "s"}, ["step:search", "step:summarize", "shared:top"]),
        ({"sources": ["search", "researcher"]}, ["step:search", "shared:top"]),
        ({"kind": "step_result", "sources": ["summarize"]}, ["step:summarize"]),
        ({"kind": "shared", "key_prefix": "step:"}, []),
        ({"keys": ["step:search", "task:research"], "kind": "task_result"}, ["task:research"]),
        ({"keys": ["step:search", "step:summarize"], "key_prefix": "step:se"}, ["step:search"]),
        (
            {"kind": ["step_result", "shared"], "key_prefix": "s", "sources": ["researcher"]},
            ["shared:top"],
        ),
    ],
)
def test_list_filters_and_together(
    memory: AgentMemory, filters: dict[str, object], expected: list[str]
) -> None:
    fill(memory)
    assert keys_of(memory.list(**filters)) == expected  # type: ignore[arg-type]


def test_snapshot_is_every_memory_entry(memory: AgentMemory) -> None:
    fill(memory)
    assert keys_of(memory.snapshot()) == keys_of(memory.list())
    assert len(memory.snapshot()) == 5


def test_key_prefix_uses_the_index_not_a_scan(
    big_memory: AgentMemory, monkeypatch: pytest.MonkeyPatch
) -> None:
    asked: list[tuple[dict[str, object], int]] = []
    entries = Store.entries

    def spy(self: Store, **kwargs: Any) -> list[Entry]:
        found = entries(self, **kwargs)
        asked.append((kwargs, len(found)))
        return found

    monkeypatch.setattr(Store, "entries", spy)
    assert len(big_memory.list(key_prefix="step:n00001")) == 10
    assert asked == [({"key_prefix": "step:n00001"}, 10)]  # 10 materialised, not 100k


# ---------------------------------------------------------------------- clear


def test_clear_everything_keeps_state(memory: AgentMemory) -> None:
    memory.store.write("state", "x", 1)
    fill(memory)
    assert memory.clear() == 5
    assert memory.snapshot() == []
    assert list(memory.store.keys()) == ["state:x"]


def test_clear_by_kind(memory: AgentMemory) -> None:
    fill(memory)
    assert memory.clear(kind="step_result") == 2
    assert keys_of(memory.list()) == ["input:topic", "task:research", "shared:top"]
    assert memory.clear(kind=["input", "shared"]) == 2
    assert keys_of(memory.list()) == ["task:research"]


def test_clear_by_prefix(memory: AgentMemory) -> None:
    fill(memory)
    assert memory.clear(key_prefix="step:se") == 1
    assert keys_of(memory.list(kind="step_result")) == ["step:summarize"]
    assert memory.clear(kind="task_result", key_prefix="step:") == 0
    assert memory.has("step:summarize")


def record(memory: AgentMemory) -> list[MemoryEvent]:
    events: list[MemoryEvent] = []
    memory.subscribe(events.append)
    return events


def test_clear_by_kind_notifies_subscribers(memory: AgentMemory) -> None:
    fill(memory)
    events = record(memory)
    memory.clear(kind="step_result")
    assert [(e.op, e.key, e.kind, e.entry) for e in events] == [
        ("clear", "step:", "step_result", None)
    ]


def test_clear_by_prefix_notifies_subscribers(memory: AgentMemory) -> None:
    fill(memory)
    events = record(memory)
    memory.clear(key_prefix="step:se")
    assert [(e.op, e.key, e.kind) for e in events] == [("clear", "step:se", "step_result")]


def test_clear_all_notifies_once_per_namespace(memory: AgentMemory) -> None:
    events = record(memory)
    memory.clear()
    assert [e.key for e in events] == ["task:", "step:", "input:", "shared:"]
    assert {e.op for e in events} == {"clear"}


# -------------------------------------------------------------- subscriptions


def test_subscribers_hear_set_and_delete_with_the_entry(memory: AgentMemory) -> None:
    events = record(memory)
    memory.set("task:t", {"a": 1}, source="t", title="T")
    memory.delete("task:t")
    memory.delete("task:t")  # nothing there: no event
    assert [(e.op, e.key, e.kind, e.source) for e in events] == [
        ("set", "task:t", "task_result", "t"),
        ("delete", "task:t", "task_result", None),
    ]
    assert events[0].entry is not None
    assert events[0].entry.value == {"a": 1}
    assert events[0].entry.title == "T"
    assert events[1].entry is None


def test_subscribers_hear_writes_made_straight_to_the_store(memory: AgentMemory) -> None:
    events = record(memory)
    memory.store.write("step", "s", 1, source="executor")
    assert [(e.op, e.key, e.source) for e in events] == [("set", "step:s", "executor")]


def test_subscribers_do_not_hear_state(memory: AgentMemory) -> None:
    events = record(memory)
    memory.store.write("state", "x", 1)
    memory.store.delete("state", "x")
    memory.store.clear(kind="state")
    memory.store.clear(key_prefix="state:")
    memory.store.note("step", "s", "started")
    assert events == []


def test_a_whole_store_clear_is_a_memory_clear(memory: AgentMemory) -> None:
    events = record(memory)
    memory.store.clear()
    assert [(e.op, e.key, e.kind) for e in events] == [("clear", "", None)]


def test_unsubscribe_stops_events(memory: AgentMemory) -> None:
    events: list[MemoryEvent] = []
    unsubscribe = memory.subscribe(events.append)
    memory.set("step:a", 1)
    unsubscribe()
    memory.set("step:b", 1)
    assert [e.key for e in events] == ["step:a"]


def test_failing_subscriber_is_logged_by_name_and_others_still_run(
    memory: AgentMemory, caplog: pytest.LogCaptureFixture
) -> None:
    heard: list[str] = []

    def broken_panel(event: MemoryEvent) -> None:
        raise RuntimeError("panel is down")

    memory.subscribe(broken_panel)
    memory.subscribe(lambda event: heard.append(event.key))
    with caplog.at_level(logging.ERROR, logger="weft.memory"):
        entry = memory.set("step:s", 1)
    assert entry.value == 1
    assert memory.get_value("step:s") == 1
    assert heard == ["step:s"]
    records = [r for r in caplog.records if r.name == "weft.memory"]
    assert len(records) == 1
    assert "broken_panel" in records[0].getMessage()
    assert records[0].exc_info is not None
    assert not [r for r in caplog.records if r.name == "weft.store"]


def test_docstring_examples_run() -> None:
    import doctest

    import weft.memory.agent_memory as module

    failures, tried = doctest.testmod(module, raise_on_error=False)
    assert tried > 0
    assert failures == 0


def test_the_records_of_a_run_are_not_listed_as_memory() -> None:
    from weft.store import RunLog

    memory = AgentMemory()
    memory.set("step:draft", "a draft")
    log = RunLog(memory.store, "plan-1")
    log.begin("plan")
    log.once("draft", "fetch", lambda: "fetched")
    assert [e.key for e in memory.list()] == ["step:draft"]
    assert [e.key for e in memory.list(key_prefix="step:plan-1")] == []
    assert len(memory) == 1
    assert memory.get("step:plan-1") is not None  # read by its key, it is there
