"""Whatever a model sends, the memory tools never raise and never touch anything outside shared:."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from weft.memory import AgentMemory, memory_tools
from weft.store import Store

json_scalars = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=20)
)
json_values = st.recursive(
    json_scalars,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)
namespaces = st.sampled_from(
    ["", "task:", "step:", "input:", "state:", "shared:", "shared:task:", "Task:", " step:", "x:"]
)
keys = st.builds(lambda ns, rest: ns + rest, namespaces, st.text(max_size=12)) | st.text(
    max_size=12
)
field_names = st.sampled_from(
    ["key", "value", "title", "description", "keys", "kind", "key_prefix", "sources", "extra"]
)
argument_dicts = st.dictionaries(
    field_names,
    json_values | keys | st.lists(keys, max_size=5),
    max_size=5,
) | st.fixed_dictionaries(
    {"key": keys, "value": json_values},
    optional={"title": st.text(max_size=10) | st.integers(), "description": st.text(max_size=10)},
)
raw_arguments = (
    argument_dicts
    | argument_dicts.map(lambda d: json.dumps(d, allow_nan=True))
    | st.text(max_size=40)
    | st.none()
    | st.integers()
    | st.lists(json_scalars, max_size=3)
)
tool_names = st.sampled_from(["memory_list", "memory_read", "memory_write", "memory_nope"])
sources = st.none() | st.text(max_size=8)


def seeded_memory() -> AgentMemory:
    store = Store(name="seed")
    for kind in ("input", "state", "step", "task", "shared"):
        store.write(kind, "a", {"v": kind}, source="system", meta={"title": kind})
    return AgentMemory(store)


def outside_shared(store: Store) -> dict[str, Any]:
    return {
        entry.key: (entry.value, entry.source, entry.meta, entry.created_at, entry.seq)
        for entry in store.entries()
        if entry.kind != "shared"
    }


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(calls=st.lists(st.tuples(tool_names, raw_arguments, sources), min_size=1, max_size=6))
def test_no_call_raises_or_writes_outside_shared(calls: list[tuple[str, Any, str | None]]) -> None:
    memory = seeded_memory()
    store = memory.store
    before = outside_shared(store)
    since = store.last_seq
    tools = memory_tools(memory, source="agent", max_value_bytes=200)
    for name, arguments, source in calls:
        result = tools.call(name, arguments, source=source)
        json.dumps(result, allow_nan=False)
        assert isinstance(result["ok"], bool)
        if not result["ok"]:
            assert isinstance(result["error"], str)
            assert result["error"]
            assert "failed inside weft" not in result["error"]  # bad input is not a crash
    assert outside_shared(store) == before
    for event in store.events(since):
        assert (event.op, event.kind) == ("write", "shared")


@settings(max_examples=300, deadline=None)
@given(key=keys, value=json_values, title=st.none() | st.text(max_size=10))
def test_memory_write_lands_under_shared_or_nowhere(
    key: str, value: Any, title: str | None
) -> None:
    memory = seeded_memory()
    before = outside_shared(memory.store)
    arguments: dict[str, Any] = {"key": key, "value": value}
    if title is not None:
        arguments["title"] = title
    for form in (arguments, json.dumps(arguments, allow_nan=True)):
        result = memory_tools(memory).memory_write(form)
        if result["ok"]:
            assert result["key"].startswith("shared:")
            assert not result["key"].startswith("shared:shared:")
            assert memory.store.get("shared", result["key"].removeprefix("shared:")) is not None
    assert outside_shared(memory.store) == before
