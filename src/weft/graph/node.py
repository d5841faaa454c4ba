"""A WorkGraph node: a callable value, how its result flows on, and its edges.

A node's ``id`` is a label and may repeat (an agent gives every action node the id
``$class-Actioner``); the graph gives each node a unique key (label and position) when it
is built. ``next`` and ``previous`` list successors and predecessors in the order the
``add_next`` calls were made: that order is the *edge order* that fan-in follows.
"""

from __future__ import annotations

import functools
import inspect
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar

from weft.errors import GraphBuildError
from weft.graph.modes import PassDown, ResultPassDownMode, mode_code


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """Retry a node that raises one of ``retry_on`` (a timeout counts as ``TimeoutError``).

    ``attempts`` counts the first call. Before attempt ``k`` (``k >= 2``) the engine waits
    ``min(max_backoff, backoff * multiplier ** (k - 2))`` seconds. ``WorkGraphNode(retry=3)``
    is short for ``RetryPolicy(attempts=3)``.
    """

    attempts: int = 3
    backoff: float = 0.0
    multiplier: float = 2.0
    max_backoff: float = 60.0
    retry_on: tuple[type[BaseException], ...] = (Exception,)

    def __post_init__(self) -> None:
        attempts = self.attempts
        if not isinstance(attempts, int) or isinstance(attempts, bool) or attempts < 1:
            raise GraphBuildError(f"RetryPolicy.attempts must be an int >= 1, got {attempts!r}")
        numbers = (self.backoff, self.multiplier, self.max_backoff)
        if not all(isinstance(n, (int, float)) and not isinstance(n, bool) for n in numbers) or (
            not (self.backoff >= 0 and self.multiplier >= 1 and self.max_backoff >= 0)  # NaN too
        ):
            raise GraphBuildError(
                "RetryPolicy needs numbers backoff >= 0, multiplier >= 1 and max_backoff >= 0, "
                f"got backoff={self.backoff!r}, "
                f"multiplier={self.multiplier!r}, max_backoff={self.max_backoff!r}"
            )
        retry_on = self.retry_on
        if (
            not isinstance(retry_on, tuple)
            or not retry_on
            or not all(isinstance(cls, type) and issubclass(cls, BaseException) for cls in retry_on)
        ):
            raise GraphBuildError(
                "RetryPolicy.retry_on must be a non-empty tuple of exception classes, such "
                f"as (TimeoutError,), got {retry_on!r}"
            )

    def delay(self, failed: int) -> float:
        """Seconds to wait after ``failed`` failed attempts, before the next one."""
        if self.backoff == 0:
            return 0.0
        return float(min(self.max_backoff, self.backoff * self.multiplier ** (failed - 1)))


class WorkGraphNode:
    """One step of a WorkGraph: ``value(*args, **kwargs)`` and where its result goes.

    ``value`` is a sync or async callable. ``result_pass_down_mode`` says what the
    successors receive (see ``weft.graph.modes``). ``retry`` (a ``RetryPolicy`` or a number
    of attempts) and ``timeout`` (seconds per attempt) guard the call. With ``state=True``
    the node is a *state node*: it is called as ``value(view, *args, **kwargs)`` with a
    read-only ``StateView`` of the store, and returns a delta ``{path: value}`` that the
    engine writes to kind ``"state"`` through the store's reducers.

    >>> a, b = WorkGraphNode(str.upper), WorkGraphNode(len)
    >>> a.add_next(b) is b, a.next == [b], b.previous == [a]
    (True, True, True)
    """

    __slots__ = (
        "__weakref__",
        "id",
        "next",
        "previous",
        "result_pass_down_mode",
        "retry",
        "state",
        "timeout",
        "value",
    )

    wiring: ClassVar[int] = 0
    """Counts ``add_next`` calls anywhere, so a built graph sees that nodes were rewired."""

    def __init__(
        self,
        value: Any,
        result_pass_down_mode: PassDown = ResultPassDownMode.NoPassDown,
        *,
        id: str | None = None,
        retry: RetryPolicy | int | None = None,
        timeout: float | None = None,
        state: bool = False,
    ) -> None:
        self.value = value
        self.id: str = id if id is not None else label_of(value)
        mode_code(result_pass_down_mode, node=self.id)  # refuse a wrong mode now
        self.result_pass_down_mode = result_pass_down_mode
        if isinstance(retry, int) and not isinstance(retry, bool):
            retry = RetryPolicy(attempts=retry)
        if retry is not None and not isinstance(retry, RetryPolicy):
            raise GraphBuildError(
                f"node {self.id!r}: retry={retry!r}; expected a RetryPolicy or a number of attempts"
            )
        self.retry: RetryPolicy | None = retry
        if timeout is not None and (
            isinstance(timeout, bool)
            or not isinstance(timeout, (int, float))
            or not math.isfinite(timeout)
            or timeout <= 0
        ):
            raise GraphBuildError(
                f"node {self.id!r}: timeout={timeout!r}; expected a positive number of seconds "
                "or None"
            )
        self.timeout: float | None = None if timeout is None else float(timeout)
        self.state = bool(state)
        self.next: list[WorkGraphNode] = []
        self.previous: list[WorkGraphNode] = []

    def add_next(self, node: WorkGraphNode) -> WorkGraphNode:
        """Make ``node`` a successor of this one and return it (so calls can chain)."""
        if not isinstance(node, WorkGraphNode):
            raise GraphBuildError(
                f"node {self.id!r}: add_next takes a WorkGraphNode, got {type(node).__name__}; "
                "wrap the callable: add_next(WorkGraphNode(fn))"
            )
        if linked(self, node):
            raise GraphBuildError(
                f"node {self.id!r} already leads to {node.id!r}; an edge is added once (a "
                "second edge would hand the same result over twice)"
            )
        self.next.append(node)
        node.previous.append(self)
        WorkGraphNode.wiring += 1
        return node

    def __repr__(self) -> str:
        return f"WorkGraphNode({self.id!r})"


def linked(a: WorkGraphNode, b: WorkGraphNode) -> bool:
    """Whether ``a`` already leads to ``b`` (nodes compare by identity). Looks through the
    shorter of ``a.next`` and ``b.previous``, so wiring a fan-out or a fan-in of n nodes
    costs O(n), not O(n^2)."""
    if len(b.previous) < len(a.next):
        return a in b.previous
    return b in a.next


def label_of(value: Any) -> str:
    """A readable label for a node value: its name, or the name of its type."""
    if isinstance(value, str):
        return value
    while isinstance(value, functools.partial):
        value = value.func
    name = getattr(value, "__name__", None)
    if isinstance(name, str):
        return name
    return type(value).__name__


def is_async(value: Any) -> bool:
    """Whether calling ``value`` returns a coroutine (``async def``, also behind partials)."""
    if inspect.iscoroutinefunction(value):
        return True
    call: Callable[..., Any] | None = getattr(type(value), "__call__", None)  # noqa: B004
    return call is not None and inspect.iscoroutinefunction(call)
