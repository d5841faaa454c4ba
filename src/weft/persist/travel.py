"""Time travel: a thread as it was at any step (``DurableRun.fork`` starts a new thread
from one). History is never rewritten: loading an earlier step builds a new store.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping

from weft.persist.base import Backend
from weft.store import Store
from weft.store import reducers as _reducers


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


def new_id(prefix: str) -> str:
    """A fresh id: ``prefix-`` and 12 hex digits."""
    return f"{prefix}-{uuid.uuid4().hex[:12]}"
