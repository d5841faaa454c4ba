"""Offloading: a run's node calls (and tool calls) sent to another executor, such as Ray.

The engine schedules, records and merges on the caller's side (the *driver*); only the
call of a node's function moves. ``graph.run(..., executor=X)`` makes ``X`` run every
node that does not take ``ctx``: the engine gets a copy of the schedule in which each such
node is an async node that awaits ``X.call(RemoteCall(...))``, so retries, timeouts,
records, reducers and the deterministic merge order are the engine's own, unchanged.

- A plain node's arguments go as they are; the executor encodes them (weft's codec).
- A state node's read-only view is replaced by a ``StateSnapshot``: its ``state`` and
  ``input`` entries as plain values, read through the same ``view[...]``, ``get``, ``in``
  and ``read`` calls. It returns its delta as usual; the driver merges it.
- A node that takes ``ctx`` works on the run's store (its fork, its keyed calls): it runs
  on the driver. Its tool calls may still move (below).

``with offload_to(X):`` sends to ``X`` the tool calls that plans of tool calls
(``weft.calls``) and agents' tool loops (``ToolAgent``, ``weft.plan``'s executors) make
inside it, and the actions of agents (``weft.agent``, branches included) whose actors take
no extras; their arguments are resolved, and their results written and recorded, on the
driver.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, replace
from typing import Any, Protocol

from weft.errors import GraphError
from weft.graph.build import Schedule
from weft.graph.state import StateView
from weft.store import MISSING

KINDS = ("state", "input")
"""The kinds a ``StateSnapshot`` carries to a worker."""


@dataclass(frozen=True, slots=True)
class RemoteCall:
    """One call to run elsewhere: ``fn(*args, **kwargs)``, named ``label`` in errors.

    ``snapshot`` is set for a state node: the executor passes it (rebuilt as a
    ``StateSnapshot`` on the worker) as the first argument."""

    label: str
    fn: Callable[..., Any]
    args: tuple[Any, ...]
    kwargs: Mapping[str, Any]
    snapshot: Mapping[str, Mapping[str, Any]] | None = None


class NodeExecutor(Protocol):
    """Runs calls somewhere else and hands back their results (``weft.distributed.RayExecutor``)."""

    async def call(self, call: RemoteCall) -> Any:
        """The value of ``call.fn(...)``; what it raised, raised again."""
        ...


_CURRENT: contextvars.ContextVar[NodeExecutor | None] = contextvars.ContextVar(
    "weft_offload", default=None
)


def current_executor() -> NodeExecutor | None:
    """The executor ``offload_to`` set for calls here, or None (they run in-process)."""
    return _CURRENT.get()


@contextlib.contextmanager
def offload_to(executor: NodeExecutor) -> Iterator[NodeExecutor]:
    """Send the tool calls of plans and agents, and agents' plain actions, run inside
    this block to ``executor``."""
    check_executor(executor)
    token = _CURRENT.set(executor)
    try:
        yield executor
    finally:
        _CURRENT.reset(token)


def check_executor(executor: Any) -> None:
    call = getattr(executor, "call", None)
    if not callable(call):
        raise GraphError(
            f"executor={executor!r}: expected an object with an async call(RemoteCall) "
            "method, such as weft.distributed.RayExecutor()"
        )


class StateSnapshot:
    """A state node's view on a worker: the values of kinds ``state`` and ``input``
    as the node's view had them, read like a ``StateView``.

    >>> view = StateSnapshot({"state": {"topic": "tides"}, "input": {"n": 2}})
    >>> view["topic"], view.get("missing", "-"), "topic" in view, view.read("input", "n")
    ('tides', '-', True, 2)
    """

    __slots__ = ("_kinds",)

    def __init__(self, kinds: Mapping[str, Mapping[str, Any]]) -> None:
        self._kinds = kinds

    def __getitem__(self, path: str) -> Any:
        return self.read("state", path)

    def get(self, path: str, default: Any = None) -> Any:
        return self.read("state", path, default)

    def __contains__(self, path: object) -> bool:
        return isinstance(path, str) and path in self._kinds.get("state", {})

    def read(self, kind: str, path: str, default: Any = MISSING) -> Any:
        if kind not in KINDS:
            raise GraphError(
                f"a state node on a remote worker reads kinds {', '.join(KINDS)} only, not "
                f"{kind!r}; pass what it needs as an argument, or run it in-process"
            )
        values = self._kinds.get(kind, {})
        if path in values:
            return values[path]
        if default is MISSING:
            raise GraphError(
                f"{kind}:{path} is not in this node's view; it has {kind}: "
                f"{', '.join(sorted(values)) or 'nothing'}"
            )
        return default

    def to_dict(self) -> dict[str, Any]:
        return dict(sorted(self._kinds.get("state", {}).items()))

    def __iter__(self) -> Iterator[str]:
        return iter(self.to_dict())

    def __repr__(self) -> str:
        return f"StateSnapshot({self.to_dict()!r})"


def snapshot_of(view: StateView) -> dict[str, dict[str, Any]]:
    """The ``state`` and ``input`` entries a state node's view sees: ``{kind: {path: value}}``."""
    store = view._store
    return {
        kind: {e.path: e.value for e in store.entries(kind=kind, key_prefix=f"{kind}:")}
        for kind in KINDS
    }


def offloaded(schedule: Schedule, executor: NodeExecutor) -> Schedule:
    """A copy of ``schedule`` whose nodes that take no ``ctx`` call ``executor``."""
    check_executor(executor)
    fns = list(schedule.fns)
    asyncs = list(schedule.asyncs)
    inline = list(schedule.inline)
    for i, fn in enumerate(schedule.fns):
        if schedule.ctxs[i]:
            continue  # it works on the run's store: in-process
        fns[i] = _remote(executor, schedule.keys[i], fn, schedule.states[i])
        asyncs[i] = True
        inline[i] = False
    return replace(
        schedule,
        fns=tuple(fns),
        asyncs=tuple(asyncs),
        inline=tuple(inline),
        loopless=False,
        memo={},
    )


def _remote(
    executor: NodeExecutor, label: str, fn: Callable[..., Any], state: bool
) -> Callable[..., Any]:
    if state:

        async def call_state(view: StateView, *args: Any, **kwargs: Any) -> Any:
            snapshot = snapshot_of(view)
            return await executor.call(RemoteCall(label, fn, args, kwargs, snapshot))

        return call_state

    async def call(*args: Any, **kwargs: Any) -> Any:
        return await executor.call(RemoteCall(label, fn, args, kwargs))

    return call
