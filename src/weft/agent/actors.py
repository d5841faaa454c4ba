"""Actors: the functions that carry out actions, found by action type, sync or async.

An agent's ``actor`` is a mapping ``{action type: function}``, whose functions are called
``search(**action.args, **extras)``, or one function for every type, called
``actor(action, **extras)``. ``extras`` (``EXTRAS``; ``store`` is the acting agent's own,
a branch's fork) are passed only to a function that declares a parameter of that very
name, never through ``**kwargs`` and never over an argument the reasoner gave::

    def charge(order, amount, call_once):
        return call_once("charge", payments.charge, order, amount)

A crash after ``fn`` took effect but before its record was written calls it again: pass
the key on to a service that accepts idempotency keys. In a run with a run id an actor may
ask a person with ``weft.graph.interrupt(question)``: the agent's run returns ``Paused``.

Inside ``weft.graph.offload_to(executor)`` an actor that takes no extras runs on the
executor (a Ray worker, with ``weft.distributed``): its arguments (the action's, or the
action itself as plain data) go and its result comes back through weft's codec, and the
executed action is built and recorded on the caller's side as in-process. An actor that
takes extras works on the agent's store or context: it stays in-process.
"""

from __future__ import annotations

import functools
import inspect
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from weft.agent.types import AgentAction
from weft.calls.watch import acall_tool, call_tool
from weft.errors import AgentBuildError, PauseError, ValueTypeError
from weft.graph.offload import NodeExecutor, RemoteCall, current_executor
from weft.graph.pause import pausing

logger: Final = logging.getLogger("weft.agent")

EXTRAS: Final = frozenset(
    {
        "target",
        "action",
        "previous_action_results",
        "previous_agent_results",
        "attachments",
        "store",
        "call_once",
        "acall_once",
    }
)

_PLAIN: Final = frozenset({str, int, float, bool, type(None), dict, list})
"""Result types that are never awaitable (checked before asking ``inspect``)."""

PAUSE: Final = "weft.pause"
"""The key of ``offered`` holding the action's pause points (``weft.graph.pause``), in a run
with a run id; never an extra (no parameter can have that name)."""

Actor = Callable[..., Any]
ActorSpec = Mapping[str, Actor] | Actor | None


@dataclass(frozen=True, slots=True)
class BoundActor:
    """One actor function and what it was found to accept."""

    fn: Actor
    is_async: bool
    extras: frozenset[str]
    takes_action: bool
    """Called as ``fn(action, ...)`` (a single actor) rather than ``fn(**args, ...)``."""
    remote: Actor | None = field(init=False, repr=False, compare=False)
    """What an executor calls: ``fn``, or for a single actor ``fn`` given the action
    rebuilt from plain data (made once, so an executor ships it once); None for an
    actor that takes extras (a single actor's ``action`` parameter is not one)."""

    def __post_init__(self) -> None:
        remote: Actor | None = None
        if self.takes_action:
            if self.extras <= {"action"}:
                remote = functools.partial(_act_on, self.fn)
        elif not self.extras:
            remote = self.fn
        object.__setattr__(self, "remote", remote)

    def call(self, action: AgentAction, offered: Mapping[str, Any]) -> Any:
        """Call the actor (returns the result, or an awaitable for an async actor)."""
        if not self.extras:
            return self.fn(action) if self.takes_action else self.fn(**action.args)
        extras = {name: offered[name] for name in self.extras if name in offered}
        if self.takes_action:
            extras.pop("action", None)
            return self.fn(action, **extras)
        if extras and action.args:
            for name in action.args:
                extras.pop(name, None)
        return self.fn(**action.args, **extras)


def _act_on(fn: Actor, action: Mapping[str, Any]) -> Any:
    """On an executor's worker: a single actor called with its action, rebuilt."""
    return fn(AgentAction.from_dict(action))


def offloaded(bound: BoundActor, action: AgentAction) -> tuple[NodeExecutor, RemoteCall] | None:
    """The executor and call that run ``action`` elsewhere, inside ``offload_to``; None
    in-process, or for an actor that takes extras (it works on the agent's side)."""
    executor = current_executor()
    if executor is None or bound.remote is None:
        return None
    if bound.takes_action:
        call = RemoteCall(action.type, bound.remote, (action.to_dict(),), {})
    else:
        call = RemoteCall(action.type, bound.remote, (), dict(action.args))
    return executor, call


async def _run_offloaded(executor: NodeExecutor, call: RemoteCall, action: AgentAction) -> Any:
    try:
        return await acall_tool(action.type, action.id, executor.call, call)
    except PauseError:  # interrupt() on the worker, where no pause can be recorded
        raise PauseError(
            f"the actor for {action.type} called interrupt() on the executor of offload_to, "
            "where no pause can be recorded; an actor that asks a person runs in-process: "
            "give it an extra (such as a `store` parameter), or run the agent outside "
            "offload_to"
        ) from None


def bind_actor(fn: Any, *, what: str, takes_action: bool) -> BoundActor:
    """Inspect ``fn`` once; an uncallable actor is an ``AgentBuildError`` naming ``what``."""
    if not callable(fn):
        raise AgentBuildError(
            f"{what} is {fn!r}, which is not callable; an actor is a function (sync or async) "
            "that carries out the action"
        )
    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):  # builtins: cannot tell, offer nothing
        params = {}  # type: ignore[assignment]
    extras = frozenset(
        name
        for name, p in params.items()
        if name in EXTRAS and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)
    )
    call = getattr(type(fn), "__call__", None)  # noqa: B004
    is_async = inspect.iscoroutinefunction(fn) or (
        call is not None and inspect.iscoroutinefunction(call)
    )
    return BoundActor(fn, is_async, extras, takes_action)


class ActorTable:
    """The agent's actors by action type (or one actor for every type)."""

    __slots__ = ("_by_type", "_single", "action_types")

    def __init__(self, actor: ActorSpec, action_types: Any = None) -> None:
        self._by_type: dict[str, BoundActor] = {}
        self._single: BoundActor | None = None
        if isinstance(actor, Mapping):
            for action_type, fn in actor.items():
                if not isinstance(action_type, str) or not action_type:
                    raise AgentBuildError(
                        f"actor keys are action types (non-empty strings); got {action_type!r}"
                    )
                self._by_type[action_type] = bind_actor(
                    fn, what=f"the actor for {action_type!r}", takes_action=False
                )
        elif actor is not None:
            self._single = bind_actor(actor, what="actor", takes_action=True)
        types: frozenset[str] | None
        if action_types is not None:
            if isinstance(action_types, str) or not all(
                isinstance(t, str) and t for t in action_types
            ):
                raise AgentBuildError(
                    f"action_types={action_types!r}; expected a collection of action type "
                    "names such as ['Search', 'Fetch']"
                )
            types = frozenset(action_types)
            missing = sorted(types - set(self._by_type)) if self._by_type else []
            if missing:
                raise AgentBuildError(
                    f"action_types names {', '.join(missing)}, which the actor mapping does "
                    f"not hold (it holds {', '.join(sorted(self._by_type))}); add an actor "
                    "for each, or drop them from action_types"
                )
        elif self._single is not None:
            types = None  # one actor for every type: any type is runnable
        else:
            types = frozenset(self._by_type)
        self.action_types: frozenset[str] | None = types
        """The runnable action types; None when one actor takes every type."""

    def get(self, action_type: str) -> BoundActor | None:
        return self._by_type.get(action_type, self._single)


def error_result(action: AgentAction, message: str) -> AgentAction:
    """``action`` executed with the error result the reasoner sees."""
    return action.with_result({"error": message, "type": action.type}, error=message)


def finish(action: AgentAction, value: Any) -> AgentAction:
    """``action`` executed with ``value``, or an error result if the store cannot keep it."""
    try:
        return action.with_result(value)
    except ValueTypeError as exc:
        return error_result(
            action,
            f"the actor for {action.type} returned a value that cannot be stored ({exc}); "
            "an actor returns JSON data: dicts, lists, text, numbers, booleans or None",
        )


def failed(action: AgentAction, exc: Exception) -> AgentAction:
    logger.warning("the actor for %s raised; its result is an error result", action.type)
    return error_result(action, f"{type(exc).__name__}: {exc}")


def run_sync_actor(
    table: ActorTable, action: AgentAction, offered: Mapping[str, Any]
) -> AgentAction | Any:
    """Run a sync actor: the executed action, or an awaitable of its value (one it
    returned after all, or its call on the executor of ``offload_to``)."""
    bound = table.get(action.type)
    if bound is None:
        return no_actor(table, action)
    remote = offloaded(bound, action)
    if remote is not None:  # the caller awaits it, and finishes the action from its value
        return _run_offloaded(*remote, action)
    point = offered.get(PAUSE)
    try:
        if point is None:  # no recorded run: nothing to pause, no context to set
            value = call_tool(action.type, action.id, bound.call, action, offered)
        else:
            with pausing(point):
                value = call_tool(action.type, action.id, bound.call, action, offered)
    except Exception as exc:
        return failed(action, exc)
    if value.__class__ in _PLAIN or not inspect.isawaitable(value):
        return finish(action, value)
    return value


async def run_actor(
    table: ActorTable, action: AgentAction, offered: Mapping[str, Any]
) -> AgentAction:
    """Run the actor of ``action`` (sync or async); always returns the executed action."""
    bound = table.get(action.type)
    if bound is None:
        return no_actor(table, action)
    remote = offloaded(bound, action)
    try:
        if remote is not None:
            value = await _run_offloaded(*remote, action)
        else:
            with pausing(offered.get(PAUSE)):
                value = await acall_tool(action.type, action.id, bound.call, action, offered)
    except Exception as exc:
        return failed(action, exc)
    return finish(action, value)


def no_actor(table: ActorTable, action: AgentAction) -> AgentAction:
    known = ", ".join(sorted(table.action_types or ())) or "none"
    return error_result(
        action,
        f"no actor runs the action type {action.type} (the action types are: {known})",
    )
