"""How a store keeps its entries: rows in two tiers, so that forks are O(1) and a large
store costs the garbage collector almost nothing.

An entry is kept as its row (``weft.store.events.EntryRow``), by ``kind:path`` key, in one
of two tiers:

- ``recent``, an ``immutables.Map`` of the keys written since the store last *settled*: a
  persistent map, so a write copies a short path and shares the rest, and a fork shares
  the whole map;
- ``settled``, a plain dict of everything written before, never changed once built, so
  forks share it as it is.

A key in ``recent`` hides the same key in ``settled``; ``GONE`` there marks a key deleted
since it settled. When ``recent`` has grown by more than an eighth of ``settled`` (and
more than ``SETTLE_MIN``), the store folds it into a new settled dict: a copy of the whole
store, paid once per ``n / 8`` writes, so a write stays O(1) on average.

Why two tiers: CPython's cyclic garbage collector walks every node of a persistent map
(a million entries are some 650,000 nodes) at every full collection, and those
collections were most of the time spent building a large store. A dict whose keys and
values are untracked (strings, and rows of atomic values) is untracked itself, so the
collector skips the settled tier whole and walks only the recent one.
"""

from __future__ import annotations

from typing import Final

import immutables

from weft.store.events import EntryRow

GONE: Final[tuple[()]] = ()
"""What ``recent`` holds for a key deleted since it settled (falsy, unlike any row)."""

Recent = immutables.Map[str, EntryRow | tuple[()]]
Settled = dict[str, EntryRow]

SETTLE_MIN: Final = 4096
"""A store settles only once ``recent`` holds more keys than this: small stores never do."""


def lookup(recent: Recent, settled: Settled, key: str) -> EntryRow | None:
    """The row of ``key``, or None when the store does not hold it."""
    row = recent.get(key)
    if row is None:
        return settled.get(key)
    return row or None


def settle_at(recent: Recent, settled: Settled) -> int:
    """How large ``recent`` may grow before the store settles: by an eighth of what is
    settled (at least ``SETTLE_MIN``) past what it holds now."""
    return len(recent) + max(SETTLE_MIN, len(settled) >> 3)


def settle(recent: Recent, settled: Settled) -> Settled:
    """A new settled dict: ``settled`` (left as it is: forks share it) with ``recent``
    folded in."""
    out = settled.copy()
    for key, row in recent.items():
        if row:
            out[key] = row
        else:
            del out[key]
    return out


def count(recent: Recent, settled: Settled) -> int:
    """How many keys the store holds (O(len(recent)))."""
    if not settled:
        return len(recent)  # no key can be GONE
    added = 0
    for key, row in recent.items():
        if not row:
            added -= 1
        elif key not in settled:
            added += 1
    return len(settled) + added
