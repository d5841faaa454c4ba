"""The store's key index: a sorted set of keys (changes recorded, then sorted into a
persistent B-tree on the next read) that matches a plain sorted list, old versions intact."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from weft.errors import StoreError
from weft.store._index import FANOUT, LEAF_SIZE, SortedKeys

SHAPES = st.sampled_from([(4, 8), (8, 8), (12, 9), (LEAF_SIZE, FANOUT)])
"""(leaf_size, fanout): small ones make a few hundred keys three to five levels deep."""


def assert_balanced(index: SortedKeys) -> None:
    """Every leaf at one depth, every node but the root at least a quarter full and at most
    full, a root with children has two or more, and each ``maxes[i]`` is its child's last key."""
    tree = index._tree()
    leaf_max, leaf_min, fan_max, fan_min = tree.shape
    seen: list[str] = []

    def walk(node: Any, height: int, is_root: bool) -> str | None:
        if height == 0:
            assert len(node) <= leaf_max
            assert is_root or len(node) >= leaf_min, f"leaf of {len(node)} < {leaf_min}"
            seen.extend(node)
            return node[-1] if node else None
        maxes, children = node
        assert len(maxes) == len(children) <= fan_max
        assert len(children) >= (2 if is_root else fan_min), f"{len(children)} children"
        for top, child in zip(maxes, children, strict=True):
            assert walk(child, height - 1, False) == top
        return str(maxes[-1])

    walk(tree.root, tree.height, True)
    assert seen == sorted(set(seen)), "keys out of order or repeated"
    assert len(seen) == len(index)


def prefixes_of(keys: list[str]) -> list[str]:
    """Prefixes worth asking for: none, each namespace, parts of keys, and past every key."""
    asked = {"", "a", "b:", "c:x/0", "~"}
    for key in keys[:: max(1, len(keys) // 8)]:
        asked.update(key[:cut] for cut in range(len(key) + 1))
    return sorted(asked)


UNIVERSE = [f"{ns}:{group}/{n:03}" for ns in "abc" for group in "xy" for n in range(120)]
keys = st.sampled_from(UNIVERSE)


Op = tuple[str, int, str]
"""``(what, branch, key)``: ``add``/``remove`` a key, ``read`` (sorts what was recorded),
or ``fork`` (the branch goes on as two), on branch number ``branch`` (modulo how many)."""


@st.composite
def histories(draw: st.DrawFn) -> list[Op]:
    """Grow by many adds, shrink by many removes, then mix changes, reads and forks: splits
    and joins at every level, adds and removes of keys that are there and that are not,
    and reads often (one insert at a time) or rarely (a rebuild from a merge)."""
    rng = draw(st.randoms(use_true_random=False))
    grown = rng.sample(UNIVERSE, draw(st.integers(0, len(UNIVERSE))))
    shrunk = rng.sample(grown, draw(st.integers(0, len(grown))))
    mixed = draw(
        st.lists(
            st.tuples(st.sampled_from(["add", "remove", "read", "fork"]), st.integers(0, 3), keys),
            max_size=120,
        )
    )
    ops = [("add", 0, k) for k in grown] + [("remove", 0, k) for k in shrunk] + mixed
    read_every = draw(st.sampled_from([1, 3, 40, 10_000]))
    history: list[Op] = []
    for i, op in enumerate(ops):
        history.append(op)
        if i % read_every == read_every - 1:
            history.append(("read", 0, op[2]))
    return history


@settings(max_examples=150, deadline=None)
@given(histories(), SHAPES)
def test_index_matches_a_sorted_list_and_old_versions_stay_unchanged(
    history: list[Op], shape: tuple[int, int]
) -> None:
    leaf_size, fanout = shape
    branches = [(SortedKeys(leaf_size=leaf_size, fanout=fanout), set[str]())]
    versions: list[tuple[SortedKeys, list[str]]] = []
    for step, (what, number, key) in enumerate(history):
        at = number % len(branches)
        index, model = branches[at]
        if what == "fork":
            index = index.fork()
            branches[at] = (index, model)
            branches.append((index, set(model)))
        elif what == "read":
            assert len(index) == len(model)
            assert (key in index) == (key in model)
            if step % 10 == 0:
                assert_balanced(index)
        else:
            index = index.add(key) if what == "add" else index.remove(key)
            (model.add if what == "add" else model.discard)(key)
            branches[at] = (index, model)
        if step % 25 == 0:
            versions.append((index, sorted(model)))
    for index, model in branches:
        assert_balanced(index)
        expected = sorted(model)
        assert list(index) == expected
        assert len(index) == len(model)
        for prefix in prefixes_of(expected):
            assert list(index.with_prefix(prefix)) == [k for k in expected if k.startswith(prefix)]
        for key in [*UNIVERSE, *(key + "~" for key in expected), "a:", "~"]:
            assert (key in index) == (key in model)
    for old, old_keys in versions:  # persistence: later changes left every old version alone
        assert list(old) == old_keys
        assert len(old) == len(old_keys)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.tuples(st.booleans(), st.text(alphabet="abc:/", max_size=4)), max_size=300),
    st.text(alphabet="abc:/", max_size=3),
    SHAPES,
)
def test_index_of_short_colliding_keys_lists_every_prefix(
    changes: list[tuple[bool, str]], prefix: str, shape: tuple[int, int]
) -> None:
    index, model = SortedKeys(leaf_size=shape[0], fanout=shape[1]), set[str]()
    for add, key in changes:
        index = index.add(key) if add else index.remove(key)
        (model.add if add else model.discard)(key)
        assert (key in index) == add  # a read after each change: one insert at a time
    assert_balanced(index)
    assert list(index.with_prefix(prefix)) == [k for k in sorted(model) if k.startswith(prefix)]


@pytest.mark.parametrize("read_each", [True, False], ids=["read each change", "read at end"])
def test_default_index_grows_levels_and_shrinks_back_to_one_leaf(read_each: bool) -> None:
    index = SortedKeys()
    keys = [f"k{(i * 7919) % 20_000:05}" for i in range(20_000)]  # every key, scattered
    for key in keys:
        index = index.add(key)
        assert not read_each or key in index
    assert index._tree().height == 2
    assert_balanced(index)
    assert list(index) == sorted(keys)
    assert list(index.with_prefix("k0499")) == [f"k0499{d}" for d in range(10)]
    half = index
    for key in keys[::2]:
        half = half.remove(key)
        assert not read_each or key not in half
    assert_balanced(half)
    assert list(half) == sorted(keys[1::2])
    assert len(index) == 20_000  # the full version is untouched
    for count, key in enumerate(keys[1::2][:-3]):
        half = half.remove(key)
        assert not read_each or key not in half
        if count % 1000 == 0:
            assert_balanced(half)
    assert_balanced(half)
    assert half._tree().height == 0
    assert list(half) == sorted(keys[1::2][-3:])


def test_a_fork_and_its_parent_sort_their_shared_changes_once() -> None:
    index = SortedKeys()
    for i in range(1000):
        index = index.add(f"k{i:04}")
    shared = index.fork()
    parent, child = shared.add("p"), shared.remove("k0001")
    assert list(child.with_prefix("k000")) == [f"k000{d}" for d in range(10) if d != 1]
    assert index._pending is None  # sorted by the child's read, for the parent too
    assert parent._pending is not None and parent._pending[0] is index
    assert list(parent)[-2:] == ["k0999", "p"]


def test_changing_an_older_version_leaves_its_newer_versions_alone() -> None:
    base = SortedKeys().add("a").add("b")
    newer = base.add("c")
    other = base.remove("a")  # base's record of changes was extended by newer already
    again = base.add("d")
    assert (list(base), list(newer), list(other), list(again)) == (
        ["a", "b"],
        ["a", "b", "c"],
        ["b"],
        ["a", "b", "d"],
    )


def test_empty_index_has_nothing() -> None:
    index = SortedKeys()
    assert len(index) == 0
    assert list(index) == []
    assert list(index.with_prefix("a")) == []
    assert "a" not in index
    assert list(index.remove("a")) == []


def test_index_shape_too_small_is_refused_with_the_bounds() -> None:
    with pytest.raises(StoreError, match=r"leaf_size >= 4 and fanout >= 8, got 2 and 8"):
        SortedKeys(leaf_size=2, fanout=8)
    with pytest.raises(StoreError, match=r"got 4 and 3"):
        SortedKeys(leaf_size=4, fanout=3)
