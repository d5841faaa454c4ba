"""``ToolAgent``: the tool-calling loop. The chat model answers; the tool calls of its reply
run side by side; their results go back to it as tool messages; until it answers with no
tool call, calls ``finish``, or a limit ends the run.

Every run is recorded in the agent's store (``weft.agent.tool_records``): on a
``DurableRun``'s store it survives a crash, and a run started again with its ``run_id``
makes no finished model call or tool call again. A tool may ask a person
(``weft.graph.interrupt``): the run returns ``Paused``, and goes on with the answer.

>>> from weft.llm import ScriptedChatModel
>>> def add(a: int, b: int) -> int:
...     return a + b
>>> model = ScriptedChatModel([
...     ScriptedChatModel.tool_call("add", {"a": 2, "b": 3}),
...     "2 + 3 = 5",
... ])
>>> result = ToolAgent(model, tools=[add]).run("What is 2 + 3?")
>>> result.answer, result.stop_reason, result.iterations
('2 + 3 = 5', 'answered', 2)
>>> result.messages[-2].content  # the tool's result, as the model read it
'5'
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import time
from collections.abc import AsyncGenerator, AsyncIterator, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Final

from weft._sync import run_sync
from weft.agent.tool_prompts import CONCLUSION_NOTE, first_user_message, tool_agent_system_prompt
from weft.agent.tool_records import (
    KIND,
    record_outcome,
    record_reply,
    record_start,
    recorded_outcome,
    recorded_reply,
    recorded_start,
    tool_unit,
)
from weft.agent.tool_types import (
    IterationFinished,
    IterationStarted,
    RunFinished,
    ToolAgentEvent,
    ToolAgentResult,
    ToolAgentStopReason,
    ToolCallFinished,
)
from weft.agent.toolbox import FINISH, FINISH_SPEC, FINISH_TOOL, AgentTools, Outcome, error
from weft.errors import AgentBuildError, AgentError
from weft.graph.pause import Asking, Interrupt, Paused, enclosing, paused, pausing
from weft.llm import AssistantMessage, ChatMessage, ChatModel, ToolCall, Usage
from weft.llm.streaming import MessageDone, astream, replay
from weft.memory import AgentMemory, memory_keys
from weft.store import RunLog, Store
from weft.store.runlog import check_run_id

_NAME: Final = re.compile(r"[A-Za-z0-9_.:-]+")
_now: Final = time.monotonic
CONCLUSION_SHARE: Final = 0.9
"""The share of the token or time budget after which only ``finish`` is offered."""


class ToolAgent:
    """A chat model with tools, in a loop; with a run id, recorded in ``store``.

    ``model`` is a weft chat model (``OpenAIChatModel``, ``AnthropicChatModel``,
    ``ScriptedChatModel`` ...). ``tools`` are ``weft.calls.Tool`` s or plain functions
    (made tools named after them). The memory tools (``memory_list``, ``memory_read``,
    ``memory_write``) over ``memory`` are attached unless ``memory_tools=False``; ``memory``
    defaults to an ``AgentMemory`` over ``store``, and ``store`` (where the runs are
    recorded) to the memory's store or a new one. ``system_prompt`` is a preamble: weft's
    section on tools and memory always follows it.

    Limits: ``max_iterations`` model calls, ``max_tokens`` tokens (as the model's usage
    reports them), ``max_seconds`` of wall time (a resumed run counts the seconds it had
    run before). Reaching one ends the run with that ``stop_reason``; before that, the last
    model call, or one made past 90% of the tokens or seconds, is offered only ``finish``
    so the model concludes. A reply with more than ``max_calls_per_reply`` tool calls
    gets an error result for each call past it.
    """

    def __init__(
        self,
        model: ChatModel,
        *,
        tools: Iterable[object] = (),
        system_prompt: str | None = None,
        memory: AgentMemory | None = None,
        store: Store | None = None,
        memory_tools: bool = True,
        name: str = "tool_agent",
        max_iterations: int = 20,
        max_tokens: int | None = None,
        max_seconds: float | None = None,
        max_calls_per_reply: int = 32,
    ) -> None:
        if not isinstance(model, ChatModel):
            raise AgentBuildError(
                f"model={model!r:.80} is not a chat model: it needs achat() and chat() "
                "(OpenAIChatModel, AnthropicChatModel, ScriptedChatModel, or a ChatModelBase)"
            )
        if not isinstance(name, str) or not _NAME.fullmatch(name):
            raise AgentBuildError(
                f"name={name!r}: an agent name is letters, digits and _ . : - (it labels "
                "the agent's records and its memory writes)"
            )
        if system_prompt is not None and not isinstance(system_prompt, str):
            raise AgentBuildError(f"system_prompt={system_prompt!r:.80}: expected text")
        _check_count("max_iterations", max_iterations)
        _check_count("max_calls_per_reply", max_calls_per_reply)
        if max_tokens is not None:
            _check_count("max_tokens", max_tokens)
        if max_seconds is not None and (
            isinstance(max_seconds, bool)
            or not isinstance(max_seconds, int | float)
            or not max_seconds > 0
        ):
            raise AgentBuildError(f"max_seconds={max_seconds!r}: expected a number > 0")
        if memory is not None and not isinstance(memory, AgentMemory):
            raise AgentBuildError(f"memory={memory!r:.80}: expected a weft.memory.AgentMemory")
        if memory is not None and store is not None and memory.store is not store:
            raise AgentBuildError(
                "memory= and store= are two different stores; give the memory over the "
                "store the runs are recorded in (AgentMemory(store)), or only one of them"
            )
        if memory is not None and not memory_tools:
            raise AgentBuildError("memory= is given but memory_tools=False: drop one of them")
        self.model = model
        self.name = name
        self.max_iterations = max_iterations
        self.max_tokens = max_tokens
        self.max_seconds = float(max_seconds) if max_seconds is not None else None
        self.max_calls_per_reply = max_calls_per_reply
        self.store: Store = (
            memory.store if memory is not None else store if store is not None else Store()
        )
        self.memory = (
            (memory if memory is not None else AgentMemory(self.store)) if memory_tools else None
        )
        self.tools = AgentTools(tools, memory=self.memory, source=name, builtins=[FINISH_TOOL])
        self.offered = tuple(spec for spec in self.tools.specs if spec.name != FINISH)
        """The tools offered while the budget lasts (``finish`` is offered at the end)."""
        self.system_prompt = tool_agent_system_prompt(
            preamble=system_prompt, memory=self.memory is not None
        )

    def run(
        self, task: str | Sequence[ChatMessage] | None = None, **kwargs: Any
    ) -> ToolAgentResult | Paused:
        """The blocking form of :meth:`arun` (same arguments)."""
        return run_sync(self.arun(task, **kwargs))

    async def arun(
        self,
        task: str | Sequence[ChatMessage] | None = None,
        *,
        run_id: str | None = None,
        answers: Mapping[str, Any] | None = None,
        inputs: Mapping[str, Any] | None = None,
        upstream_memory_keys: Sequence[str] = (),
    ) -> ToolAgentResult | Paused:
        """Run the loop on ``task`` (the user's text, or a conversation of ChatMessages
        without a system message) until it ends; ``Paused`` if a tool asked a person.

        ``run_id`` names the run (a new one by default, in ``result.run_id``): with the id
        of a run that began before, it resumes that run (the task may be left out), and
        ``answers`` (``paused.answer(...)``) answer the questions it paused on. ``inputs``
        are written to memory as ``input:<name>`` and named in the first user message, as
        are ``upstream_memory_keys``: by key and title, never by value.
        """
        run = self._start(task, run_id, answers, inputs, upstream_memory_keys)
        async with contextlib.aclosing(self._loop(run, stream=False)) as events:
            async for event in events:
                if isinstance(event, RunFinished):
                    return event.result
        raise AgentError("weft internal error: a tool agent run ended without a result")

    def astream(
        self,
        task: str | Sequence[ChatMessage] | None = None,
        *,
        run_id: str | None = None,
        answers: Mapping[str, Any] | None = None,
        inputs: Mapping[str, Any] | None = None,
        upstream_memory_keys: Sequence[str] = (),
    ) -> AsyncIterator[ToolAgentEvent]:
        """:meth:`arun` as the events of the run, as they happen: ``IterationStarted``,
        the model's stream (``TextDelta``, ``ToolCallStarted``, ``ToolCallDelta`` ...,
        ``MessageDone``), ``ToolCallFinished`` as each call finishes, ``IterationFinished``,
        and last ``RunFinished`` with the result (or ``Paused``). A resumed run replays
        the events of what was recorded first."""
        run = self._start(task, run_id, answers, inputs, upstream_memory_keys)
        return self._loop(run, stream=True)

    # ------------------------------------------------------------------ a run

    def _start(
        self,
        task: str | Sequence[ChatMessage] | None,
        run_id: str | None,
        answers: Mapping[str, Any] | None,
        inputs: Mapping[str, Any] | None,
        upstream: Sequence[str],
    ) -> _Run:
        """Check the arguments, and begin the run or find it to resume."""
        given = None if task is None else _task_messages(task)
        if run_id is None:
            if given is None:
                raise AgentBuildError(
                    "no task: pass the user's request (text or ChatMessages), or the run_id "
                    "of a run to resume"
                )
            if answers is not None:
                raise AgentBuildError("answers= resume a paused run: pass them with its run_id")
            return _Run(log=None, messages=self._begin(None, given, inputs, upstream), done=None)
        log = RunLog(self.store, check_run_id(run_id, AgentBuildError))
        known = log.check(KIND, (self.name,), error=AgentError)
        if known is None:
            if answers is not None:
                raise AgentError(
                    f"answers= for run {run_id!r}, which never began; answer a run that "
                    "returned Paused, with its run_id"
                )
            if given is None:
                raise AgentBuildError(f"run {run_id!r} never began: pass the task to begin it")
            return _Run(log=log, messages=self._begin(log, given, inputs, upstream), done=None)
        if answers is not None:
            log.answer(answers, error=AgentError)
        messages = recorded_start(log, given)
        output = known.output if known.status == "completed" else None
        done = output if isinstance(output, Mapping) else None
        return _Run(log=log, messages=messages, done=done)

    def _begin(
        self,
        log: RunLog | None,
        task: list[ChatMessage],
        inputs: Mapping[str, Any] | None,
        upstream: Sequence[str],
    ) -> list[ChatMessage]:
        keys = [upstream] if isinstance(upstream, str) else list(upstream)
        if inputs:
            if not isinstance(inputs, Mapping) or self.memory is None:
                raise AgentBuildError(
                    "inputs= is a dict of name to value, written to memory: it needs the "
                    "memory tools (memory_tools=True)"
                )
            for key, value in inputs.items():
                entry = self.memory.set(memory_keys.input(str(key)), value, title=str(key))
                keys.append(entry.key)
        messages = [ChatMessage.system(self.system_prompt), *task]
        if keys:
            first = next(i for i, m in enumerate(messages) if m.role == "user")
            text = first_user_message(messages[first].content or "", keys, self.memory)
            messages[first] = ChatMessage.user(text, name=messages[first].name)
        if log is not None:
            record_start(log, self.name, task, messages)
        return messages

    async def _loop(self, run: _Run, *, stream: bool) -> AsyncGenerator[ToolAgentEvent, None]:
        outer = enclosing()
        log, messages = run.log, run.messages
        n = 0
        while True:
            n += 1
            found = None if log is None else recorded_reply(log, n)
            if found is None:
                if run.done is not None:  # a run that ended: every record was replayed
                    yield RunFinished(self._result(run, run.done["stop_reason"], n - 1))
                    return
                stop = self._limit(run, n)
                if stop is not None:
                    yield RunFinished(self._end(run, stop, n - 1))
                    return
                concluding = run.concluding or self._near_end(run, n)
                if concluding and not run.concluding:
                    run.concluding = True
                    messages.append(ChatMessage.user(CONCLUSION_NOTE))
                if stream:
                    yield IterationStarted(n, concluding)
                offered = [FINISH_SPEC] if concluding else list(self.offered)
                started = time.time()
                reply: AssistantMessage | None = None
                deadline = run.deadline(self.max_seconds)
                try:
                    if stream:
                        events = astream(self.model, tuple(messages), tools=offered)
                        try:
                            while True:  # the time limit is on each wait, never on a yield
                                try:
                                    async with _deadline(deadline):
                                        event = await anext(events)
                                except StopAsyncIteration:
                                    break
                                if isinstance(event, MessageDone):
                                    reply = event.message
                                yield event
                        finally:
                            await events.aclose()  # type: ignore[attr-defined]
                    elif deadline is None:
                        reply = await self.model.achat(tuple(messages), tools=offered)
                    else:
                        async with _deadline(deadline):
                            reply = await self.model.achat(tuple(messages), tools=offered)
                except TimeoutError:
                    yield RunFinished(self._end(run, "max_time", n - 1))
                    return
                if not isinstance(reply, AssistantMessage):
                    raise AgentError(
                        f"the model {self.model!r:.60} answered call {n} with "
                        f"{type(reply).__name__}, not an AssistantMessage"
                    )
                if log is not None:
                    record_reply(
                        log, n, self.name, reply, concluding, run.elapsed(), started_at=started
                    )
            else:
                reply, concluding, elapsed = found
                run.replayed(elapsed)
                if concluding and not run.concluding:
                    run.concluding = True
                    messages.append(ChatMessage.user(CONCLUSION_NOTE))
                if stream:
                    yield IterationStarted(n, concluding)
                    async for event in replay(reply):
                        yield event
            run.add_usage(reply.usage)
            calls, refused = _normalized(reply.tool_calls, self.max_calls_per_reply)
            messages.append(ChatMessage(role="assistant", content=reply.content, tool_calls=calls))
            if reply.content:
                run.last_text = reply.content
            if not calls:
                run.answer = reply.content
                yield RunFinished(self._end(run, "answered", n))
                return
            outcomes: list[Outcome | None] = [None] * len(calls)
            try:
                running = self._calls(run, n, calls, refused, concluding)
                async with contextlib.aclosing(running):
                    async for k, outcome in running:
                        outcomes[k] = outcome
                        if stream:
                            call = calls[k]
                            yield ToolCallFinished(
                                n, k, call.id, call.name, outcome.content, outcome.is_error
                            )
            except Interrupt as pause:
                yield RunFinished(paused(log, pause, outer))
                return
            for call, settled in zip(calls, outcomes, strict=True):
                assert settled is not None
                run.count(settled)
                messages.append(settled.to_message(call))
                if call.name == FINISH and not settled.is_error and run.answer is None:
                    run.answer = str(call.arguments["answer"])
            if stream:
                yield IterationFinished(n, run.usage)
            if run.answer is not None:
                yield RunFinished(self._end(run, "finished", n))
                return

    async def _calls(
        self,
        run: _Run,
        n: int,
        calls: tuple[ToolCall, ...],
        refused: Mapping[int, Outcome],
        concluding: bool,
    ) -> AsyncGenerator[tuple[int, Outcome], None]:
        """Each call's outcome as it finishes: recorded ones first, then the one to run
        inline, or the several to run side by side. A pause is raised once every call that
        could go on has finished."""
        log = run.log
        todo: list[int] = []
        for k in range(len(calls)):
            known = None if log is None else recorded_outcome(log, n, k)
            if known is not None:
                yield k, known
            else:
                todo.append(k)
        if not todo:
            return
        deadline = run.deadline(self.max_seconds)
        if len(todo) == 1:
            k = todo[0]
            try:
                async with _deadline(deadline):
                    outcome = await self._call(run, n, k, calls[k], refused, concluding, False)
            except TimeoutError:
                outcome = self._timed_out(run, n, k, calls[k])
            yield k, outcome
            return
        tasks = {
            asyncio.ensure_future(self._call(run, n, k, calls[k], refused, concluding, True)): k
            for k in todo
        }
        pauses: list[Any] = []
        try:
            pending = set(tasks)
            while pending:
                timeout = None if deadline is None else max(0.0, deadline - _now())
                done, pending = await asyncio.wait(
                    pending, timeout=timeout, return_when=asyncio.FIRST_COMPLETED
                )
                if not done:  # the time limit: what still runs gets an error result
                    for task in pending:
                        task.cancel()
                    for task in pending:
                        k = tasks[task]
                        yield k, self._timed_out(run, n, k, calls[k])
                    return
                for task in sorted(done, key=tasks.__getitem__):
                    exc = task.exception()
                    if isinstance(exc, Interrupt):
                        pauses.extend(exc.pauses)
                    elif exc is not None:
                        raise exc
                    else:
                        yield tasks[task], task.result()
        finally:
            for task in tasks:
                if not task.done():
                    task.cancel()
        if pauses:
            raise Interrupt(tuple(pauses))

    async def _call(
        self,
        run: _Run,
        n: int,
        k: int,
        call: ToolCall,
        refused: Mapping[int, Outcome],
        concluding: bool,
        threaded: bool,
    ) -> Outcome:
        """Run call ``k`` of reply ``n`` (or refuse it) and record its outcome."""
        log = run.log
        outcome = refused.get(k) or self.tools.check(call, only=FINISH if concluding else None)
        if log is None:
            if outcome is None:
                outcome = await self.tools.run(call, threaded=threaded)
            return outcome
        started = time.time()
        if outcome is None:
            with pausing(Asking(log, tool_unit(n, k), call.name)):
                outcome = await self.tools.run(call, threaded=threaded)
        record_outcome(log, n, k, call, outcome, started)
        return outcome

    def _timed_out(self, run: _Run, n: int, k: int, call: ToolCall) -> Outcome:
        run.timed_out = True
        outcome = error(
            f"{call.name} did not finish before the run's time limit ({self.max_seconds} s)",
            "failed",
        )
        if run.log is not None:
            record_outcome(run.log, n, k, call, outcome, time.time())
        return outcome

    def _limit(self, run: _Run, n: int) -> ToolAgentStopReason | None:
        """The limit that stops the run before model call ``n``, if one does."""
        if n > self.max_iterations:
            return "max_iterations"
        if self.max_tokens is not None and run.spent >= self.max_tokens:
            return "max_tokens"
        if run.timed_out or (self.max_seconds is not None and run.elapsed() >= self.max_seconds):
            return "max_time"
        return None

    def _near_end(self, run: _Run, n: int) -> bool:
        """Whether model call ``n`` is in the conclusion stage: the last call allowed, or
        past 90% of the token or time budget."""
        if n >= self.max_iterations:
            return True
        if self.max_tokens is not None and run.spent >= CONCLUSION_SHARE * self.max_tokens:
            return True
        return self.max_seconds is not None and (
            run.elapsed() >= CONCLUSION_SHARE * self.max_seconds
        )

    def _end(self, run: _Run, stop: ToolAgentStopReason, iterations: int) -> ToolAgentResult:
        """The run's result; a recorded run is marked completed with it (once)."""
        result = self._result(run, stop, iterations)
        if run.log is not None and run.done is None:
            run.log.complete(
                {"answer": result.answer, "stop_reason": stop, "iterations": iterations}
            )
        return result

    def _result(self, run: _Run, stop: ToolAgentStopReason, iterations: int) -> ToolAgentResult:
        answer = run.answer
        if answer is None and run.done is not None:
            recorded = run.done.get("answer")
            answer = recorded if isinstance(recorded, str) else None
        if answer is None and stop not in ("answered", "finished"):
            answer = run.last_text
        return ToolAgentResult(
            answer=answer,
            stop_reason=stop,
            messages=tuple(run.messages),
            usage=run.usage,
            iterations=iterations,
            run_id=None if run.log is None else run.log.run_id,
            tool_calls=run.tool_calls,
            failed_calls=run.failed_calls,
            rejected_calls=run.rejected_calls,
        )

    def __repr__(self) -> str:
        tools = ", ".join(self.tools.names)
        return f"<ToolAgent {self.name!r} tools=[{tools}]>"


@dataclass(slots=True, kw_only=True)
class _Run:
    """What one run of the loop keeps track of."""

    log: RunLog | None
    """The run's records (None: a run without a run id records nothing)."""
    messages: list[ChatMessage]
    done: Mapping[str, Any] | None
    """The recorded output of a run that had ended (replayed, nothing is called)."""
    usage: Usage | None = None
    spent: int = 0
    answer: str | None = None
    last_text: str | None = None
    concluding: bool = False
    timed_out: bool = False
    tool_calls: int = 0
    failed_calls: int = 0
    rejected_calls: int = 0
    clock: tuple[float, float] = field(default_factory=lambda: (0.0, _now()))
    """The run's seconds at the last replayed reply, and when it was replayed."""

    def elapsed(self) -> float:
        base, since = self.clock
        return base + _now() - since

    def replayed(self, elapsed: float) -> None:
        self.clock = (elapsed, _now())

    def deadline(self, max_seconds: float | None) -> float | None:
        """The loop time at which the run's seconds run out (None: no time limit)."""
        if max_seconds is None:
            return None
        base, since = self.clock
        return since + max_seconds - base

    def add_usage(self, usage: Usage | None) -> None:
        if usage is None:
            return
        self.usage = usage if self.usage is None else self.usage + usage
        if usage.total_tokens is not None:
            self.spent += usage.total_tokens
        else:
            self.spent += (usage.input_tokens or 0) + (usage.output_tokens or 0)

    def count(self, outcome: Outcome) -> None:
        self.tool_calls += 1
        problem = outcome.problem
        if problem == "failed":
            self.failed_calls += 1
        elif problem is not None:
            self.rejected_calls += 1


def _deadline(when: float | None) -> contextlib.AbstractAsyncContextManager[Any]:
    """``asyncio.timeout_at`` on the monotonic clock, or nothing without a deadline."""
    if when is None:
        return contextlib.nullcontext()
    return asyncio.timeout_at(asyncio.get_running_loop().time() + when - _now())


def _normalized(
    calls: tuple[ToolCall, ...], limit: int
) -> tuple[tuple[ToolCall, ...], dict[int, Outcome]]:
    """The calls as the conversation keeps them (a repeated id renamed, so that every
    result answers one call), and the error results of those refused for it."""
    refused: dict[int, Outcome] = {}
    seen: set[str] = set()
    out = list(calls)
    for k, call in enumerate(calls):
        if call.id in seen:
            out[k] = replace(call, id=f"{call.id}~{k}")
            refused[k] = error(
                f"the call id {call.id[:80]!r} was used by another call of this reply, so "
                "this call was not run; give each call its own id",
                "duplicate_id",
            )
        elif k >= limit:
            refused[k] = error(
                f"this reply has {len(calls)} tool calls and at most {limit} run; this one "
                "did not: call it again in your next reply if it is still needed",
                "too_many_calls",
            )
        seen.add(out[k].id)
    return tuple(out), refused


def _task_messages(task: str | Sequence[ChatMessage]) -> list[ChatMessage]:
    """The caller's task as the messages after the system prompt."""
    if isinstance(task, str):
        if not task.strip():
            raise AgentBuildError("the task is empty: pass the user's request as text")
        return [ChatMessage.user(task)]
    if isinstance(task, ChatMessage | Mapping) or not isinstance(task, Sequence):
        raise AgentBuildError(
            f"task={task!r:.80}: expected the user's request as text, or a list of "
            "ChatMessages (the conversation so far)"
        )
    messages: list[ChatMessage] = []
    for index, message in enumerate(task):
        if not isinstance(message, ChatMessage):
            raise AgentBuildError(
                f"task[{index}] is a {type(message).__name__}; a conversation is a list of "
                "ChatMessage (ChatMessage.user(text), ...)"
            )
        if message.role == "system":
            raise AgentBuildError(
                f"task[{index}] is a system message; give it as system_prompt= (a preamble "
                "to weft's own section on tools and memory)"
            )
        messages.append(message)
    if not any(m.role == "user" for m in messages):
        raise AgentBuildError("the conversation has no user message: nothing to work on")
    return messages


def _check_count(name: str, value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise AgentBuildError(f"{name}={value!r}: expected a whole number >= 1")
