"""``Agent``: the loop of seed 000/002, on one store (the README's "Agents" section has its
store paths and what the reasoner is fed).

``agent/<name>/current`` is written once the reply is parsed, before any action runs, and
each corrective retry leaves a note on ``agent/<name>/states``. A branch is an agent named
``<name>/<iteration>.<group>.<index>`` on a fork; its records reach this store when its
group ends. An iteration that runs no actions leaves the feedback as it was.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Iterable, Mapping
from math import isfinite
from time import time
from typing import Any, Final

from weft._sync import run_sync
from weft.agent.actors import ActorSpec, ActorTable
from weft.agent.branching import node_error_cause, run_action_groups
from weft.agent.context import (
    AgentInputs,
    IterationContext,
    NextActions,
    Summarizer,
    default_summarizer,
    next_iteration,
)
from weft.agent.parsing import ResponseProblem, parse_structured_response
from weft.agent.prompting import basic_prompt
from weft.agent.resume import AgentRun
from weft.agent.types import (
    _ACTION_TAG,
    AgentAction,
    AgentAttachment,
    AgentResponse,
    AgentResult,
    AgentStateItem,
    AgentStates,
    AgentTaskStatusFlags,
    StopReason,
    action_record,
)
from weft.agent.watch import AgentWatch
from weft.errors import AgentBuildError, AgentError, AgentResponseError, NodeError
from weft.graph.pause import Interrupt, Paused, enclosing, paused
from weft.llm import areason
from weft.store import MISSING, FrozenDict, FrozenList, Store, freeze, reducers
from weft.store.notes import watched
from weft.store.runlog import check_run_id

_NAME: Final = re.compile(r"[A-Za-z0-9_.:-]+(/[A-Za-z0-9_.:-]+)*")
_COMPLETED: Final = AgentTaskStatusFlags.Completed
_EMPTY: Final = FrozenList()


class Agent:
    """The agent loop: reasoner, response, actions as a WorkGraph, results fed back.

    ``reasoner`` is any weft reasoner; ``actor`` is ``{action type: function}`` or one
    function (``weft.agent.actors``); ``store`` defaults to a new one, ``name`` is the
    agent's place in it. ``summarizer(*branch_results)`` merges a parallel group (default:
    ``default_summarizer``); with ``branching_agent_start_as_new=False`` a branch inherits
    this agent's states, the iteration that spawned it included (its input, reply and
    status, its action results not yet known).

    >>> from weft.llm import ScriptedReasoner
    >>> reasoner = ScriptedReasoner([
    ...     '{"next_actions": [[{"type": "add", "args": {"a": 2, "b": 3}}]]}',
    ...     '{"instant_response": "2 + 3 = 5", "task_status": "Completed"}',
    ... ])
    >>> agent = Agent(reasoner, actor={"add": lambda a, b: a + b})
    >>> result = agent.run("What is 2 + 3?")
    >>> result.instant_response, result.action_results.result, result.iterations
    ('2 + 3 = 5', 5, 2)
    """

    def __init__(
        self,
        reasoner: Any,
        *,
        actor: ActorSpec = None,
        action_types: Iterable[str] | None = None,
        store: Store | None = None,
        name: str = "agent",
        max_iterations: int = 10,
        summarizer: Summarizer | None = None,
        branching_agent_start_as_new: bool = True,
    ) -> None:
        if not callable(reasoner) and not callable(getattr(reasoner, "areason", None)):
            raise AgentBuildError(
                f"reasoner={reasoner!r} is not a reasoner; pass a function taking the prompt, "
                "a ScriptedReasoner, or a chat-model adapter such as OpenAIChatModel"
            )
        if not isinstance(name, str) or not _NAME.fullmatch(name):
            raise AgentBuildError(
                f"name={name!r}; an agent name is letters, digits and _ . : - (segments "
                "joined by '/'), as it becomes the store path agent/<name>/..."
            )
        if type(max_iterations) is not int or max_iterations < 1:
            raise AgentBuildError(f"max_iterations={max_iterations!r}; expected an int >= 1")
        if summarizer is not None and not callable(summarizer):
            raise AgentBuildError(
                f"summarizer={summarizer!r} is not callable; a summarizer is "
                "f(*branch_results) -> merged value"
            )
        self.reasoner = reasoner
        self.actors = ActorTable(actor, action_types)
        self.name = name
        self.max_iterations = max_iterations
        self.summarizer: Summarizer = summarizer or default_summarizer
        self.branching_agent_start_as_new = branching_agent_start_as_new
        self._store = store if store is not None else Store(name=name)
        self._fresh(AgentStates())

    def _fresh(self, inherited: AgentStates) -> None:
        """Set what a new agent or a copy starts with, and declare its store paths."""
        self._inherited = inherited
        # the iteration whose actions run now: (iteration, user input, prompt, reply, response)
        self._spawning: tuple[int, Any, str, str, AgentResponse] | None = None
        self._recorded: tuple[AgentAction, Any] | None = None  # the last action recorded
        self._cache: tuple[object, tuple[AgentStateItem, ...]] = (None, ())
        self._running = False
        self._watch: AgentWatch | None = None
        base = f"agent/{self.name}"
        self.states_path = f"{base}/states"
        self.actions_path = f"{base}/actions"
        self.current_path = f"{base}/current"
        self._store.declare("state", self.states_path, reducers.append)
        self._store.declare("state", self.actions_path, reducers.append)

    @property
    def store(self) -> Store:
        """The store this agent's state lives in."""
        return self._store

    @property
    def action_types(self) -> frozenset[str] | None:
        """The action types this agent can run (None: one actor takes every type)."""
        return self.actors.action_types

    @property
    def states(self) -> AgentStates:
        """Every iteration's state item, oldest first (a branch's inherited ones first)."""
        entry = self._store.get("state", self.states_path)
        stored = None if entry is None else entry.stored
        source, items = self._cache
        if stored is not source:  # cached by what the store holds: no list built to compare
            values = _EMPTY if entry is None else entry.value
            if len(values) >= len(items):
                items = (*items, *map(AgentStateItem.from_dict, values[len(items) :]))
            else:
                items = tuple(map(AgentStateItem.from_dict, values))
            self._cache = (stored, items)
        return self._inherited + items if self._inherited else AgentStates(items)

    def _appended(self, item: AgentStateItem, stored: Any) -> None:
        """``item`` was appended to the states (``stored``: what the store holds for them
        after it, if known): keep the cache without converting it back."""
        if stored is None:
            entry = self._store.get("state", self.states_path)
            stored = None if entry is None else entry.stored
        items = self._cache[1]
        if stored is not None and len(stored) == len(items) + 1:
            self._cache = (stored, (*items, item))

    def copy(self, *, name: str, store: Store, clear_states: bool = True) -> Agent:
        """A copy of this agent on ``store`` under ``name``, sharing nothing mutable."""
        clone = self.__class__.__new__(self.__class__)
        clone.__dict__.update(self.__dict__)
        clone.name = name
        clone._store = store
        states = AgentStates() if clear_states else self.states
        spawning = None if clear_states else self._spawning
        clone._fresh(states if spawning is None else AgentStates((*states, _spawned(*spawning))))
        return clone

    def run(self, user_input: Any = None, **kwargs: Any) -> AgentResult | Paused:
        """The blocking form of :meth:`arun` (same arguments)."""
        return run_sync(self.arun(user_input, **kwargs))

    __call__ = run

    async def arun(
        self,
        user_input: Any = None,
        *,
        user_profile: Any = None,
        context: Any = None,
        attachments: Iterable[AgentAttachment] = (),
        action_results: Any = None,
        previous_agent_results: Any = None,
        run_id: str | None = None,
        answers: Mapping[str, Any] | None = None,
    ) -> AgentResult | Paused:
        """Run the loop until the task is completed, nothing is left to do, or
        ``max_iterations``. ``action_results`` seeds the first iteration's feedback. With
        ``run_id``, calling again with the same arguments resumes the run (``weft.agent.resume``).
        An actor that asks a person (``weft.graph.interrupt``) pauses the run: it returns
        ``Paused``, and calling again with ``answers=`` goes on from that action.
        """
        run = None if run_id is None else check_run_id(run_id, AgentBuildError)
        if answers is not None and run is None:
            raise AgentBuildError("answers= resume a paused run: pass them with its run_id")
        given = self._given(attachments, previous_agent_results)
        self._enter(run_id=run)
        try:
            records = None if run is None else AgentRun.begin(self, run)
            if records is not None and answers is not None:
                records.log.answer(answers, error=AgentError)
            outer = enclosing()
            try:
                loop = self._loop(user_input, user_profile, context, given, action_results, records)
                result = await (loop if self._watch is None else self._watch.around(loop))
            except Interrupt as pause:
                return paused(None if records is None else records.log, pause, outer)
            if records is not None:
                records.complete(result)
            return result
        finally:
            self._leave()

    async def arun_unit(
        self,
        step: IterationContext,
        unit: str,
        user_input: Any = None,
        *,
        action_results: Any = None,
        previous_agent_results: Any = None,
    ) -> AgentResult:
        """:meth:`arun` as the unit ``unit`` of ``step``'s work (a branch, a plan's solver)."""
        given = self._given(step.attachments, previous_agent_results)
        run = None if step.calls is None else AgentRun.inner(self, step.calls, unit)
        self._enter(branch=True)
        try:
            loop = self._loop(
                user_input, step.user_profile, step.context, given, action_results, run
            )
            return await (loop if self._watch is None else self._watch.around(loop))
        finally:
            self._leave()

    def _enter(self, *, branch: bool = False, run_id: str | None = None) -> None:
        """Mark the agent running (the caller calls ``_leave`` when its loop ends), and
        watch the loop when someone listens to the store's notes."""
        if self._running:
            raise AgentError(
                f"agent {self.name!r} is already running; one agent runs one loop at a time "
                "(its iterations are numbered in its store). Use agent.copy(name=..., "
                "store=...) for a second, concurrent run"
            )
        self._running = True
        # a branch's loop is named apart: it shares its run id with the run it is part of
        self._watch = (
            AgentWatch(self.name, self._store, None if branch else run_id)
            if watched(self._store)
            else None
        )

    def _leave(self) -> None:
        self._running = False
        self._watch = None

    def _given(
        self, attachments: Iterable[AgentAttachment], previous_agent_results: Any
    ) -> tuple[AgentAttachment, ...]:
        if (
            previous_agent_results is None
            and type(attachments) is tuple
            and type(self).make_attachments is Agent.make_attachments
        ):
            return attachments  # nothing to add: the common case
        return (*attachments, *self.make_attachments(previous_agent_results))

    async def _loop(
        self,
        user_input: Any,
        user_profile: Any,
        context: Any,
        attachments: tuple[AgentAttachment, ...],
        feedback: Any,
        run: AgentRun | None,
    ) -> AgentResult:
        if user_input is not None and not _stored_as_is(user_input):
            user_input = freeze(user_input, where=f"user_input of agent {self.name!r}")
        run_states: list[AgentStateItem] = []
        response: AgentResponse | None = None
        stop: StopReason = "max_iterations"
        store, name = self._store, self.name
        own_prompt = (
            type(self).construct_reasoner_input is Agent.construct_reasoner_input
            and "construct_reasoner_input" not in self.__dict__
        )
        for i in range(self.max_iterations):
            iteration = next_iteration(self) if run is None else run.first + i
            finished = None if run is None else run.finished(iteration)
            if finished is not None:  # restored: nothing of it runs again
                item = AgentStateItem.from_dict(finished.result["state"])
                ran = finished.result["ran"]
                if self._watch is not None:
                    self._watch.restored(iteration)
            else:
                started = 0.0 if run is None else time()
                if self._watch is not None:
                    self._watch.iteration(iteration)
                reply = None if run is None else run.interrupted(iteration)
                if reply is None:
                    if own_prompt:  # the states are not part of it: not even read
                        prompt = basic_prompt(user_input, feedback, attachments)
                    else:
                        inputs = AgentInputs(
                            iteration=iteration,
                            user_input=user_input,
                            user_profile=user_profile,
                            context=context,
                            action_results=feedback,
                            attachments=attachments,
                            states=self.states,
                        )
                        prompt = self.construct_reasoner_input(inputs)
                    raw = (await areason(self.reasoner, prompt)).text
                    try:
                        response = self.parse_response(raw)
                    except ResponseProblem as problem:
                        prompt, raw, response = await self._retry(prompt, raw, problem, iteration)
                else:  # the interrupted iteration: its recorded reply, parsed again
                    prompt, raw = reply
                    response = self.parse_response(raw)
                plan = response_record(response, name)
                current = FrozenDict({"iteration": iteration, "response": plan})
                if run is None:  # one write, the store's single-write path
                    store.write_many("state", {self.current_path: current}, source=name)
                elif reply is None:
                    run.record_reply(iteration, prompt, raw, current)
                log, calls = (None, None) if run is None else run.at(iteration)
                step = IterationContext(
                    agent=self,
                    iteration=iteration,
                    action_results=feedback,
                    attachments=attachments,
                    user_profile=user_profile,
                    context=context,
                    log=log,
                    calls=calls,
                )
                work = self.create_next_actions(response, step)
                ran = bool(work)
                results = None
                if ran:  # a branch copied meanwhile inherits this item (its results unknown)
                    self._spawning = (iteration, user_input, prompt, raw, response)
                    try:
                        results = await (
                            run_action_groups(work, step)
                            if work.__class__ is tuple
                            else self._work(work, step)
                        )
                    finally:
                        self._spawning = None
                item = AgentStateItem(
                    iteration=iteration,
                    new_task=user_input is not None,
                    task_status=response.task_status,
                    task_status_description=response.task_status_description,
                    task_status_description_extended=response.task_status_description_extended,
                    user_input=user_input,
                    reasoner_input=prompt,
                    raw_response=raw,
                    response=response,
                    action_results=results,
                )
                record = state_record(item, plan, self._recorded)
                self._recorded = None
                if run is None:
                    entry = store.write(
                        "state",
                        self.states_path,
                        item.to_dict(plan) if record is None else record,
                        source=name,
                    )
                    self._appended(item, entry.stored)
                else:
                    if record is None:
                        record = freeze(item.to_dict(plan), where=f"state of agent {name!r}")
                    run.record_iteration(iteration, record, ran, started)
                    self._appended(item, None)
                if self._watch is not None:
                    self._watch.iteration_done()
            run_states.append(item)
            response = item.response
            if ran:
                feedback = item.action_results
            user_input = None
            if response.task_status is _COMPLETED:
                stop = "completed"
                break
            if not ran:
                stop = "no_actions"
                break
        return AgentResult(
            agent=self.name,
            response=response,
            action_results=feedback,
            states=AgentStates(run_states),
            stop_reason=stop,
        )

    async def _retry(
        self, prompt: str, raw: str, problem: ResponseProblem, iteration: int
    ) -> tuple[str, str, AgentResponse]:
        """The one corrective retry of a reply that could not be used (``problem``):
        ``(prompt used, raw reply, response)``."""
        first = str(problem)
        kept = raw.encode("utf-8", "backslashreplace").decode()  # a lone surrogate, escaped
        self._store.note(
            "state",
            self.states_path,
            {"event": "corrective_retry", "iteration": iteration, "problem": first, "raw": kept},
            source=self.name,
        )
        retry = self.corrective_prompt(prompt, kept, first)
        again = (await areason(self.reasoner, retry)).text
        try:
            return retry, again, self.parse_response(again)
        except ResponseProblem as problem:
            raise AgentResponseError(
                f"agent {self.name!r}, iteration {iteration}: the reasoner's reply could not be "
                f"used even after one corrective retry: {problem} (the first reply had: "
                f"{first}). The raw reply is in .raw; check the prompt's format instructions",
                raw=again,
                problem=str(problem),
                agent=self.name,
            ) from None

    async def _work(self, work: NextActions, step: IterationContext) -> Any:
        """Run action groups (``weft.agent.branching``; the loop calls it directly for a
        tuple of groups), or a callable as it is (seed 002)."""
        if isinstance(work, tuple):
            return await run_action_groups(work, step)
        try:
            method = getattr(work, "arun", None)
            if callable(method):
                return await method()
            result = work()
            if asyncio.iscoroutine(result) or isinstance(result, asyncio.Future):
                result = await result
            return result
        except NodeError as exc:
            cause = node_error_cause(exc, self.name)
            if cause is None:
                raise
            raise cause from None

    def construct_reasoner_input(self, inputs: AgentInputs) -> str:
        """The prompt of one iteration: here the input, the results and the attachments."""
        return basic_prompt(inputs.user_input, inputs.action_results, inputs.attachments)

    def parse_response(self, raw: str) -> AgentResponse:
        """The reply as an ``AgentResponse``; a ``ResponseProblem`` if it cannot be used."""
        response, _graph = parse_structured_response(raw, action_types=self.action_types)
        return response

    def create_next_actions(
        self, response: AgentResponse, context: IterationContext
    ) -> NextActions:
        """The iteration's work: the action groups, or a callable run as it is."""
        return response.next_actions

    def corrective_prompt(self, prompt: str, raw: str, problem: str) -> str:
        """The one retry prompt: the original prompt, the reply, and exactly what was wrong."""
        return (
            f"{prompt}\n\n---\nYour previous reply could not be used: {problem}\n"
            f"Your previous reply was:\n{raw}\n\n"
            "Reply again with the whole response in the required format, fixing that problem."
        )

    def make_attachments(self, previous_agent_results: Any) -> list[AgentAttachment]:
        """Attachments from earlier agents' results (pattern 4): one per result, none dropped."""
        if previous_agent_results is None:
            return []
        items = (
            previous_agent_results
            if isinstance(previous_agent_results, (list, tuple))
            else [previous_agent_results]
        )
        out = []
        for number, item in enumerate(items, start=1):
            if isinstance(item, AgentAction):
                label = item.id or item.type
                content = item.result if item.executed else item.to_dict()
            elif isinstance(item, AgentAttachment):
                out.append(item)
                continue
            elif isinstance(item, AgentResult):
                label, content = item.agent, item.output
            else:
                label, content = f"previous_agent_result_{number}", item
            out.append(
                AgentAttachment(
                    id=label, description=f"The result of the {label!r} agent", content=content
                )
            )
        return out

    def record_action(
        self,
        chooser: str,
        iteration: int,
        group: int,
        index: int,
        action: AgentAction,
        *,
        into: Store | None = None,
    ) -> None:
        """Write one executed action's record; ``chooser`` is the agent that asked for it."""
        frozen = action_dict(action)
        record: Any
        if (
            frozen is not None
            and chooser.__class__ is str
            and (chooser.isascii() or _utf8(chooser))
            and iteration.__class__ is int
            and group.__class__ is int
            and index.__class__ is int
            and -_BIG < iteration < _BIG
            and -_BIG < group < _BIG
            and -_BIG < index < _BIG
        ):
            self._recorded = (action, frozen)  # the state item's record holds the same dict
            record = FrozenDict(
                {
                    "agent": chooser,
                    "iteration": iteration,
                    "group": group,
                    "index": index,
                    "action": frozen,
                }
            )
        else:
            record = action_record(chooser, iteration, group, index, action)
        (self._store if into is None else into).write(
            "state", self.actions_path, record, source=self.name
        )

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name!r} states={len(self.states)}>"


# The records the loop writes, frozen here when every part of them is what the store keeps
# as it is (text it can save, small numbers, frozen values): the store's ``freeze`` would
# walk them again to find nothing to change. Anything else (None returned) takes the
# store's own path, whose errors say what cannot be stored.


def _spawned(
    iteration: int, user_input: Any, prompt: str, raw: str, response: AgentResponse
) -> AgentStateItem:
    """The state item of an iteration whose actions are running (``Agent._spawning``)."""
    return AgentStateItem(
        iteration=iteration,
        new_task=user_input is not None,
        task_status=response.task_status,
        task_status_description=response.task_status_description,
        task_status_description_extended=response.task_status_description_extended,
        user_input=user_input,
        reasoner_input=prompt,
        raw_response=raw,
        response=response,
    )


def _stored_as_is(value: Any) -> bool:
    """Whether ``freeze`` would keep ``value`` as it is, checked without walking it."""
    cls = value.__class__
    if cls is str:
        return value.isascii() or _utf8(value)
    if cls is int:
        return bool(-_BIG < value < _BIG)
    if cls is float:
        return isfinite(value)
    return value is None or cls in _FROZEN


def _text(*values: Any) -> bool:
    """Whether every one of ``values`` is None or text the store keeps as it is."""
    for value in values:
        if value is not None and (
            value.__class__ is not str or not (value.isascii() or _utf8(value))
        ):
            return False
    return True


def _utf8(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate: the store's freeze names it
        return False
    return True


def action_dict(action: AgentAction) -> FrozenDict | None:
    """``action.to_dict()``, frozen; None if some part needs ``freeze``."""
    if action.__class__ is not AgentAction:
        return None
    kind, target, reasoning, ident = action.type, action.target, action.reasoning, action.id
    if kind is None or not _text(kind, target, reasoning, ident, action.error):
        return None
    out: dict[str, Any] = {"type": kind}
    if target is not None:
        out["target"] = target
    out["args"] = action.args  # always frozen (AgentAction.__post_init__)
    if reasoning is not None:
        out["reasoning"] = reasoning
    if ident is not None:
        out["id"] = ident
    result = action.result
    if result is not MISSING:
        if not _stored_as_is(result):
            return None
        out["result"] = result
    if action.error is not None:
        out["error"] = action.error
    return FrozenDict(out)


def response_record(response: AgentResponse, agent: str) -> Any:
    """``response.to_dict()``, frozen (``ValueTypeError`` naming agent ``agent``'s response
    if it cannot be)."""
    if not (
        response.__class__ is AgentResponse
        and not response.problems
        and response.problem_graph is None
        and _text(
            response.instant_response,
            response.instant_learnings,
            response.task_status_description,
            response.task_status_description_extended,
        )
    ):
        return freeze(response.to_dict(), where=f"response of agent {agent!r}")
    groups = []
    for group in response.next_actions:
        records = []
        for action in group:
            record = action_dict(action)
            if record is None:
                return freeze(response.to_dict(), where=f"response of agent {agent!r}")
            records.append(record)
        groups.append(FrozenList(records))
    out: dict[str, Any] = {
        "instant_response": response.instant_response,
        "task_status": response.task_status._value_,  # .value is a slow property
    }
    if response.instant_learnings is not None:
        out["instant_learnings"] = response.instant_learnings
    if response.task_status_description is not None:
        out["task_status_description"] = response.task_status_description
    if response.task_status_description_extended is not None:
        out["task_status_description_extended"] = response.task_status_description_extended
    out["next_actions"] = FrozenList(groups)
    return FrozenDict(out)


def state_record(
    item: AgentStateItem, plan: Any, recorded: tuple[AgentAction, Any] | None
) -> FrozenDict | None:
    """``item.to_dict(plan)``, frozen (``recorded``: an action and its record, if known);
    None if some part needs ``freeze``."""
    results = item.action_results
    if results is None:
        plain = None
    elif results.__class__ is AgentAction:
        action = recorded[1] if recorded is not None and recorded[0] is results else None
        if action is None:
            action = action_dict(results)
            if action is None:
                return None
        plain = FrozenDict({_ACTION_TAG: action})
    else:  # several results (a parallel group's): the general path
        return None
    if not (
        item.reasoner_input is not None
        and item.raw_response is not None
        and _text(
            item.reasoner_input,
            item.raw_response,
            item.task_status_description,
            item.task_status_description_extended,
        )
        and _stored_as_is(item.user_input)
        and item.iteration.__class__ is int
        and plan.__class__ is FrozenDict
    ):
        return None
    return FrozenDict(
        {
            "iteration": item.iteration,
            "new_task": item.new_task,
            "task_status": item.task_status._value_,
            "task_status_description": item.task_status_description,
            "task_status_description_extended": item.task_status_description_extended,
            "user_input": item.user_input,
            "reasoner_input": item.reasoner_input,
            "raw_response": item.raw_response,
            "response": plan,
            "action_results": plain,
        }
    )


_BIG: Final = 2**63
_FROZEN: Final = frozenset({bool, FrozenDict, FrozenList})
