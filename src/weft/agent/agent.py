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
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import replace
from time import time
from typing import Any, Final

from weft._sync import run_sync
from weft.agent.actors import ActorSpec, ActorTable
from weft.agent.branching import run_action_groups
from weft.agent.context import (
    AgentInputs,
    IterationContext,
    NextActions,
    Summarizer,
    default_summarizer,
    next_iteration,
)
from weft.agent.parsing import ResponseProblem, parse_structured_response
from weft.agent.prompting import action_results_xml, attachments_string, value_string
from weft.agent.resume import AgentRun
from weft.agent.types import (
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
from weft.errors import AgentBuildError, AgentError, AgentResponseError, GraphError, NodeError
from weft.graph.pause import Interrupt, Paused, enclosing, paused
from weft.llm import areason
from weft.store import FrozenList, Store, freeze, reducers
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
        self._inherited = AgentStates()
        self._spawning: AgentStateItem | None = None  # the iteration whose actions run now
        self._cache: tuple[object, tuple[AgentStateItem, ...]] = (None, ())
        self._running = False
        self._watch: AgentWatch | None = None
        self._set_paths()

    def _set_paths(self) -> None:
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
        stored = self._store.value("state", self.states_path, _EMPTY)
        source, items = self._cache
        if stored is not source:
            if len(stored) >= len(items):
                items = (*items, *map(AgentStateItem.from_dict, stored[len(items) :]))
            else:
                items = tuple(map(AgentStateItem.from_dict, stored))
            self._cache = (stored, items)
        return self._inherited + items if self._inherited else AgentStates(items)

    def _appended(self, item: AgentStateItem) -> None:
        """``item`` was appended to the states: keep the cache without converting it back."""
        source, items = self._cache
        entry = self._store.get("state", self.states_path)
        if source is not None and entry is not None and len(entry.value) == len(items) + 1:
            self._cache = (entry.value, (*items, item))

    def copy(self, *, name: str, store: Store, clear_states: bool = True) -> Agent:
        """A copy of this agent on ``store`` under ``name``, sharing nothing mutable."""
        clone = self.__class__.__new__(self.__class__)
        clone.__dict__.update(self.__dict__)
        clone.name = name
        clone._store = store
        states = AgentStates() if clear_states else self.states
        spawning = None if clear_states else self._spawning
        clone._inherited = states if spawning is None else AgentStates((*states, spawning))
        clone._spawning = None
        clone._cache = (None, ())
        clone._running = False
        clone._watch = None
        clone._set_paths()
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
        given = (*attachments, *self.make_attachments(previous_agent_results))
        with self._exclusive(run_id=run):
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
        given = (*step.attachments, *self.make_attachments(previous_agent_results))
        run = None if step.calls is None else AgentRun.inner(self, step.calls, unit)
        with self._exclusive(branch=True):
            loop = self._loop(
                user_input, step.user_profile, step.context, given, action_results, run
            )
            return await (loop if self._watch is None else self._watch.around(loop))

    @contextmanager
    def _exclusive(self, *, branch: bool = False, run_id: str | None = None) -> Iterator[None]:
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
        try:
            yield
        finally:
            self._running = False
            self._watch = None

    async def _loop(
        self,
        user_input: Any,
        user_profile: Any,
        context: Any,
        attachments: tuple[AgentAttachment, ...],
        feedback: Any,
        run: AgentRun | None,
    ) -> AgentResult:
        user_input = freeze(user_input, where=f"user_input of agent {self.name!r}")
        run_states: list[AgentStateItem] = []
        response: AgentResponse | None = None
        stop: StopReason = "max_iterations"
        for i in range(self.max_iterations):
            iteration = next_iteration(self) if run is None else run.first + i
            finished = None if run is None else run.finished(iteration)
            if finished is not None:  # restored: nothing of it runs again
                item = AgentStateItem.from_dict(finished.result["state"])
                ran = finished.result["ran"]
                if self._watch is not None:
                    self._watch.restored(iteration)
            else:
                started = time()
                if self._watch is not None:
                    self._watch.iteration(iteration)
                reply = None if run is None else run.interrupted(iteration)
                if reply is None:
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
                    prompt, raw, response = await self._reason(prompt, iteration)
                else:  # the interrupted iteration: its recorded reply, parsed again
                    prompt, raw = reply
                    response = self.parse_response(raw)
                plan = freeze(response.to_dict(), where=f"response of agent {self.name!r}")
                current = {"iteration": iteration, "response": plan}
                if run is None:
                    self._store.write("state", self.current_path, current, source=self.name)
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
                )
                if ran:  # a branch copied meanwhile inherits this item (its results unknown)
                    self._spawning = item
                    try:
                        item = replace(item, action_results=await self._work(work, step))
                    finally:
                        self._spawning = None
                if run is None:
                    self._store.write(
                        "state", self.states_path, item.to_dict(plan), source=self.name
                    )
                else:
                    record = freeze(item.to_dict(plan), where=f"state of agent {self.name!r}")
                    run.record_iteration(iteration, record, ran, started)
                self._appended(item)
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

    async def _reason(self, prompt: str, iteration: int) -> tuple[str, str, AgentResponse]:
        """Ask the reasoner; one corrective retry; ``(prompt used, raw reply, response)``."""
        raw = (await areason(self.reasoner, prompt)).text
        try:
            return prompt, raw, self.parse_response(raw)
        except ResponseProblem as problem:
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
        """Run action groups (``weft.agent.branching``), or a callable as it is (seed 002)."""
        try:
            if isinstance(work, tuple):
                return await run_action_groups(work, step)
            method = getattr(work, "arun", None)
            if callable(method):
                return await method()
            result = work()
            if asyncio.iscoroutine(result) or isinstance(result, asyncio.Future):
                result = await result
            return result
        except NodeError as exc:
            cause = exc.__cause__
            if isinstance(cause, Exception) and not isinstance(cause, GraphError):
                cause.add_note(f"raised inside the actions of agent {self.name!r}: {exc}")
                raise cause from None
            raise

    def construct_reasoner_input(self, inputs: AgentInputs) -> str:
        """The prompt of one iteration: here the input, the results and the attachments."""
        parts = [value_string(inputs.user_input)]
        if inputs.action_results is not None:
            parts.append(action_results_xml(inputs.action_results))
        if inputs.attachments:
            parts.append(attachments_string(inputs.attachments))
        return "\n\n".join(part for part in parts if part)

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
        (self._store if into is None else into).write(
            "state",
            self.actions_path,
            action_record(chooser, iteration, group, index, action),
            source=self.name,
        )

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name!r} states={len(self.states)}>"
