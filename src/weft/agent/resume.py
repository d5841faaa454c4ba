"""Resuming an agent run: the records of a run with a ``run_id``, and how the loop reads them.

``agent.run(user_input, run_id="job-1")`` records the run in the agent's store, kind
``step``, each record one store write (so on a ``DurableRun`` store each is durable when
the write returns)::

    job-1/start                     {"agent", "iteration"}: the run's first iteration
    job-1/iter/<n>/reply            {"reasoner_input", "raw_response"}: the reply, parsed
                                    before any action ran
    job-1/iter/<n>/branch/<g>.<k>   a finished branch of a parallel group: its action, its
                                    result and its fork's events (its work, not yet merged)
    job-1/iter/<n>/group/<g>        {"branches"}: the group's forks were merged into the
                                    store; then {"branches", "outcome"}: summarized
    job-1/iter/<n>/problem/<i>      a solved problem of a plan: its result, its fork's events
    job-1/iter/<n>/plan             {"output"}: the plan's forks were merged
    job-1/iter/<n>                  {"state": <the state item>, "ran": bool}: the iteration
                                    finished (written before its ``states`` append, and
                                    before the next iteration starts)

``n`` is the agent's iteration number (``AgentStateItem.iteration``). Running again with
the same ``run_id`` and arguments on that store (rebuilt from its events, or a
``DurableRun`` reloaded in a new process) restores the finished iterations from their
records and goes on from the first unfinished one; a run that had ended returns its
result and calls nothing. A run id names one run of one agent: another agent is refused
it, and so is a resume after the agent ran other iterations in that store meanwhile.

What runs again on resume, and what does not:

- a finished iteration: nothing (no reasoner call, no actor, no summarizer); its
  ``state`` writes (``current``, ``actions``, ``states``) are in the store already and
  are not repeated (a ``states`` append the crash cut off is made from the record).
- the interrupted iteration: the reasoner is not asked again if its reply was recorded
  (the same reply, so the same actions); a single action whose record is in
  ``agent/<name>/actions`` is not run again; a branch of a parallel group that finished
  is restored from its record (its fork rebuilt from its events) instead of running; a
  merged group is not merged again, a summarized one not summarized again; likewise
  each solved problem of a planning agent's plan, and a merged plan.
  Unfinished actions, branches and problems run again **whole** (a branch's own loop,
  reasoner included: its work lives on a fork until it finishes), and so does work
  that ``create_next_actions`` returns as a callable or WorkGraph of your own.
- an actor's external effect: at least once, unless it goes through the ``call_once``
  (``acall_once``) extra of ``weft.agent.actors``: a keyed call whose result was recorded
  is not made again.

Atomicity. Each record is one write. A group's merge and its record form one unit: on a
``DurableRun`` store they are appended in one transaction; on other stores they are
consecutive writes, so a log persisted by other means can hold half a merge if the
process dies inside it.
"""

from __future__ import annotations

import inspect
import operator
import threading
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

from weft.agent.types import AgentResult, AgentStates, from_plain_record
from weft.errors import AgentBuildError, AgentError, StoreError
from weft.store import Store, from_jsonable, reducers, to_jsonable
from weft.store.records import CALLS, aonce, once

if TYPE_CHECKING:
    from weft.agent.agent import Agent

ONCE: Final = frozenset({"call_once", "acall_once"})
"""The actor extras of keyed calls."""


def check_run_id(run_id: object) -> str:
    """A run id: a non-empty string without ``/`` (it starts the records' paths)."""
    if not isinstance(run_id, str) or not run_id or "/" in run_id:
        raise AgentBuildError(
            f"run_id={run_id!r}: a run id is a non-empty string without '/', e.g. 'job-1'; "
            "it names the records of one run, so reuse it to resume that run"
        )
    return run_id


# ----------------------------------------------------------------- fork events


def event_records(fork: Store, base: int) -> list[list[Any]]:
    """The changes a fork made since ``base`` as JSON: ``[op, kind, path, value, source,
    reducer, meta]`` each, values in the store's JSON form (``to_jsonable``: a ``DELETE``
    marker or a registered type is tagged), without times or sequence numbers (replayed,
    they get new ones)."""
    types = fork.types
    return [
        [
            e.op,
            e.kind,
            e.path,
            to_jsonable(e.value, types),
            e.source,
            e.reducer,
            None if e.meta is None else to_jsonable(e.meta, types),
        ]
        for e in fork.events(base)
    ]


def replay(records: Iterable[Any], into: Store) -> None:
    """Apply ``event_records`` to ``into`` through its reducers, as a merge would."""
    types = into.types
    for op, kind, path, data, source, reducer, meta_data in records:
        value = from_jsonable(data, types)
        if op == "write":
            replace = reducer == "replace"
            if not replace and into.reducer_of(kind, path) != reducer:
                into.declare(kind, path, _builtin(reducer, kind, path))
            meta = None if meta_data is None else from_jsonable(meta_data, types)
            into.write(kind, path, value, source=source, meta=meta, replace=replace)
        elif op == "delete":
            into.delete(kind, path, source=source)
        elif op == "clear":
            into.clear(kind=kind or None, key_prefix=path, source=source)
        elif op == "note":
            into.note(kind, path, value, source=source)


def _builtin(name: str, kind: str, path: str) -> reducers.Reducer:
    found = operator.add if name == "operator.add" else reducers.by_name(name)
    if found is None:
        raise AgentError(
            f"a recorded write to {kind}:{path} went through the reducer {name!r}, which is "
            f"not a built-in; declare it on the store before resuming "
            f"(store.declare({kind!r}, {path!r}, <your reducer>))"
        )
    return found


class GroupFork:
    """The fork a parallel group (or a plan) works on: its branches fork from it, their
    merge lands in it, and it reaches the store in one commit with the group's record."""

    __slots__ = ("_lock", "base", "fork", "name", "store")

    def __init__(self, store: Store, name: str) -> None:
        self.store = store
        self.name = name
        self.fork: Store | None = None
        self.base = 0
        self._lock = threading.Lock()

    def branch(self, name: str) -> Store:
        """A fork for one branch (made from the group's fork, made on first use)."""
        with self._lock:
            if self.fork is None:
                self.fork = self.store.fork(name=self.name)
                self.base = self.fork.last_seq
            return self.fork.fork(name=name)


# ------------------------------------------------------------------- the records


@dataclass(frozen=True, slots=True)
class Finished:
    """A finished iteration as its record gives it back."""

    state: Mapping[str, Any]
    ran: bool


class RunRecords:
    """The records of one run of one agent (see the module docstring)."""

    __slots__ = ("_iterations", "_subs", "agent", "first", "run_id", "store")

    def __init__(self, agent: Agent, run_id: str) -> None:
        self.agent = agent
        self.store = agent.store
        self.run_id = run_id
        self._iterations: dict[int, Finished] = {}
        self._subs: dict[int, dict[str, Any]] = {}
        start = self.store.value("step", f"{run_id}/start", None)
        if start is None:
            self.first = agent._next_iteration()
            self.store.write(
                "step",
                f"{run_id}/start",
                {"agent": agent.name, "iteration": self.first},
                source=agent.name,
            )
            return
        if start.get("agent") != agent.name:
            raise AgentError(
                f"run_id={run_id!r} was recorded by the agent {start.get('agent')!r} in this "
                f"store, not by {agent.name!r}; resume it with that agent, or give this run "
                "a run id of its own"
            )
        self.first = int(start["iteration"])
        self._load()
        self._repair_states()

    def _load(self) -> None:
        prefix = f"{self.run_id}/iter/"
        for entry in self.store.entries(kind="step", key_prefix=f"step:{prefix}"):
            head, _, rest = entry.path[len(prefix) :].partition("/")
            if not head.isdigit():
                continue
            n = int(head)
            if rest:
                self._subs.setdefault(n, {})[rest] = entry.value
            else:
                self._iterations[n] = Finished(entry.value["state"], bool(entry.value["ran"]))

    def _repair_states(self) -> None:
        """Append the state item of the last finished iteration if the process died between
        its record and its ``states`` write (the record is the commit point)."""
        if not self._iterations:
            return
        last = max(self._iterations)
        stored = self.store.value("state", self.agent.states_path, None) or ()
        if not stored or int(stored[-1]["iteration"]) < last:
            self.store.write(
                "state",
                self.agent.states_path,
                self._iterations[last].state,
                source=self.agent.name,
            )

    # ------------------------------------------------------------- reading

    def finished(self, n: int) -> Finished | None:
        return self._iterations.get(n)

    def reply(self, n: int) -> tuple[str, str] | None:
        """The recorded ``(reasoner input, raw reply)`` of iteration ``n``, if any."""
        record = self._subs.get(n, {}).get("reply")
        if record is None:
            return None
        return record["reasoner_input"], record["raw_response"]

    def check_can_go_on(self, n: int) -> None:
        """Refuse to run iteration ``n`` if the agent ran other iterations in this store
        since this run stopped (their numbers would clash)."""
        at = self.agent._next_iteration()
        if at == n or (at == n + 1 and self.reply(n) is not None):
            return
        raise AgentError(
            f"run {self.run_id!r} of agent {self.agent.name!r} stopped before iteration {n}, "
            f"but the agent's store has moved on to iteration {at}: another run of this "
            "agent used the store since. Resume an interrupted run before running the agent "
            "again, or start over with a new run_id"
        )

    def at(self, n: int) -> IterationRecords:
        return IterationRecords(self, n, self._subs.get(n, {}))

    # ------------------------------------------------------------- writing

    def write(self, path: str, record: Any) -> None:
        self.store.write("step", f"{self.run_id}/{path}", record, source=self.agent.name)

    def write_reply(self, n: int, reasoner_input: str, raw: str) -> None:
        self.write(f"iter/{n}/reply", {"reasoner_input": reasoner_input, "raw_response": raw})

    def write_iteration(self, n: int, state: Mapping[str, Any], ran: bool) -> None:
        self.write(f"iter/{n}", {"state": state, "ran": ran})

    def commit(self, group: GroupFork | None, path: str, record: Any) -> None:
        """Merge the group's fork into the store and write ``record`` at ``path``: one
        transaction on a ``DurableRun`` store, two writes in a row elsewhere."""
        fork = None if group is None else group.fork
        with self.store.transaction() as tx:
            if fork is not None:
                tx.merge([fork])
            tx.write("step", f"{self.run_id}/{path}", record, source=self.agent.name)


class IterationRecords:
    """The records of one iteration, for the work of that iteration (``IterationContext.
    records``): what finished before the run stopped, and where to record what finishes."""

    __slots__ = ("_groups", "_lock", "_subs", "actions", "n", "run")

    def __init__(self, run: RunRecords, n: int, subs: Mapping[str, Any]) -> None:
        self.run = run
        self.n = n
        self._subs = subs
        self._groups: dict[str, GroupFork] = {}
        self._lock = threading.Lock()
        self.actions: dict[tuple[int, int], Mapping[str, Any]] = {}
        """The executed single actions of this iteration (by group and index)."""
        if subs:
            self._load_actions()

    def _load_actions(self) -> None:
        agent = self.run.agent
        stored = self.run.store.value("state", agent.actions_path, None) or ()
        for record in reversed(stored):
            if int(record["iteration"]) < self.n:
                break
            if record["iteration"] == self.n and record["agent"] == agent.name:
                self.actions[(int(record["group"]), int(record["index"]))] = record["action"]

    def recorded(self, path: str) -> Any:
        """The record at ``iter/<n>/<path>``, or None."""
        return self._subs.get(path)

    def group(self, name: str) -> GroupFork:
        """The fork of group ``name`` (``"group/0"``, ``"plan"``), one per iteration."""
        with self._lock:
            group = self._groups.get(name)
            if group is None:
                agent = self.run.agent
                group = GroupFork(self.run.store, f"{agent.name}/{self.n}.{name}")
                self._groups[name] = group
            return group

    def write(self, path: str, record: Any) -> None:
        self.run.write(f"iter/{self.n}/{path}", record)

    def commit(self, name: str, record: Any) -> None:
        """Commit group ``name``: its fork merged and its record, together."""
        self.run.commit(self._groups.get(name), f"iter/{self.n}/{name}", record)


def restored_result(agent: Agent, record: Mapping[str, Any]) -> AgentResult:
    """A finished branch's ``AgentResult``, from its record and its states in the store."""
    items = agent.states[len(agent._inherited) :]
    return AgentResult(
        agent=agent.name,
        response=items[-1].response if items else None,
        action_results=from_plain_record(record["action_results"]),
        states=AgentStates(items),
        stop_reason=record["stop_reason"],
    )


# ------------------------------------------------------------------ keyed calls


@dataclass(frozen=True, slots=True)
class OnceScope:
    """Where keyed calls of a run are recorded: the run's store and id."""

    store: Store
    run_id: str


class Once:
    """The ``call_once`` / ``acall_once`` extras of one action (see ``weft.agent.actors``).

    ``call_once(key, fn, *args, **kwargs)`` calls ``fn`` unless a call with this key was
    recorded for this action, and returns the recorded result (frozen JSON). The record
    is the store entry ``step:calls/<run_id>/<agent>/<iteration>/<position>/<key>``, the
    entry ``DurableRun.call_once`` uses for that whole key, written to the run's store
    (a branch's included) as soon as ``fn`` returns. Without a ``run_id`` there is nothing
    to resume, and ``fn`` is just called.
    """

    __slots__ = ("prefix", "scope")

    def __init__(self, scope: OnceScope | None, agent: str, iteration: int, position: str) -> None:
        self.scope = scope
        self.prefix = (
            "" if scope is None else f"{CALLS}/{scope.run_id}/{agent}/{iteration}/{position}/"
        )

    def _path(self, key: str) -> str:
        if not isinstance(key, str) or not key:
            raise AgentError(f"call_once key {key!r}: expected a non-empty string")
        return self.prefix + key

    def call(self, key: str, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        path = self._path(key)
        if self.scope is None:
            result = fn(*args, **kwargs)
            if inspect.isawaitable(result):
                if inspect.iscoroutine(result):
                    result.close()
                raise AgentError(
                    f"call_once({key!r}, {getattr(fn, '__name__', fn)!r}) got an awaitable; "
                    "for an async function take the acall_once extra and await it"
                )
            return result
        try:
            return once(self.scope.store, path, fn, *args, **kwargs)
        except StoreError as exc:
            if "awaitable" in str(exc):
                raise AgentError(
                    f"call_once({key!r}, {getattr(fn, '__name__', fn)!r}) got an awaitable; "
                    "for an async function take the acall_once extra and await it"
                ) from None
            raise

    async def acall(
        self, key: str, fn: Callable[..., Awaitable[Any]], *args: Any, **kwargs: Any
    ) -> Any:
        path = self._path(key)
        if self.scope is None:
            return await fn(*args, **kwargs)
        return await aonce(self.scope.store, path, fn, *args, **kwargs)


def once_extras(
    offered: dict[str, Any], wanted: frozenset[str], agent: Agent, iteration: int, position: str
) -> None:
    """Add the keyed-call extras to ``offered`` when the actor declares them."""
    if wanted.isdisjoint(ONCE):
        return
    once = Once(agent._once, agent.name, iteration, position)
    offered["call_once"] = once.call
    offered["acall_once"] = once.acall
