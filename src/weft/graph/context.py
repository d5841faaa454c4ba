"""``RunContext``: what a node may ask the engine for, beside its arguments.

A node whose function has a parameter named ``ctx`` is called with ``ctx=RunContext(...)``:

- ``deps``: the object given to ``run(..., context=...)`` (a typed context of your own:
  model clients, a memory backend, loggers: anything that is not state);
- ``store``: the node's own fork of the run's store. What it writes there reaches the run's
  store when the node is committed (in graph order, together with its record); its reads
  see the run's state as this node's view has it (its ancestors' writes, never a
  sibling's). A state node should prefer returning a delta;
- ``run_id``, ``node`` (the node's unique key), ``label`` (its id);
- ``call_once(key, fn, *args, reconcile=None, **kwargs)`` / ``acall_once``: a keyed call
  recorded under this node in a run with a ``run_id``: a node that runs again after a crash
  gets the recorded result instead of calling ``fn`` again. An intent is recorded before
  the call, ``fn`` gets an ``idempotency_key`` (stable across resumes) when it has a
  parameter of that name, and a call the crash interrupted goes to ``reconcile`` (see
  ``DurableRun.call_once``). Without a run id nothing is recorded: ``fn`` is just called
  (with a fresh key if it takes one).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, Generic, NamedTuple, TypeVar

from weft.store import RunLog, Store
from weft.store.runlog import Reconcile, takes_key, unrecorded

D = TypeVar("D")


class RunContext(NamedTuple, Generic[D]):
    """The run context of one node call (see the module docstring). Immutable; a named
    tuple because one is made for every call of a node that takes ``ctx``."""

    deps: D
    store: Store
    node: str
    label: str
    run_id: str | None = None
    log: RunLog | None = None

    def call_once(
        self,
        key: str,
        fn: Callable[..., Any],
        *args: Any,
        reconcile: Reconcile | None = None,
        **kwargs: Any,
    ) -> Any:
        """``fn(*args, **kwargs)``, recorded under this node and ``key`` in a recorded run."""
        if self.log is None:
            if takes_key(fn):
                return unrecorded(self.node, key, fn, *args, **kwargs)
            return fn(*args, **kwargs)  # the cheap path: nothing to record, no key to give
        return self.log.once(self.node, key, fn, *args, reconcile=reconcile, **kwargs)

    async def acall_once(
        self,
        key: str,
        fn: Callable[..., Awaitable[Any]],
        *args: Any,
        reconcile: Reconcile | None = None,
        **kwargs: Any,
    ) -> Any:
        """The async form of ``call_once``."""
        if self.log is None:
            if takes_key(fn):
                return await unrecorded(self.node, key, fn, *args, **kwargs)
            return await fn(*args, **kwargs)
        return await self.log.aonce(self.node, key, fn, *args, reconcile=reconcile, **kwargs)
