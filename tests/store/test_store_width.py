"""Merging many deltas at once (a join after a wide fan-out) costs time linear in their
writes: a delta that replaces a field is checked against the batch before it by key,
not by a walk over the whole batch."""

from __future__ import annotations

import pytest

from weft.errors import MergeConflictError
from weft.store import Store


class CountingKind(str):
    """A kind that counts how often it is formatted into a key."""

    formatted = 0

    def __format__(self, spec: str) -> str:
        CountingKind.formatted += 1
        return str.__format__(self, spec)


def test_merging_thousands_of_replacing_deltas_builds_each_key_a_few_times() -> None:
    n = 2000
    store = Store()
    view = store.fork()
    state = CountingKind("state")
    deltas = [view.delta([(state, f"f{i}", i, f"b{i}")]) for i in range(n)]
    CountingKind.formatted = 0
    view.merge(deltas, check=False)
    assert CountingKind.formatted <= 4 * n  # it was n * (n + 1) / 2: each against the batch
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
