"""The tools a ``ToolAgent`` offers its model, and how one tool call of the model is answered.

A call never raises into the loop (a pause for a person excepted): an unknown tool,
arguments that are not a JSON object, arguments the tool's schema or signature refuses,
and a tool that raises all come back as an error result (``{"ok": false, "error": ...}``)
that says what to do instead, with the reason counted.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Final, Literal, TypeAlias

from weft.agent.tool_types import RejectedCall
from weft.calls import Tool, tool
from weft.errors import AgentBuildError, PauseError, PlanValidationError, ToolArgumentsError
from weft.llm import ToolCall, ToolSpec, as_tool_spec
from weft.memory import AgentMemory, MemoryTool, memory_tools
from weft.memory.agent_memory import to_plain_json
from weft.store import thaw

logger: Final = logging.getLogger("weft.agent")

FINISH: Final = "finish"
"""The name of the tool the model calls with its answer (the only one offered when the
budget is nearly spent)."""

FINISH_SPEC: Final = ToolSpec(
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
    """The caller's tools, the memory tools (unless ``memory`` is None) and ``finish``."""

    __slots__ = ("_caller", "_memory", "_names", "source", "specs")

    def __init__(
        self,
        tools: Iterable[object],
        *,
        memory: AgentMemory | None,
        source: str,
    ) -> None:
        if isinstance(tools, str | bytes | Mapping | Tool) or not isinstance(tools, Iterable):
            raise AgentBuildError(
                f"tools={tools!r:.80}: expected a list of tools (weft.calls.Tool objects or "
                "plain functions); one tool is a list of one"
            )
        self.source = source
        self._memory: dict[str, MemoryTool] = {}
        if memory is not None:
            self._memory = {t.name: t for t in memory_tools(memory, source=source)}
        self._caller: dict[str, Tool] = {}
        for index, item in enumerate(tools):
            made = as_agent_tool(item, f"tools[{index}]")
            name = made.name
            if name == FINISH or name in self._memory:
                raise AgentBuildError(
                    f"tools[{index}] is named {name!r}, the name of a built-in tool of the "
                    f"agent ({', '.join([*self._memory, FINISH])}); rename it"
                )
            if name in self._caller:
                raise AgentBuildError(
                    f"two tools are named {name!r}; a model calls tools by name, so each "
                    "name is given once"
                )
            if isinstance(made, MemoryTool):
                self._memory[name] = made  # a memory tool over another memory, say
                continue
            if made.fn is None:
                raise AgentBuildError(f"tool {name!r} has no function to run; give it fn=")
            if made.isolated:
                raise AgentBuildError(
                    f"tool {name!r} is isolated (a module of a plan, run in its own clean "
                    "room); a ToolAgent calls its tools directly: give a plain tool"
                )
            self._caller[name] = made
        self._names = (*self._memory, *self._caller)
        offered: list[Any] = [*self._memory.values(), *self._caller.values()]
        self.specs: tuple[ToolSpec, ...] = tuple(as_tool_spec(t) for t in offered)
        """Every tool offered while the budget lasts (``finish`` is offered at the end)."""

    @property
    def names(self) -> tuple[str, ...]:
        """The names of the tools offered while the budget lasts."""
        return self._names

    def known(self, name: str) -> bool:
        return name == FINISH or name in self._caller or name in self._memory

    def is_blocking(self, name: str) -> bool:
        """Whether the tool may block (a sync caller tool with ``blocking=True``): run on a
        worker thread when other calls run beside it."""
        found = self._caller.get(name)
        return found is not None and found.blocking and not _is_async(found.fn)

    def check(self, call: ToolCall, *, concluding: bool) -> Outcome | None:
        """The error result for a call refused before running, or None to run it."""
        name = call.name
        if not self.known(name):
            shown = FINISH if concluding else ", ".join([*self._names, FINISH])
            return error(
                f"there is no tool named {name[:100]!r}; the tools are: {shown}", "unknown_tool"
            )
        if concluding and name != FINISH:
            return error(
                f"{name} is not available now: the budget is nearly spent and {FINISH} is the "
                f"only tool left; call {FINISH} with your answer",
                "not_offered",
            )
        if call.parse_error is not None:
            return error(
                f"{name}: {call.parse_error}; send the arguments as one JSON object",
                "bad_arguments",
            )
        if name == FINISH:
            answer = call.arguments.get("answer")
            extra = sorted(set(call.arguments) - {"answer"})
            if not isinstance(answer, str) or extra:
                return error(
                    f'{FINISH} takes exactly {{"answer": "<your final answer as text>"}}',
                    "invalid_arguments",
                )
            return None
        return None  # the arguments are checked as the tool runs: Tool.check_arguments

    async def run(self, call: ToolCall, *, threaded: bool = False) -> Outcome:
        """Run a call that passed ``check``: the tool's result as the model will read it.
        ``threaded``: a blocking tool runs on a worker thread."""
        name = call.name
        if name == FINISH:
            return Outcome('{"ok": true}')
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
            if threaded and self.is_blocking(name):
                value = await asyncio.to_thread(fn, **kwargs)
            else:
                value = fn(**kwargs)
                if inspect.isawaitable(value):
                    value = await value
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
