"""Forks: isolation, O(1) sharing, merges in child order, conflicts named."""

from __future__ import annotations

import pytest

from weft.errors import InvalidKeyError, MergeConflictError, StoreError, ValueTypeError
from weft.store import Store, reducers


def test_parent_never_sees_a_childs_writes_before_merge() -> None:
    store = Store()
    store.write("state", "x", 1)
    child = store.fork()
    child.write("state", "x", 2)
    child.write("state", "y", 3)
    assert store.value("state", "x") == 1
    assert not store.has("state", "y")
    assert child.value("state", "x") == 2


def test_child_never_sees_parent_writes_after_the_fork() -> None:
    store = Store()
    child = store.fork()
    store.write("state", "late", 1)
    assert not child.has("state", "late")


def test_siblings_never_see_each_other() -> None:
    store = Store()
    a, b = store.fork(name="a"), store.fork(name="b")
    a.write("shared", "only_a", 1)
    assert not b.has("shared", "only_a")


def test_merge_folds_reducer_fields_in_child_order_not_finish_order() -> None:
    store = Store(reducers={"state:results": reducers.append})
    store.write("state", "results", "init")
    first, second, third = (store.fork(name=n) for n in ("b1", "b2", "b3"))
    # written in reverse order, as if the last branch finished first
    third.write("state", "results", "B3")
    second.write("state", "results", "B2")
    first.write("state", "results", "B1")
    store.merge([first, second, third])
    assert store.value("state", "results") == ["init", "B1", "B2", "B3"]


def test_two_children_replacing_one_field_is_an_error_naming_both() -> None:
    store = Store()
    a, b = store.fork(name="search"), store.fork(name="browse")
    a.write("state", "answer", "x")
    b.write("state", "answer", "y", source="browse-agent")
    with pytest.raises(MergeConflictError) as info:
        store.merge([a, b])
    message = str(info.value)
    assert "state:answer" in message
    assert "'search'" in message and "'browse-agent'" in message
    assert "reducer" in message


def test_a_conflicting_merge_merges_nothing() -> None:
    store = Store()
    a, b = store.fork(name="a"), store.fork(name="b")
    a.write("state", "fine", 1)
    a.write("state", "answer", "x")
    b.write("state", "answer", "y")
    with pytest.raises(MergeConflictError):
        store.merge([a, b])
    assert len(store) == 0


def test_one_child_may_replace_a_field_several_times() -> None:
    store = Store()
    child = store.fork()
    child.write("state", "x", 1)
    child.write("state", "x", 2)
    store.merge([child])
    assert store.value("state", "x") == 2


def test_delete_in_two_children_conflicts_like_a_replace() -> None:
    store = Store()
    store.write("state", "x", 1)
    a, b = store.fork(name="a"), store.fork(name="b")
    a.delete("state", "x")
    b.write("state", "x", 2)
    with pytest.raises(MergeConflictError, match="state:x"):
        store.merge([a, b])


def test_merged_writes_keep_their_source_and_reach_subscribers() -> None:
    store = Store(reducers={"state:log": reducers.append})
    seen: list[tuple[str, object, str | None]] = []
    store.subscribe(lambda e: seen.append((e.key, e.value, e.source)))
    child = store.fork(name="branch-1")
    child.write("state", "log", "hi")
    assert seen == []
    store.merge([child])
    assert seen == [("state:log", "hi", "branch-1")]


def test_a_fork_merges_once_into_a_store_and_only_into_its_family() -> None:
    store, other = Store(), Store()
    child = store.fork()
    with pytest.raises(StoreError, match="not a fork of this store"):
        other.merge([child])
    store.merge([child])
    with pytest.raises(StoreError, match="merged already"):
        store.merge([child])
    middle = store.fork()
    with pytest.raises(StoreError, match="forked from it"):
        middle.fork().merge([middle])


def test_a_fork_can_carry_its_writes_to_a_sibling_view_as_well() -> None:
    store = Store(reducers={"state:log": reducers.append})
    a = store.fork(name="a")
    a.write("state", "log", "from a")
    view = store.fork(name="view")  # another store of the family, holding what a's parent did
    view.merge([a])
    store.merge([a])
    assert view.value("state", "log") == ["from a"] == store.value("state", "log")


def test_nested_forks_merge_up_level_by_level() -> None:
    store = Store(reducers={"state:log": reducers.append})
    child = store.fork(name="c")
    grandchild = child.fork(name="g")
    grandchild.write("state", "log", "deep")
    child.write("state", "log", "mid")
    child.merge([grandchild])
    store.merge([child])
    assert store.value("state", "log") == ["mid", "deep"]


def test_fork_events_include_the_parents_history_up_to_the_fork() -> None:
    store = Store()
    store.write("state", "a", 1)
    child = store.fork()
    store.write("state", "after", 1)
    child.write("state", "b", 2)
    assert [e.key for e in child.events()] == ["state:a", "state:b"]
    assert Store.from_events(child.events()).to_dict() == child.to_dict()


def test_fork_shares_structure_instead_of_copying() -> None:
    store = Store()
    for i in range(10_000):  # past the first settle: entries in both tiers
        store.write("state", f"k{i:05}", i)
    child = store.fork()
    assert child._settled is store._settled and store._settled
    assert child._recent is store._recent and store._recent
    assert child._index is store._index
    child.write("state", "k00001", -1)
    assert store.value("state", "k00001") == 1


def test_forks_see_the_parents_reducer_declarations() -> None:
    store = Store(reducers={"state:log": reducers.append})
    child = store.fork()
    child.write("state", "log", "a")
    child.write("state", "log", "b")
    assert child.value("state", "log") == ["a", "b"]


@pytest.mark.parametrize("check", [True, False])
def test_merge_of_something_that_is_no_change_is_a_clear_error(check: bool) -> None:
    store = Store()
    store.write("state", "kept", 1)
    other = Store().fork()
    for bad in (["not a fork"], [other], [store.fork(), "x"]):
        with pytest.raises(StoreError, match=r"merge|fork"):
            store.merge(bad, check=check)  # type: ignore[list-item]
    assert store.to_dict() == {"state:kept": 1}


def test_a_delta_write_marked_replace_replaces_a_reduced_field_and_conflicts_as_one() -> None:
    store = Store(reducers={"state:log": reducers.append})
    store.write("state", "log", "a")
    view = store.fork()
    whole = view.delta([("state", "log", ["x", "y"], "w", True), ("shared", "n", 1, "w")])
    store.merge([whole])
    assert store.value("state", "log") == ["x", "y"]
    assert store.value("shared", "n") == 1
    view = store.fork()
    one = view.delta([("state", "log", ["p"], "a", True)])
    other = view.delta([("state", "log", ["q"], "b", True)])
    with pytest.raises(MergeConflictError):
        store.merge([one, other])
    with pytest.raises(StoreError, match="replace flag"):
        view.delta([("state", "log", 1, "a", "yes")])


def test_a_delta_of_a_list_checks_every_write_as_a_delta_of_a_mapping_does() -> None:
    store = Store()
    delta = store.delta([("state", "x", 1, "n1"), ("step", "r/n1", {"a": [1]}, None)])
    store.merge([delta])
    assert store.value("state", "x") == 1 and store.value("step", "r/n1") == {"a": [1]}
    for bad, error in (
        ([("state", "x", 1, "n1"), (["state"], "y", 2, None)], InvalidKeyError),
        ([("state", "x", 1, "n1"), ("state", "", 2, None)], InvalidKeyError),
        ([("state", "x", 1, "n1"), ("state", "y", {1, 2}, None)], ValueTypeError),
        ([("state", "x", 1, "n1"), ("state", "y")], StoreError),
    ):
        with pytest.raises(error):
            store.delta(bad)


def test_a_kept_delta_is_the_delta_the_store_makes_of_the_same_writes() -> None:
    """``Delta.kept`` (writes the caller checked) makes what ``Store.delta`` makes."""
    from weft.store.merge import Delta

    store = Store(reducers={"state:log": reducers.append, "state:tally": reducers.add})
    view = store.fork()
    writes = [
        ("state", "log", "a", "n1", False),
        ("state", "x", 1, "n1", False),
        ("state", "tally", 2, "n2", False),
        ("state", "log", None, "n2", False),
        ("shared", "flag", True, None, False),
        ("state", "log", "whole", "n3", True),
    ]
    for some in (writes, writes[:1], writes[:4], []):
        kept, made = Delta.kept(view, some), view.delta(some)
        assert (kept.writes, kept.replaces) == (made.writes, made.replaces)
    other = Store(reducers={"state:log": reducers.append, "state:tally": reducers.add})
    store.merge([Delta.kept(view, writes[:5])])
    other.merge([other.fork().delta(writes[:5])])
    assert store.to_dict() == other.to_dict()
