"""``Tool``: a function a plan (or an executor's model) can call, with the JSON Schema of
its arguments; ``@tool`` makes one from a function."""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Protocol, TypeAlias, overload

from weft.errors import PlanValidationError
from weft.refs.schemas import schema_error
from weft.store import Store

_OPEN_OBJECT: Final[Mapping[str, Any]] = {"type": "object"}


@dataclass(frozen=True, slots=True, kw_only=True)
class Tool:
    """A tool a plan (or an executor's model) can call.

    ``fn`` is called with the resolved arguments as keywords (sync or async).
    ``parameters`` is the JSON Schema of the arguments; a ``_outputPath`` property in it
    says which output paths a call may use (a prescribed ``const`` is the default).
    ``output_examples`` are what ``Plan.simulate`` returns instead of calling ``fn``.
    ``isolated=True`` makes the tool a module that gets ``store=`` its clean room.

    A sync ``fn`` runs on one of the engine's worker threads when other calls are ready
    at the same time, so blocking I/O overlaps; ``blocking=False`` says it is a quick
    function and runs it on the event loop's thread instead (no thread hop: faster for
    cheap pure functions, but it holds up every other call while it runs).
    """

    name: str
    fn: Callable[..., Any] | None = None
    description: str = ""
    parameters: Mapping[str, Any] = field(default_factory=lambda: dict(_OPEN_OBJECT))
    output_examples: tuple[Any, ...] = ()
    isolated: bool = False
    blocking: bool = True
    arguments_schema: Mapping[str, Any] = field(init=False, repr=False, compare=False)
    output_path_schema: Mapping[str, Any] | None = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise PlanValidationError(f"a tool needs a non-empty string name, got {self.name!r}")
        if self.fn is not None and not callable(self.fn):
            raise PlanValidationError(f"tool {self.name!r}: fn={self.fn!r} is not callable")
        problem = schema_error(self.parameters)
        if problem is not None:
            raise PlanValidationError(
                f"tool {self.name!r}: its parameters are not a valid JSON Schema ({problem}); "
                "give an object schema such as {'type': 'object', 'properties': {...}}"
            )
        if not isinstance(self.output_examples, tuple):
            if isinstance(self.output_examples, (str, bytes, Mapping)) or not isinstance(
                self.output_examples, Iterable
            ):
                raise PlanValidationError(
                    f"tool {self.name!r}: output_examples={self.output_examples!r:.60} is a "
                    "list of example results (one example is a list of one)"
                )
            object.__setattr__(self, "output_examples", tuple(self.output_examples))
        properties = self.parameters.get("properties")
        out_schema = properties.get("_outputPath") if isinstance(properties, Mapping) else None
        args_schema = dict(self.parameters)
        if isinstance(properties, Mapping) and "_outputPath" in properties:
            args_schema["properties"] = {k: v for k, v in properties.items() if k != "_outputPath"}
        required = args_schema.get("required")
        if isinstance(required, list) and "_outputPath" in required:
            args_schema["required"] = [r for r in required if r != "_outputPath"]
        object.__setattr__(self, "arguments_schema", args_schema)
        object.__setattr__(
            self, "output_path_schema", out_schema if isinstance(out_schema, Mapping) else None
        )

    @classmethod
    def from_plan(
        cls,
        name: str,
        plan: SubPlan,
        tools: ToolsLike,
        *,
        description: str = "",
        parameters: Mapping[str, Any] | None = None,
    ) -> Tool:
        """A sub-plan (a ``weft.calls.Plan``) as an isolated module: its arguments become
        ``input:<name>`` in the clean room, it runs there, and its ``output`` is the
        tool's result."""

        async def run_sub_plan(*, store: Store, **arguments: Any) -> Any:
            result = await plan.arun(tools, store=store, inputs=arguments)
            return result.output

        return cls(
            name=name,
            fn=run_sub_plan,
            description=description or f"the sub-plan {name!r}",
            parameters=parameters or dict(_OPEN_OBJECT),
            isolated=True,
        )


class _Outcome(Protocol):
    @property
    def output(self) -> Any: ...


class SubPlan(Protocol):
    """What ``Tool.from_plan`` runs: a ``weft.calls.Plan`` (anything with its ``arun``)."""

    def arun(
        self, tools: ToolsLike, *, store: Store, inputs: Mapping[str, Any]
    ) -> Awaitable[_Outcome]: ...


ToolsLike: TypeAlias = Mapping[str, "Tool | Callable[..., Any]"] | Sequence[Tool]


@overload
def tool(fn: Callable[..., Any], /) -> Tool: ...


@overload
def tool(
    *,
    name: str | None = None,
    description: str | None = None,
    parameters: Mapping[str, Any] | None = None,
    output_examples: Sequence[Any] = (),
    isolated: bool = False,
    blocking: bool = True,
) -> Callable[[Callable[..., Any]], Tool]: ...


def tool(
    fn: Callable[..., Any] | None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    parameters: Mapping[str, Any] | None = None,
    output_examples: Sequence[Any] = (),
    isolated: bool = False,
    blocking: bool = True,
) -> Tool | Callable[[Callable[..., Any]], Tool]:
    """A ``Tool`` from a function: ``@tool`` or ``@tool(parameters=..., ...)``, named after
    the function and described by its docstring unless told otherwise."""

    def make(function: Callable[..., Any]) -> Tool:
        if not callable(function):
            raise PlanValidationError(
                f"@tool makes a tool from a function; {function!r:.80} is not callable"
            )
        own = getattr(function, "__name__", None)
        if name is None and not (isinstance(own, str) and own.isidentifier()):
            raise PlanValidationError(
                f"@tool cannot name {function!r:.80} after itself (its __name__ is "
                f"{own!r}); give a name: @tool(name=...)"
            )
        return Tool(
            name=name if name is not None else str(own),
            fn=function,
            description=description if description is not None else inspect.getdoc(function) or "",
            parameters=parameters if parameters is not None else dict(_OPEN_OBJECT),
            output_examples=tuple(output_examples),
            isolated=isolated,
            blocking=blocking,
        )

    return make if fn is None else make(fn)


def as_tools(tools: ToolsLike) -> dict[str, Tool]:
    """Tools by name, from a list of ``Tool`` s or a mapping of names to tools or functions."""
    if isinstance(tools, Mapping):
        out: dict[str, Tool] = {}
        for name, value in tools.items():
            if isinstance(value, Tool):
                if value.name != name:
                    raise PlanValidationError(
                        f"the tool {value.name!r} is given under the name {name!r}; use one name"
                    )
                out[name] = value
            elif callable(value):
                out[name] = Tool(name=name, fn=value)
            else:
                raise PlanValidationError(f"tool {name!r} is {value!r}: give a Tool or a function")
        return out
    if isinstance(tools, (str, bytes, Tool)) or not isinstance(tools, Iterable):
        raise PlanValidationError(
            f"tools={tools!r:.80}: expected a list of weft.calls.Tool (one tool is a list of "
            "one) or a mapping {name: function}"
        )
    found: dict[str, Tool] = {}
    for item in tools:
        if not isinstance(item, Tool):
            raise PlanValidationError(
                f"{item!r} is not a weft.calls.Tool; give Tool(name=..., fn=...) or a mapping "
                "{name: function}"
            )
        if item.name in found:
            raise PlanValidationError(f"two tools are named {item.name!r}; names are unique")
        found[item.name] = item
    return found
