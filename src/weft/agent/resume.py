"""Resuming an agent run: the agent's units in the one run model (``weft.store.RunLog``).

``agent.run(user_input, run_id="job-1")`` records the run in the agent's store with the
typed records of ``weft.store.records`` (kind ``step``)::

    job-1                           RunRecord(kind="agent", units=(<agent name>,)),
                                    completed with the result's ``output``
    job-1/iter/<n>/reply            "reply": {"reasoner_input", "raw_response"}
    job-1/iter/<n>/action/<g>       "action": the actions record of group g's single action
    job-1/iter/<n>/branch/<g>.<k>   "branch": a finished branch of parallel group g, its
                                    fork's writes in ``changes`` until the group is merged
    job-1/iter/<n>/group/<g>/merge  "merge": the merge of the group's forks
    job-1/iter/<n>/group/<g>        "group": the summarizer's value
    job-1/iter/<n>/problem/<i>      "problem": a solved problem of a plan, its fork's writes
                                    in ``changes`` until the plan is merged
    job-1/iter/<n>/plan             "plan": the plan's output, with its merge
    job-1/iter/<n>                  "iteration": {"state", "ran"}, with the states append
    <unit>/calls/<key>              "call": a keyed call of a unit's action (or solver)

``n`` is the agent's iteration number. Each record is committed with the writes it stands
for (a reply with the ``current`` write, an action with its actions record, a merge with
its branches' final records). A branch (and an ``Agent`` solving a problem) runs its own
loop with the same records under its unit, in its fork; keyed calls go to the run's store.

What a resume runs again, and what not, is the README's "Resume" paragraph ("Agents"
section). Beyond it: a run that ended returns its result and calls nothing, and work that
``create_next_actions`` returns as a callable of your own runs again whole.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Awaitable, Callable
from typing import Any, Final

from weft.agent.context import LoopAgent, next_iteration
from weft.agent.types import AgentResult
from weft.errors import AgentError
from weft.store import RunLog, StepRecord, Store
from weft.store.runlog import unrecorded

ONCE: Final = frozenset({"call_once", "acall_once"})


class AgentRun:
    """The records of one agent loop in a run with a run id: ``log`` in the agent's store,
    ``calls`` (for keyed calls) in the run's; the two differ in a branch, on a fork."""

    __slots__ = ("agent", "calls", "done", "first", "log", "resuming")

    def __init__(self, agent: LoopAgent, log: RunLog, calls: RunLog) -> None:
        self.agent = agent
        self.log = log
        self.calls = calls
        self.first = next_iteration(agent)
        self.resuming = False
        self.done: bool | None = None
        """Whether the run had ended (None: not a run of its own, but a branch's loop)."""

    @classmethod
    def begin(cls, agent: LoopAgent, run_id: str) -> AgentRun:
        """The run ``run_id`` of ``agent`` in its store: begun now, or found to resume."""
        log = RunLog(agent.store, run_id)
        fresh = log.run() is None
        known = log.begin("agent", (agent.name,), error=AgentError)
        run = cls(agent, log, log)
        run.done = known.status == "completed"
        if not fresh:
            run.resuming = True
            numbers = [int(u.split("/", 2)[1]) for u in log.recorded() if _iteration(u)]
            run.first = min(numbers, default=run.first)
        return run

    @classmethod
    def inner(cls, agent: LoopAgent, calls: RunLog, unit: str) -> AgentRun:
        """The loop of a branch or solver ``agent`` under ``unit``, recorded in its fork."""
        calls = calls.scope(unit)
        scope = calls.path("").partition("/")[2].rstrip("/")  # the same units, in the fork
        return cls(agent, RunLog(agent.store, calls.run_id, scope=scope), calls)

    def finished(self, n: int) -> StepRecord | None:
        """The record of iteration ``n`` if it finished before the run was interrupted."""
        return self.log.get(f"iter/{n}") if self.resuming else None

    def interrupted(self, n: int) -> tuple[str, str] | None:
        """Iteration ``n`` is the first unfinished one: its recorded ``(reasoner input, raw
        reply)``, if any. Refuses to go on if the agent ran other iterations meanwhile."""
        if not self.resuming:
            return None
        self.resuming = False
        reply = self.log.get(f"iter/{n}/reply")
        at = next_iteration(self.agent)
        if at != n + (reply is not None):
            raise AgentError(
                f"run {self.log.run_id!r} of agent {self.agent.name!r} stopped before "
                f"iteration {n}, but the agent's store has moved on to iteration {at}: another "
                "run of this agent used the store since. Resume an interrupted run before "
                "running the agent again, or start over with a new run_id"
            )
        if reply is None:
            return None
        return reply.result["reasoner_input"], reply.result["raw_response"]

    def at(self, n: int) -> tuple[RunLog, RunLog]:
        """The logs of iteration ``n``'s work: its units, and its keyed calls."""
        unit = f"iter/{n}"
        log = self.log.scope(unit)
        return log, log if self.calls is self.log else self.calls.scope(unit)

    def record_reply(self, n: int, prompt: str, raw: str, current: Any) -> None:
        """The reasoner's reply of iteration ``n``, with the ``current`` write."""
        agent = self.agent
        with agent.store.transaction() as tx:
            tx.write("state", agent.current_path, current, source=agent.name)
            reply = {"reasoner_input": prompt, "raw_response": raw}
            self.log.record(f"iter/{n}/reply", StepRecord(kind="reply", result=reply), into=tx)

    def record_iteration(self, n: int, state: Any, ran: bool, started: float) -> None:
        """Iteration ``n`` finished: its state item appended, with its record."""
        agent = self.agent
        record = StepRecord(
            kind="iteration",
            label=agent.name,
            result={"state": state, "ran": ran},
            started_at=started,
        )
        with agent.store.transaction() as tx:
            tx.write("state", agent.states_path, state, source=agent.name)
            self.log.record(f"iter/{n}", record, into=tx)

    def complete(self, result: AgentResult) -> None:
        """The run ended: mark it completed with its output (a run of its own only)."""
        if self.done is False:
            self.log.complete(result.output)


def _iteration(unit: str) -> bool:
    head, _, rest = unit.partition("/")
    return head == "iter" and rest.partition("/")[0].isdigit()


def once_extras(
    offered: dict[str, Any], wanted: frozenset[str], calls: RunLog | None, unit: str
) -> None:
    """Add the keyed-call extras to ``offered`` when the actor declares them: recorded under
    ``unit`` of ``calls`` (``RunLog.once``), or, without a run id, plain calls."""
    if wanted.isdisjoint(ONCE):
        return
    if calls is None:
        offered["call_once"] = _call
        offered["acall_once"] = _acall
    else:
        offered["call_once"] = functools.partial(calls.once, unit)
        offered["acall_once"] = functools.partial(calls.aonce, unit)


def _call(
    key: str, fn: Callable[..., Any], *args: Any, reconcile: Any = None, **kwargs: Any
) -> Any:
    _check_key(key)  # nothing is recorded, so there is nothing for ``reconcile`` to settle
    result = unrecorded("", key, fn, *args, **kwargs)
    if inspect.isawaitable(result):
        if inspect.iscoroutine(result):
            result.close()
        raise AgentError(
            f"call_once({key!r}, {getattr(fn, '__name__', fn)!r}) got an awaitable; for an "
            "async function take the acall_once extra and await it"
        )
    return result


async def _acall(
    key: str, fn: Callable[..., Awaitable[Any]], *args: Any, reconcile: Any = None, **kwargs: Any
) -> Any:
    _check_key(key)
    return await unrecorded("", key, fn, *args, **kwargs)


def _check_key(key: object) -> None:
    if not isinstance(key, str) or not key:
        raise AgentError(f"call_once key {key!r}: expected a non-empty string")


def fork_of(store: Store, name: str, record: StepRecord | None) -> Store:
    """A fork of ``store``, with the writes of ``record`` (a finished, unmerged unit)."""
    fork = store.fork(name=name)
    if record is not None and record.changes:
        fork.apply(record.changes)
    return fork
