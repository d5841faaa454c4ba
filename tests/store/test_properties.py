"""Property tests: merges do not depend on completion order; the log rebuilds exactly."""

from __future__ import annotations

import sys
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from weft.store import DELETE, Store, dumps, loads, reducers

REDUCED = {
    "state:log": reducers.append,
    "state:items": reducers.extend,
    "state:total": reducers.add,
    "state:best": reducers.max,
    "state:tags": reducers.union,
    "state:diag": reducers.merge,
}

json_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-1000, 1000),
    st.text(max_size=5),
    st.floats(allow_nan=False, allow_infinity=False, width=32),
)
json_values = st.recursive(
    json_scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=4), inner, max_size=3)
    ),
    max_leaves=8,
)


@st.composite
def reduced_write(draw: st.DrawFn) -> tuple[str, Any]:
    field = draw(st.sampled_from(sorted(REDUCED)))
    if field == "state:log":
        return field, draw(json_values)
    if field == "state:items":
        return field, draw(st.lists(json_scalars, max_size=3))
    if field in ("state:total", "state:best"):
        return field, draw(st.integers(-50, 50))
    if field == "state:tags":
        return field, draw(st.lists(st.sampled_from("abcdef"), max_size=3))
    keys = st.sampled_from(["p", "q", "r"])
    return field, draw(st.dictionaries(keys, st.one_of(st.integers(0, 9), st.just(DELETE))))


@st.composite
def branch_plans(draw: st.DrawFn) -> tuple[list[list[tuple[str, Any]]], list[int]]:
    """Writes per branch, plus an interleaving: the order branches get to run a write."""
    branches = draw(st.lists(st.lists(reduced_write(), max_size=5), min_size=1, max_size=5))
    turns = [i for i, writes in enumerate(branches) for _ in writes]
    order = draw(st.permutations(turns))
    return branches, order


def _write(store: Store, key: str, value: Any) -> None:
    kind, _, path = key.partition(":")
    store.write(kind, path, value)


@settings(max_examples=150, deadline=None)
@given(branch_plans())
def test_merge_result_does_not_depend_on_completion_order(
    plan: tuple[list[list[tuple[str, Any]]], list[int]],
) -> None:
    branches, interleaving = plan

    def run(order: list[int]) -> dict[str, Any]:
        store = Store(reducers=REDUCED)
        store.write("state", "log", "init")
        forks = [store.fork(name=f"b{i}") for i in range(len(branches))]
        cursor = [0] * len(branches)
        for i in order:
            key, value = branches[i][cursor[i]]
            cursor[i] += 1
            _write(forks[i], key, value)
            # each branch also owns one replace field: no conflict
            forks[i].write("state", f"own{i}", cursor[i])
        store.merge(forks)
        return store.to_dict()

    in_branch_order = [i for i, writes in enumerate(branches) for _ in writes]
    assert run(interleaving) == run(in_branch_order)


@st.composite
def operations(draw: st.DrawFn) -> list[tuple[str, Any]]:
    ops = st.one_of(
        st.tuples(st.just("write"), reduced_write()),
        st.tuples(
            st.just("set"),
            st.tuples(st.sampled_from(["shared:a", "step:b", "task:c", "input:d"]), json_values),
        ),
        st.tuples(st.just("delete"), st.sampled_from(["shared:a", "step:b", "state:log"])),
        st.tuples(st.just("clear"), st.sampled_from(["step", "shared", None])),
        st.tuples(st.just("fork"), st.lists(reduced_write(), max_size=3)),
    )
    return draw(st.lists(ops, max_size=25))


@settings(max_examples=150, deadline=None)
@given(operations())
def test_from_events_rebuilds_exactly(ops: list[tuple[str, Any]]) -> None:
    store = Store(reducers=REDUCED)
    for op, arg in ops:
        if op in ("write", "set"):
            _write(store, *arg)
        elif op == "delete":
            kind, _, path = arg.partition(":")
            store.delete(kind, path)
        elif op == "clear":
            store.clear(kind=arg)
        else:
            child = store.fork(name="child")
            for key, value in arg:
                _write(child, key, value)
            store.merge([child])
    rebuilt = Store.from_events(store.events())
    assert rebuilt.entries() == store.entries()
    assert rebuilt.events() == store.events()
    assert rebuilt.last_seq == store.last_seq


@settings(max_examples=100, deadline=None)
@given(st.lists(json_values, max_size=4))
def test_codec_round_trips_every_json_value(values: list[Any]) -> None:
    store = Store()
    for i, value in enumerate(values):
        store.write("state", f"v{i}", value)
        assert loads(dumps(store.value("state", f"v{i}"))) == value


@pytest.mark.parametrize("interned", [False, True])  # True: one path object per field
@settings(max_examples=150, deadline=None)
@given(st.lists(st.one_of(reduced_write(), st.tuples(st.just("state:plain"), json_values))))
def test_a_batch_equals_the_same_writes_one_by_one(
    interned: bool, writes: list[tuple[str, Any]]
) -> None:
    one, many = Store(reducers=REDUCED), Store(reducers=REDUCED)
    for store in (one, many):
        store.write("state", "log", "init")
        store.write("state", "items", [0])
    for key, value in writes:
        _write(one, key, value)
    paths = [key.partition(":")[2] for key, _ in writes]
    if interned:
        paths = [sys.intern(path) for path in paths]
    many.write_many(
        "state", [(path, value, None) for path, (_, value) in zip(paths, writes, strict=True)]
    )
    assert many.to_dict() == one.to_dict()
    assert [e[:7] for e in many.events()] == [e[:7] for e in one.events()]
