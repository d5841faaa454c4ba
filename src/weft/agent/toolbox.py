"""The tools an agent's loop offers its model, and how one tool call of the model is
answered: the one way for the ``ToolAgent`` and the executors of ``weft.plan`` alike.

An agent has the caller's tools, the memory tools (unless ``memory`` is None) and its own
``LoopTool`` s (``finish``, an executor's ``finish_step``, the team's board tools ...).
A call never raises into the loop (a pause for a person excepted): an unknown tool,
arguments that are not a JSON object, arguments the tool's schema or signature refuses,
and a tool that raises all come back as an error result (``{"ok": false, "error": ...}``)
that says what to do instead, with the reason counted. Inside ``offload_to(X)`` a caller
tool runs on ``X`` (``weft.graph.offload``); its arguments are checked, and its result
made JSON, here.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any, Final, Literal, TypeAlias

from weft.agent.tool_types import RejectedCall
from weft.calls import Tool, tool
from weft.calls.schema import check_arguments
from weft.calls.watch import acall_tool
from weft.errors import (
    AgentBuildError,
    PauseError,
    PlanValidationError,
    ToolArgumentsError,
    WeftError,
)
from weft.graph.offload import RemoteCall, current_executor
from weft.llm import ChatMessage, ToolCall, ToolSpec, as_tool_spec
from weft.memory import AgentMemory, MemoryTool, memory_tools
from weft.memory.agent_memory import to_plain_json
from weft.store import thaw

logger: Final = logging.getLogger("weft.agent")

Handler: TypeAlias = Callable[[dict[str, Any]], Any]


@dataclass(frozen=True, slots=True, kw_only=True)
class LoopTool:
    """A tool of the loop itself, not the caller's: ``handler(arguments)`` (arguments that
    passed ``parameters``) returns the JSON result, or an awaitable of it; an error result
    is ``{"ok": false, "error": ...}``. With no handler, the loop answers the call itself
    (``finish``, ``finish_step``): running it only checks the arguments."""

    name: str
    description: str
    parameters: Mapping[str, Any] = field(default_factory=lambda: {"type": "object"})
    handler: Handler | None = None


FINISH: Final = "finish"
"""The name of the tool the model calls with its answer (the only one offered when the
budget is nearly spent)."""

FINISH_TOOL: Final = LoopTool(
    name=FINISH,
    description=(
        "End the work and give your final answer. Call it once, with the whole answer "
        "in `answer`; when it is the only tool offered, call it now with the best answer "
        "you have."
    ),
    parameters={
        "type": "object",
        "properties": {"answer": {"type": "string", "description": "Your final answer."}},
        "required": ["answer"],
        "additionalProperties": False,
    },
)
FINISH_SPEC: Final = as_tool_spec(FINISH_TOOL)

MAX_ERROR_CHARS: Final = 2000
"""How much of a tool's exception message the model reads."""

Problem: TypeAlias = RejectedCall | Literal["failed"]


@dataclass(frozen=True, slots=True)
class Outcome:
    """What the model reads back for one call: the tool message's ``content``, whether it
    is an error, and why (``problem``: a rejection, ``failed`` for a tool that raised)."""

    content: str
    is_error: bool = False
    problem: Problem | None = None

    def to_message(self, call: ToolCall) -> ChatMessage:
        """The tool message that answers ``call``."""
        return ChatMessage(
            role="tool",
            content=self.content,
            tool_call_id=call.id,
            name=call.name,
            is_error=self.is_error,
        )

    def to_record(self) -> dict[str, Any]:
        """The outcome as JSON, to keep in a run's records (``from_record`` reads it)."""
        return {"content": self.content, "is_error": self.is_error, "problem": self.problem}

    @classmethod
    def from_record(cls, record: Mapping[str, Any]) -> Outcome:
        return cls(record["content"], bool(record["is_error"]), record["problem"])


def error(message: str, problem: Problem) -> Outcome:
    """An error result for the model (JSON ``{"ok": false, "error": message}``)."""
    return Outcome(json.dumps({"ok": False, "error": message}, ensure_ascii=False), True, problem)


def as_agent_tool(item: object, where: str) -> Tool | MemoryTool:
    """One entry of ``tools=``: a ``Tool``, a memory tool, or a plain function (made a Tool
    named after it, described by its docstring)."""
    if isinstance(item, Tool | MemoryTool):
        return item
    if callable(item):
        try:
            return tool(item)
        except PlanValidationError as exc:
            raise AgentBuildError(f"{where}: {exc}") from None
    raise AgentBuildError(
        f"{where} is {item!r:.80}: expected a weft.calls.Tool, a function (made a tool named "
        "after it) or a memory tool"
    )


class AgentTools:
    """The memory tools (unless ``memory`` is None), the caller's ``tools`` (only those
    named in ``allowed``, when given) and the loop's own tools (``builtins``), as one model
    sees them. A mistake in them (a tool that cannot run, two of one name, a name of a
    built-in tool, an allowed tool not given) raises ``error``: ``AgentBuildError`` unless
    told (an executor's is ``ExecutorError``)."""

    __slots__ = ("_builtin", "_caller", "_memory", "_names", "source", "specs")

    def __init__(
        self,
        tools: Iterable[object],
        *,
        memory: AgentMemory | None,
        source: str,
        allowed: Sequence[str] | None = None,
        builtins: Iterable[LoopTool] = (),
        error: type[WeftError] = AgentBuildError,
    ) -> None:
        if isinstance(tools, str | bytes | Mapping | Tool) or not isinstance(tools, Iterable):
            raise error(
                f"tools={tools!r:.80}: expected a list of tools (weft.calls.Tool objects or "
                "plain functions); one tool is a list of one"
            )
        self.source = source
        self._memory: dict[str, MemoryTool] = {}
        if memory is not None:
            self._memory = {t.name: t for t in memory_tools(memory, source=source)}
        self._builtin = {t.name: t for t in builtins}
        reserved = [*self._memory, *self._builtin]
        given = _given(tools, error)
        if allowed is not None:
            if unknown := [name for name in allowed if name not in given]:
                raise error(
                    f"{source}: it may use the tools {', '.join(unknown)}, which it was not "
                    f"given (it has: {', '.join(given) or 'none'}); pass them in tools="
                )
            given = {name: given[name] for name in allowed}
        self._caller: dict[str, Tool] = {}
        for name, (index, made) in given.items():
            if name in reserved:
                raise error(
                    f"tools[{index}] is named {name!r}, the name of a built-in tool of the "
                    f"agent ({', '.join(reserved)}); rename it"
                )
            if isinstance(made, MemoryTool):
                self._memory[name] = made  # a memory tool over another memory, say
                continue
            if made.fn is None:
                raise error(f"tool {name!r} has no function to run; give it fn=")
            if made.isolated:
                raise error(
                    f"tool {name!r} is isolated (a module of a plan, run in its own clean "
                    "room); an agent calls its tools directly: give a plain tool"
                )
            self._caller[name] = made
        self._names = (*self._memory, *self._caller, *self._builtin)
        offered: list[Any] = [*self._memory.values(), *self._caller.values()]
        offered.extend(self._builtin.values())
        self.specs: tuple[ToolSpec, ...] = tuple(as_tool_spec(t) for t in offered)
        """Every tool, in the order of ``names``."""

    @property
    def names(self) -> tuple[str, ...]:
        """The names of the tools: memory, the caller's, the loop's own."""
        return self._names

    def known(self, name: str) -> bool:
        return name in self._caller or name in self._memory or name in self._builtin

    def is_caller(self, name: str) -> bool:
        """Whether ``name`` is one of the caller's tools (not a memory or loop tool)."""
        return name in self._caller

    def is_blocking(self, name: str) -> bool:
        """Whether the tool may block (a sync caller tool with ``blocking=True``): run on a
        worker thread when other calls run beside it."""
        found = self._caller.get(name)
        return found is not None and found.blocking and not _is_async(found.fn)

    def check(self, call: ToolCall, *, only: str | None = None) -> Outcome | None:
        """The error result for a call refused before running, or None to run it.
        ``only``: the one tool offered now (the budget is nearly spent)."""
        name = call.name
        if not self.known(name):
            shown = only if only is not None else ", ".join(self._names)
            return error(
                f"there is no tool named {name[:100]!r}; the tools are: {shown}", "unknown_tool"
            )
        if only is not None and name != only:
            return error(
                f"{name} is not available now: the budget is nearly spent and {only} is the "
                f"only tool left; call {only} with your answer",
                "not_offered",
            )
        if call.parse_error is not None:
            return error(
                f"{name}: {call.parse_error}; send the arguments as one JSON object",
                "bad_arguments",
            )
        return None  # the arguments are checked as the tool runs

    async def answer(self, call: ToolCall, *, only: str | None = None) -> Outcome:
        """``check`` the call, then ``run`` it if it passed."""
        return self.check(call, only=only) or await self.run(call)

    async def run(self, call: ToolCall, *, threaded: bool = False) -> Outcome:
        """Run a call that passed ``check``: the tool's result as the model will read it.
        ``threaded``: a blocking tool runs on a worker thread."""
        name = call.name
        builtin = self._builtin.get(name)
        if builtin is not None:
            return await _run_builtin(builtin, call)
        memory = self._memory.get(name)
        if memory is not None:
            result = memory(dict(call.arguments), source=self.source)
            return Outcome(_json(result), result.get("ok") is False)
        caller = self._caller[name]
        fn = caller.fn
        assert fn is not None  # refused when the agent was built
        try:  # the one argument check of a tool: its schema, then its types
            kwargs = caller.check_arguments(_plain(call.arguments))
        except ToolArgumentsError as exc:
            return error(str(exc), "invalid_arguments")
        try:
            executor = current_executor()
            if executor is not None:  # inside ``offload_to``: the call runs there
                remote = RemoteCall(name, fn, (), kwargs)
                value = await acall_tool(name, call.id, executor.call, remote)
            elif threaded and self.is_blocking(name):
                value = await acall_tool(name, call.id, asyncio.to_thread, partial(fn, **kwargs))
            else:
                value = await acall_tool(name, call.id, partial(fn, **kwargs))
        except PauseError:
            raise  # interrupt() in a run without a run id: the developer's to fix, not the model's
        except Exception as exc:
            logger.info("tool %s raised %s: %s", name, type(exc).__name__, exc)
            text = str(exc)
            if len(text) > MAX_ERROR_CHARS:
                text = text[:MAX_ERROR_CHARS] + " ..."
            return error(f"{name} failed: {type(exc).__name__}: {text}", "failed")
        if isinstance(value, str):
            return Outcome(value)
        try:
            return Outcome(_json(to_plain_json(value)))
        except (TypeError, ValueError, RecursionError) as exc:
            return error(
                f"{name} returned a value that is not JSON ({exc}); it cannot be shown",
                "failed",
            )


def _given(tools: Iterable[object], error: type[WeftError]) -> dict[str, tuple[int, Any]]:
    """The caller's tools by name, with their place in ``tools=``."""
    given: dict[str, tuple[int, Any]] = {}
    for index, item in enumerate(tools):
        try:
            made = as_agent_tool(item, f"tools[{index}]")
        except AgentBuildError as exc:
            raise error(str(exc)) from None
        if made.name in given:
            raise error(
                f"two tools are named {made.name!r}; a model calls tools by name, so each "
                "name is given once"
            )
        given[made.name] = (index, made)
    return given


async def _run_builtin(builtin: LoopTool, call: ToolCall) -> Outcome:
    try:
        arguments = check_arguments(builtin.name, builtin.parameters, _plain(call.arguments))
    except ToolArgumentsError as exc:
        return error(str(exc), "invalid_arguments")
    if builtin.handler is None:
        return Outcome('{"ok": true}')  # the loop answers it
    result = builtin.handler(arguments)
    if inspect.isawaitable(result):
        result = await result
    is_error = isinstance(result, Mapping) and result.get("ok") is False
    return Outcome(_json(to_plain_json(result)), is_error)


def _plain(arguments: Mapping[str, Any]) -> dict[str, Any]:
    """A plain copy of the arguments, for the tool to keep or change (a reply read back
    from the store holds frozen ones; the model's own are kept as it sent them)."""
    thawed: dict[str, Any] = thaw(dict(arguments))
    return thawed


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, allow_nan=False)


def _is_async(fn: Any) -> bool:
    return inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(
        getattr(fn, "__call__", None)  # noqa: B004 (an object with an async __call__)
    )
