"""A store at width. Merging many deltas at once (a join after a wide fan-out) costs time
linear in their writes: a delta that replaces a field is checked against the batch before
it by key, not by a walk over the whole batch. A store forked for every write keeps its
key index's unsorted versions few."""

from __future__ import annotations

import sys
import types
from collections.abc import Callable

import pytest

from weft.errors import MergeConflictError
from weft.store import Store, merge
from weft.store._index import SHARED_LOG, SortedKeys


def steps_in(module: types.ModuleType, run: Callable[[], object]) -> int:
    """How many Python frames of ``module`` ``run`` enters or resumes (a generator step
    counts once): the work done there, counted without a clock."""
    entered = 0
    where = module.__file__

    def profile(frame: types.FrameType, event: str, arg: object) -> None:
        nonlocal entered
        if event == "call" and frame.f_code.co_filename == where:
            entered += 1

    sys.setprofile(profile)
    try:
        run()
    finally:
        sys.setprofile(None)
    return entered


def test_merging_thousands_of_replacing_deltas_takes_a_few_steps_per_delta() -> None:
    n = 2000
    store = Store()
    view = store.fork()
    deltas = [view.delta({f"f{i}": i}, source=f"b{i}") for i in range(n)]
    steps = steps_in(merge, lambda: view.merge(deltas, check=False))
    assert steps <= 10 * n  # it was n * n / 2: each delta against the whole batch before it
    assert [view.value("state", f"f{i}") for i in (0, n // 2, n - 1)] == [0, n // 2, n - 1]


def test_two_deltas_of_one_merge_replacing_one_field_conflict_after_thousands_of_others() -> None:
    store = Store()
    view = store.fork()
    deltas = [view.delta({f"f{i}": i}, source=f"b{i}") for i in range(1000)]
    deltas.insert(10, view.delta({"x": 1}, source="first"))
    deltas.append(view.delta({"x": 2}, source="second"))
    with pytest.raises(MergeConflictError, match=r"state:x .*'first' and 'second'"):
        store.merge(deltas)
    assert not store.has("state", "f0")  # nothing of the merge was written
    store.merge(deltas[:-1])
    assert (store.value("state", "x"), store.value("state", "f999")) == (1, 999)


def versions_behind(index: SortedKeys) -> int:
    """How many unsorted versions a read of ``index`` would walk back through."""
    count, pending = 0, index._pending
    while pending is not None:
        count += 1
        pending = pending[0]._pending
    return count


def test_an_index_forked_for_every_write_keeps_a_version_per_batch_of_writes() -> None:
    """A store forked for every write (a transaction, a plan's call) and fast-forwarded to
    the fork: its key index keeps one unsorted version per ``SHARED_LOG`` writes."""
    index = SortedKeys()
    for i in range(1000):
        index = index.fork().add(f"k{i:04}")
    assert versions_behind(index) <= 1000 // SHARED_LOG + 1  # it was one per write
    assert list(index.with_prefix("k099")) == [f"k099{d}" for d in range(10)]


def test_a_parent_and_a_fork_changing_one_shared_version_each_keep_their_own() -> None:
    index = SortedKeys().add("a").add("b")
    fork = index.fork()
    parent, child = index.add("p"), fork.add("c")
    assert (list(parent), list(child), list(index)) == (
        ["a", "b", "p"],
        ["a", "b", "c"],
        ["a", "b"],
    )
