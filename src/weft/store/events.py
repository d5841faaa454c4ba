"""The two records of the store: an ``Entry`` (what a key holds) and an ``Event`` (a change).

Inside, the store keeps both as *rows*: plain tuples of the same fields in the same order
(``EntryRow``, ``EventRow``), and makes the named tuples only where they leave it (``get``,
``entries``, ``events``, what subscribers and the journal receive). CPython's cyclic garbage
collector stops tracking a plain tuple that holds only atomic values (strings, numbers,
None) but never an instance of a tuple subclass, so a store of a million entries kept as
named tuples would have it walk two million of them at every full collection: most of the
time spent building such a store.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final, Literal, NamedTuple

from weft.store._log import AppendLog, read

Kind = Literal["input", "state", "step", "task", "shared"]
KINDS: Final[tuple[str, ...]] = ("input", "state", "step", "task", "shared")

Op = Literal["write", "delete", "clear", "note"]
"""``write`` sets or reduces a value; ``delete`` removes a key; ``clear`` removes every
key of a kind and prefix (``path`` holds the prefix); ``note`` changes nothing and
tells observers something (a node started, say)."""

EntryRow = tuple[str, str, Any, str | None, float, float, int, Mapping[str, Any] | None]
"""An ``Entry``'s fields as a plain tuple: kind, path, stored, source, created_at,
updated_at, seq, meta (how the store keeps an entry)."""

EventRow = tuple[int, str, str, str, Any, str | None, str, float, Mapping[str, Any] | None]
"""An ``Event``'s fields as a plain tuple: seq, op, kind, path, value, source, reducer, time,
meta (how the store keeps its log)."""


def make_key(kind: str, path: str) -> str:
    """The one string that names an entry: ``kind:path`` (``step:research``)."""
    return f"{kind}:{path}"


class Entry(NamedTuple):
    """What one key holds: its frozen value and who wrote it when.

    A named tuple (immutable and cheap to build: one is made per write). ``value``
    is what readers see; ``stored`` is how the store holds it, which for a list
    grown by ``append``/``extend`` is an ``AppendLog`` turned into the list on the
    first read (so appends stay O(1) however long the list grows).
    """

    kind: str
    path: str
    stored: Any
    source: str | None
    created_at: float
    updated_at: float
    seq: int
    meta: Mapping[str, Any] | None = None

    @property
    def value(self) -> Any:
        return read(self.stored)

    @property
    def weight(self) -> int:
        """Items in the value if it is a list (appended or not), else 1: what copying it costs."""
        stored = self.stored
        return len(stored) if isinstance(stored, (list, AppendLog)) else 1

    @property
    def key(self) -> str:
        return make_key(self.kind, self.path)


class Event(NamedTuple):
    """One change in the append-only log (a named tuple, like ``Entry``).

    For a write, ``value`` is the update as written (the delta), not the new
    value: replaying the log through the same reducers rebuilds the store,
    and persisting an append costs the size of the appended item.
    """

    seq: int
    op: Op
    kind: str
    path: str
    value: Any
    source: str | None
    reducer: str
    time: float
    meta: Mapping[str, Any] | None = None

    @property
    def key(self) -> str:
        return make_key(self.kind, self.path)
