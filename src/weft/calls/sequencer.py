"""Holding the writes of sequenced groups until their turn.

Several unordered calls that reduce one field (``:push``, ``:concat``, ``:merge``) form a
*sequenced group* (``weft.calls.dataflow``); their writes to that field are applied in
the plan's canonical order, never in the order the calls finished. ``Sequencer`` holds
each member's write until every earlier member has written or failed.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from typing import Any

from weft.calls.dataflow import GroupKey


class Sequencer:
    """Holds the writes of sequenced groups until their turn (see the module docstring)."""

    __slots__ = ("_lock", "_next", "_pending", "_queues")

    def __init__(self, groups: Mapping[GroupKey, tuple[int, ...]]) -> None:
        self._queues = dict(groups)
        self._next = dict.fromkeys(groups, 0)
        self._pending: dict[GroupKey, dict[int, Callable[[], None] | None]] = {
            key: {} for key in groups
        }
        self._lock = threading.Lock()

    def deposit(
        self, position: int, groups: tuple[GroupKey, ...], writes: Mapping[GroupKey, Any]
    ) -> None:
        """Node ``position`` is done with its groups: ``writes[key]`` applies its write to
        that field (absent: it writes nothing there). Applies whatever is now due."""
        with self._lock:
            for key in groups:
                self._pending[key][position] = writes.get(key)
            for key in groups:
                self._flush(key, skip_missing=False)

    def flush_all(self) -> None:
        """Apply every held write in order, skipping members that never finished (a run
        that stopped early still keeps what its finished calls wrote)."""
        with self._lock:
            for key in self._queues:
                self._flush(key, skip_missing=True)

    def _flush(self, key: GroupKey, *, skip_missing: bool) -> None:
        members, pending = self._queues[key], self._pending[key]
        i = self._next[key]
        while i < len(members):
            position = members[i]
            if position not in pending:
                if not skip_missing:
                    break
            else:
                write = pending.pop(position)
                if write is not None:
                    write()
            i += 1
        self._next[key] = i
