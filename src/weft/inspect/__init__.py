"""Inspect and steer stored runs: ``Reader`` reads the threads of a SQLite file or a
PostgreSQL database as typed records (threads and runs, timelines, events, state at any
step, memory, pauses) and answers, forks and prunes them; ``weft threads``, ``weft show``
and the other inspection commands render what it reads."""

from weft.inspect.reader import (
    EntryChange,
    Fork,
    MemoryItem,
    Progress,
    Reader,
    RunSummary,
    StateDiff,
    StateEntry,
    ThreadEvent,
    ThreadState,
    ThreadSummary,
    TimelineItem,
    to_json,
)

__all__ = [
    "EntryChange",
    "Fork",
    "MemoryItem",
    "Progress",
    "Reader",
    "RunSummary",
    "StateDiff",
    "StateEntry",
    "ThreadEvent",
    "ThreadState",
    "ThreadSummary",
    "TimelineItem",
    "to_json",
]
