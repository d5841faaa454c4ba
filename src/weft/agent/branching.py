"""Action groups as a WorkGraph: sequential accumulation (pattern 2) and parallel branches
in isolated agent copies (pattern 3); the README's "Agents" section says what each gives.

``next_actions = [[A], [B, C, D], [E]]`` becomes::

    A ──► B ──► branch agent ──┐
      ├─► C ──► branch agent ──┼─► Summarizer ──► E
      └─► D ──► branch agent ──┘

A branch (an agent named ``<agent>/<iteration>.<group>.<index>`` on a fork) runs the action,
then its own loop fed with its result. In a run with a ``run_id`` a recorded action or
branch is not run again and a summarized group is not even built (``weft.agent.resume``).
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from weft.agent.actors import PAUSE, failed, finish, run_actor, run_sync_actor
from weft.agent.context import IterationContext, LoopAgent
from weft.agent.resume import fork_of, once_extras
from weft.agent.types import (
    ActionGroups,
    AgentAction,
    AgentResult,
    AgentStateItem,
    AgentStates,
    action_record,
    from_plain_record,
    plain_results,
    to_plain_record,
)
from weft.errors import GraphError, NodeError
from weft.graph import ResultPassDownMode, WorkGraph, WorkGraphNode
from weft.graph.pause import Asking
from weft.store import FrozenDict, FrozenList, StepRecord, Store, freeze

_FIRST = ResultPassDownMode.ResultAsFirstArg
_NOTHING: Mapping[str, Any] = FrozenDict()


class Flow:
    """What flows along an action graph: the outcomes so far, each group's chained to the
    flow before it, and the last one."""

    __slots__ = ("before", "last")

    def __init__(self, before: Flow | None, last: Any) -> None:
        self.before = before
        self.last = last

    @property
    def previous_action_results(self) -> FrozenList:
        """The shared list so far, one item per outcome as plain data (``plain_results``),
        built when an actor asks for it."""
        outcomes = []
        flow: Flow | None = self
        while flow is not None:
            outcomes.append(plain_results(flow.last))
            flow = flow.before
        outcomes.reverse()
        return FrozenList(outcomes)

    def then(self, outcome: Any) -> Flow:
        """The flow after one more group: its outcome appended as one item."""
        return Flow(self, outcome)


@dataclass(frozen=True, slots=True)
class _Started:
    flow: Flow
    agent: LoopAgent
    action: AgentAction
    base: int = 0
    """The branch fork's sequence number when it was made (its writes come after)."""
    restored: StepRecord | None = None
    """The record of a branch that finished before the run was interrupted."""


@dataclass(frozen=True, slots=True)
class _Ended:
    flow: Flow
    agent: LoopAgent
    result: AgentResult
    record: StepRecord | None = None
    """The branch's record, in a run with a run id."""


async def run_action_groups(groups: ActionGroups, step: IterationContext) -> Any:
    """Run ``groups``; returns the last group's outcome (the feedback). A plain sequence
    runs the graph's node functions one after another: the engine would too, after
    building a graph."""
    start = Flow(None, step.action_results)
    for group in groups:
        if len(group) != 1:
            break
    else:
        flow = start
        for g, (action,) in enumerate(groups):
            out = _run_one(action, g, step, flow)
            flow = out if out.__class__ is Flow else await out
        return flow.last
    graph = build_action_graph(groups, step)
    try:
        done: Flow = await graph.arun(start)
    except NodeError as exc:
        cause = node_error_cause(exc, step.agent.name)
        if cause is None:
            raise
        raise cause from None
    return done.last


def node_error_cause(exc: NodeError, agent: str) -> Exception | None:
    """What to raise instead of ``exc`` out of agent ``agent``'s actions: the exception a
    node raised (noted with where), not the graph's wrapper of it; None if ``exc`` is the
    graph's own error, raised as it is."""
    cause = exc.__cause__
    if isinstance(cause, Exception) and not isinstance(cause, GraphError):
        cause.add_note(f"raised inside the actions of agent {agent!r}: {exc}")
        return cause
    return None


def build_action_graph(groups: ActionGroups, step: IterationContext) -> WorkGraph:
    """The WorkGraph of ``groups`` for one iteration of ``step.agent``."""
    agent = step.agent
    log = step.log
    starts: list[WorkGraphNode] = []
    tail: WorkGraphNode | None = None
    for g, group in enumerate(groups):
        done = None if log is None or len(group) == 1 else log.get(f"group/{g}")
        if done is not None:  # summarized before the run was interrupted
            outcome = from_plain_record(done.result)
            new_tail = WorkGraphNode(lambda flow, o=outcome: flow.then(o), _FIRST, id="Summarizer")
            heads = [new_tail]
        elif len(group) == 1:
            new_tail = WorkGraphNode(
                functools.partial(_run_one, group[0], g, step),
                _FIRST,
                id=f"Actioner:{group[0].type}",
            )
            heads = [new_tail]
        else:
            summary = WorkGraphNode(_summarizer(step, g), _only_result, id="Summarizer")
            heads = []
            for k, action in enumerate(group):
                name = f"{agent.name}/{step.iteration}.{g}.{k}"
                head = WorkGraphNode(
                    _branch_start(action, g, k, name, step), _FIRST, id=f"Actioner:{action.type}"
                )
                follow = WorkGraphNode(_branch_loop(step, g, k), _FIRST, id=f"Agent:{name}")
                head.add_next(follow).add_next(summary)
                heads.append(head)
            new_tail = summary
        if tail is None:
            starts.extend(heads)
        else:
            for head in heads:
                tail.add_next(head)
        tail = new_tail
    return WorkGraph(start_nodes=starts)


def _only_result(result: Any, *_args: Any, **_kwargs: Any) -> tuple[tuple[Any], dict[str, Any]]:
    """The summarizer's pass-down: its flow is the next node's only argument (a fan-in node
    was called with every branch's result, which must not travel further)."""
    return (result,), {}


def _offered(
    agent: LoopAgent, action: AgentAction, flow: Flow, step: IterationContext, unit: str
) -> Mapping[str, Any]:
    bound = agent.actors.get(action.type)
    if step.calls is None and (bound is None or not bound.extras):
        return _NOTHING  # an actor that takes no extras, in a run with no run id
    offered: dict[str, Any] = {
        "target": action.target,
        "action": action,
        "previous_action_results": flow.previous_action_results,
        "attachments": step.attachments,
        "store": agent.store,
    }
    if bound is not None:
        once_extras(offered, bound.extras, step.calls, unit)
    if step.calls is not None:  # a recorded run: the actor may ask a person
        offered[PAUSE] = Asking(step.calls, unit, action.type)
    return offered


def _run_one(action: AgentAction, g: int, step: IterationContext, flow: Flow) -> Any:
    """A single action, run on the agent itself and recorded (or restored, on resume): the
    flow after it, or an awaitable of it (an async actor)."""
    agent = step.agent
    log = step.log
    if log is not None:
        recorded = log.get(f"action/{g}")
        if recorded is not None:
            return flow.then(AgentAction.from_dict(recorded.result["action"]))
    bound = agent.actors.get(action.type)
    if bound is not None and not bound.is_async:
        offered = (
            _NOTHING  # _offered's common case: an actor that takes no extras, no run id
            if step.calls is None and not bound.extras
            else _offered(agent, action, flow, step, f"action/{g}")
        )
        out = run_sync_actor(agent.actors, action, offered)
        if out.__class__ is AgentAction or isinstance(out, AgentAction):
            return _one_done(flow, out, g, step)
        return _late(out, action, lambda executed: _one_done(flow, executed, g, step))
    return _run_one_async(action, g, step, flow, f"action/{g}")


async def _run_one_async(
    action: AgentAction, g: int, step: IterationContext, flow: Flow, unit: str
) -> Flow:
    offered = _offered(step.agent, action, flow, step, unit)
    return _one_done(flow, await run_actor(step.agent.actors, action, offered), g, step)


def _one_done(flow: Flow, executed: AgentAction, g: int, step: IterationContext) -> Flow:
    """Record the executed single action ``g`` of ``step``; the flow after it."""
    agent = step.agent
    log = step.log
    if log is None:
        agent.record_action(agent.name, step.iteration, g, 0, executed)
    else:  # its record holds its actions record: one value, frozen once
        entry = freeze(action_record(agent.name, step.iteration, g, 0, executed))
        with agent.store.transaction() as tx:
            tx.write("state", agent.actions_path, entry, source=agent.name)
            log.record(
                f"action/{g}", StepRecord(kind="action", label=executed.type, result=entry), into=tx
            )
    return flow.then(executed)


def _branch_start(
    action: AgentAction, g: int, k: int, name: str, step: IterationContext
) -> Callable[[Flow], Any]:
    """The first node of a branch: the action, run by a copy of the agent on a fork."""
    parent = step.agent
    bound = parent.actors.get(action.type)
    unit = f"branch/{g}.{k}"
    log = step.log
    record = None if log is None else log.get(unit)

    def branch(store: Store) -> LoopAgent:
        return parent.copy(name=name, store=store, clear_states=parent.branching_agent_start_as_new)

    if log is not None and record is not None:
        merged = log.get(f"group/{g}/merge") is not None

        def restore(flow: Flow) -> _Started:
            # merged: its writes are in the store; else they are applied from its record
            store = parent.store if merged else fork_of(parent.store, name, record)
            executed = AgentAction.from_dict(record.result["action"])
            return _Started(flow, branch(store), executed, restored=record)

        return restore

    def done(flow: Flow, copy: LoopAgent, executed: AgentAction, base: int) -> _Started:
        copy.record_action(parent.name, step.iteration, g, k, executed)
        return _Started(flow, copy, executed, base)

    if bound is not None and not bound.is_async:

        def start_sync(flow: Flow) -> _Started | Awaitable[_Started]:
            store = parent.store.fork(name=name)
            base = store.last_seq
            copy = branch(store)
            offered = _offered(copy, action, flow, step, unit)
            out = run_sync_actor(copy.actors, action, offered)
            if isinstance(out, AgentAction):
                return done(flow, copy, out, base)
            return _late(out, action, lambda executed: done(flow, copy, executed, base))

        return start_sync

    async def start_async(flow: Flow) -> _Started:
        store = parent.store.fork(name=name)
        base = store.last_seq
        copy = branch(store)
        offered = _offered(copy, action, flow, step, unit)
        executed = await run_actor(copy.actors, action, offered)
        return done(flow, copy, executed, base)

    return start_async


def _branch_loop(step: IterationContext, g: int, k: int) -> Callable[[_Started], Awaitable[_Ended]]:
    """The second node of a branch: the copy's own loop, fed with the action's result."""
    unit = f"branch/{g}.{k}"

    async def follow(started: _Started) -> _Ended:
        copy = started.agent
        restored = started.restored
        if restored is not None:
            return _Ended(started.flow, copy, _restored_result(copy, restored), restored)
        log = step.log
        result = await copy.arun_unit(step, unit, action_results=started.action)
        if log is None:
            return _Ended(started.flow, copy, result)
        record = StepRecord(
            kind="branch",
            label=copy.name,
            result={
                "action": started.action.to_dict(),
                "action_results": to_plain_record(result.action_results),
                "stop_reason": result.stop_reason,
            },
            changes=tuple(copy.store.events(started.base)),
            committed=False,
        )
        return _Ended(started.flow, copy, result, log.record(unit, record))

    return follow


def _restored_result(agent: LoopAgent, record: StepRecord) -> AgentResult:
    """A finished branch's ``AgentResult``, from its record and its own stored states."""
    stored = agent.store.value("state", agent.states_path, ())
    items = AgentStates(map(AgentStateItem.from_dict, stored))
    return AgentResult(
        agent=agent.name,
        response=items[-1].response if items else None,
        action_results=from_plain_record(record.result["action_results"]),
        states=items,
        stop_reason=record.result["stop_reason"],
    )


def _summarizer(step: IterationContext, g: int) -> Callable[..., Awaitable[Flow]]:
    """The join of a group: merge the forks in action order, then summarize."""
    agent = step.agent
    log = step.log

    async def summarize(*ended: _Ended) -> Flow:
        forks = [e.agent.store for e in ended]
        if log is None:
            agent.store.merge(forks)
        elif log.get(f"group/{g}/merge") is None:
            with agent.store.transaction() as tx:
                tx.merge(forks)
                for k, e in enumerate(ended):
                    assert e.record is not None
                    final = replace(e.record, changes=None, committed=True)
                    log.record(f"branch/{g}.{k}", final, into=tx)
                log.record(f"group/{g}/merge", StepRecord(kind="merge"), into=tx)
        merged = agent.summarizer(*(e.result for e in ended))
        if inspect.isawaitable(merged):
            merged = await merged
        if log is not None:
            log.record(f"group/{g}", StepRecord(kind="group", result=to_plain_record(merged)))
        return ended[0].flow.then(merged)

    return summarize


async def _late(awaitable: Any, action: AgentAction, then: Callable[[AgentAction], Any]) -> Any:
    """A sync actor that returned an awaitable: finish it, then carry on."""
    try:
        value = await awaitable
    except Exception as exc:
        return then(failed(action, exc))
    return then(finish(action, value))
