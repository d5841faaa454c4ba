"""Time travel: a thread as it was at any step, and forks that start new threads there.

History is never rewritten: loading an earlier step builds a new store, and a fork is a
new thread that begins with a snapshot of the source at that step (so it does not
depend on the source's later pruning or deletion) and records where it came from.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from weft.persist.base import Backend
from weft.persist.snapshot import Snapshot, capture
from weft.store import Store
from weft.store import reducers as _reducers

if TYPE_CHECKING:
    from weft.persist.runs import DurableRun


def load_store(
    backend: Backend,
    thread_id: str,
    *,
    step: int | None = None,
    reducers: Mapping[str, _reducers.Reducer] | None = None,
    name: str | None = None,
) -> Store:
    """A new (not durable) store holding ``thread_id`` as of ``step`` (default: its end)."""
    checkpoint = backend.load(thread_id, step=step)
    return checkpoint.to_store(reducers=reducers, types=backend.types, name=name)


def fork_thread(
    backend: Backend,
    source_thread: str,
    *,
    step: int,
    values: Mapping[str, Any] | None = None,
    thread_id: str | None = None,
    run_id: str | None = None,
    reducers: Mapping[str, _reducers.Reducer] | None = None,
) -> DurableRun:
    """Start a new thread from ``source_thread`` at ``step`` and open a run on it.

    The new thread begins with a snapshot of the source at that step (so it does not
    depend on the source's later pruning or deletion) and records where it came from
    (``ThreadInfo.parent_thread``/``parent_step``); ``values`` (``{"kind:path": value}``)
    are then written over it in one transaction, replacing what was there. The source
    thread's history is never changed."""
    store = load_store(backend, source_thread, step=step, reducers=reducers)
    taken = capture(store)
    snapshot = Snapshot(step=step, entries=taken.entries, reducers=taken.reducers)
    from weft.persist.runs import DurableRun

    fresh = thread_id if thread_id is not None else new_id(f"{source_thread}~fork")
    backend.create_thread(fresh, snapshot, parent=(source_thread, step))
    run = DurableRun(backend, fresh, run_id=run_id, reducers=reducers)
    if values:
        with run.transaction() as fork:
            for key, value in values.items():
                kind, _, path = key.partition(":")
                fork.write(kind, path, value, source="weft.fork", replace=True)
    return run


def new_id(prefix: str) -> str:
    """A fresh id: ``prefix-`` and 12 hex digits."""
    return f"{prefix}-{uuid.uuid4().hex[:12]}"
