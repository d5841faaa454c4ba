"""``Tool``: a function a plan (or an executor's model) can call, with the JSON Schema of
its arguments; ``@tool`` makes one from a function."""

from __future__ import annotations

import importlib
import inspect
import sys
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Final, Protocol, TypeAlias, overload

from weft.calls.docstrings import parse_docstring
from weft.calls.schema import Binder, check_arguments, check_tool_name, infer
from weft.calls.strict import strict_schema
from weft.errors import PlanValidationError, ToolDefinitionError
from weft.refs.schemas import schema_error
from weft.store import Store

_OPEN_OBJECT: Final[Mapping[str, Any]] = {"type": "object"}
_INFER: Final[Mapping[str, Any]] = MappingProxyType({})
"""The default of ``Tool.parameters``: infer them from ``fn``."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Tool:
    """A tool a plan (or an executor's model) can call.

    ``fn`` is called with the checked arguments as keywords (sync or async).
    ``parameters`` is the JSON Schema of the arguments; without it, it is inferred from
    ``fn`` 's signature (type hints, defaults, ``Annotated`` descriptions) and
    ``description`` from its docstring, whose ``Args:`` lines describe the arguments
    (``weft.calls.schema``). Given ones win over inferred ones. A ``_outputPath``
    property in ``parameters`` says which output paths a call may use (a prescribed
    ``const`` is the default).
    ``strict=True`` offers the schema to models in OpenAI's strict form
    (``strict_parameters``); the arguments are still checked against ``parameters``.
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
    parameters: Mapping[str, Any] = field(default_factory=lambda: _INFER)
    output_examples: tuple[Any, ...] = ()
    isolated: bool = False
    blocking: bool = True
    strict: bool = False
    arguments_schema: Mapping[str, Any] = field(init=False, repr=False, compare=False)
    output_path_schema: Mapping[str, Any] | None = field(init=False, repr=False, compare=False)
    strict_parameters: Mapping[str, Any] | None = field(init=False, repr=False, compare=False)
    _binder: Binder | None = field(init=False, repr=False, compare=False)
    _given: tuple[str, Mapping[str, Any] | None] = field(init=False, repr=False, compare=False)
    _method: bool = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        check_tool_name(self.name)
        given = None if self.parameters is _INFER or self.parameters is None else self.parameters
        object.__setattr__(self, "_given", (self.description, given))
        fn, method = _unwrap(self.fn)
        object.__setattr__(self, "fn", fn)
        object.__setattr__(self, "_method", method)
        if fn is not None and not callable(fn):
            raise ToolDefinitionError(
                f"tool {self.name!r}: fn={fn!r:.80} is not callable", tool=self.name
            )
        examples = self.output_examples
        if not isinstance(examples, tuple):
            if isinstance(examples, (str, bytes, Mapping)) or not isinstance(examples, Iterable):
                raise ToolDefinitionError(
                    f"tool {self.name!r}: output_examples={examples!r:.60} is a "
                    "list of example results (one example is a list of one)",
                    tool=self.name,
                )
            object.__setattr__(self, "output_examples", tuple(examples))
        binder = None
        if fn is not None and given is None:
            skip = ("store",) if self.isolated else ()
            inferred = infer(fn, tool=self.name, skip=skip, method=method)
            object.__setattr__(self, "parameters", inferred.parameters)
            binder = inferred.binder
            if not self.description:
                object.__setattr__(self, "description", inferred.description)
        elif fn is not None and not self.description:
            prose, _ = parse_docstring(inspect.getdoc(fn))
            object.__setattr__(self, "description", prose)
        if given is None and self.fn is None:
            object.__setattr__(self, "parameters", dict(_OPEN_OBJECT))
        object.__setattr__(self, "_binder", binder)
        problem = schema_error(self.parameters)
        if problem is not None:
            raise ToolDefinitionError(
                f"tool {self.name!r}: its parameters are not a valid JSON Schema ({problem}); "
                "give an object schema such as {'type': 'object', 'properties': {...}}",
                tool=self.name,
            )
        properties = self.parameters.get("properties")
        out_schema = properties.get("_outputPath") if isinstance(properties, Mapping) else None
        args_schema: Mapping[str, Any] = self.parameters  # shared: one validator per schema
        if isinstance(properties, Mapping) and "_outputPath" in properties:
            args_schema = dict(self.parameters)
            args_schema["properties"] = {k: v for k, v in properties.items() if k != "_outputPath"}
            required = args_schema.get("required")
            if isinstance(required, list) and "_outputPath" in required:
                args_schema["required"] = [r for r in required if r != "_outputPath"]
        object.__setattr__(self, "arguments_schema", args_schema)
        object.__setattr__(
            self, "output_path_schema", out_schema if isinstance(out_schema, Mapping) else None
        )
        strict_form = None
        if self.strict:
            try:
                strict_form = strict_schema(self.parameters)
            except ToolDefinitionError as exc:
                raise ToolDefinitionError(
                    f"tool {self.name!r}: strict=True, but {exc}", tool=self.name
                ) from None
        object.__setattr__(self, "strict_parameters", strict_form)

    def check_arguments(
        self, arguments: Mapping[str, Any], *, schema_checked: bool = False
    ) -> dict[str, Any]:
        """The keyword arguments ``fn`` is called with: ``arguments`` checked against the
        schema and converted to the types ``fn`` declares (a dict becomes the pydantic
        model, dataclass or Enum member its hint names). Refused arguments are a
        ``ToolArgumentsError`` naming the tool, each argument at fault and what it
        expected. ``schema_checked=True`` skips the schema check (a plan checked its
        literal arguments when it was built) and only converts."""
        return check_arguments(
            self.name,
            self.arguments_schema,
            arguments,
            strict=self.strict,
            binder=self._binder,
            schema_checked=schema_checked,
        )

    async def acall(self, arguments: Mapping[str, Any], **injected: Any) -> Any:
        """Check ``arguments`` (``check_arguments``) and call ``fn`` with them (and
        ``injected``, such as an isolated tool's ``store``), awaiting an async ``fn``.
        Refused arguments raise before ``fn`` runs; what ``fn`` raises propagates."""
        if self.fn is None:
            raise ToolDefinitionError(
                f"tool {self.name!r} has no function to run; give Tool(fn=...)", tool=self.name
            )
        if self._method:
            raise ToolDefinitionError(
                f"tool {self.name!r} is a method: call it through an instance "
                f"(obj.{getattr(self.fn, '__name__', self.name)}), which binds it",
                tool=self.name,
            )
        kwargs = self.check_arguments(arguments)
        result = self.fn(**kwargs, **injected)
        if inspect.isawaitable(result):
            result = await result
        return result

    def __get__(self, instance: object, owner: type | None = None) -> Tool:
        """A tool made from a method, read through an instance: the same tool, bound."""
        if not self._method or self.fn is None or instance is None:
            return self
        bound = object.__new__(Tool)
        for name in Tool.__slots__:
            object.__setattr__(bound, name, getattr(self, name))
        object.__setattr__(bound, "fn", self.fn.__get__(instance, owner))
        object.__setattr__(bound, "_method", False)
        return bound

    def __reduce__(self) -> tuple[Any, ...]:
        # A module-level @tool pickles by name (the function's own name now holds the
        # tool); any other tool is rebuilt from what it was given, re-inferring the rest.
        fn = self.fn
        module, qualname = getattr(fn, "__module__", None), getattr(fn, "__qualname__", "")
        named = None
        if isinstance(module, str) and isinstance(qualname, str) and "<" not in qualname:
            found = _lookup(module, qualname)
            if found is self:
                return (_lookup, (module, qualname))
            if isinstance(found, Tool) and found.fn is fn:  # fn's name holds its @tool
                named = (module, qualname)
        description, parameters = self._given
        given = {
            "name": self.name,
            "fn": fn if named is None else None,
            "description": description,
            "parameters": parameters,
            "output_examples": self.output_examples,
            "isolated": self.isolated,
            "blocking": self.blocking,
            "strict": self.strict,
        }
        return (_rebuild, (given, named))

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


def _unwrap(fn: Any) -> tuple[Any, bool]:
    """The function to call, and whether it is a method (its first parameter, ``self``,
    is left out of the schema and filled in when the tool is read through an instance)."""
    if isinstance(fn, staticmethod):
        return fn.__func__, False
    if isinstance(fn, classmethod):
        raise ToolDefinitionError(
            f"@tool cannot make a tool of the classmethod {fn.__func__.__qualname__!r}; "
            "make it a plain method or a staticmethod"
        )
    if not inspect.isfunction(fn):
        return fn, False
    owner, _, _ = fn.__qualname__.rpartition(".")
    in_class = bool(owner) and not owner.endswith("<locals>")
    try:
        first = next(iter(inspect.signature(fn).parameters), None)
    except ValueError:
        first = None
    return fn, in_class and first in ("self", "cls")


def _lookup(module: str, qualname: str) -> Any:
    """The object named ``qualname`` in ``module`` (None if there is none)."""
    found: Any = sys.modules.get(module)
    if found is None:
        try:
            found = importlib.import_module(module)
        except ImportError:
            return None
    for part in qualname.split("."):
        found = getattr(found, part, None)
    return found


def _rebuild(given: dict[str, Any], named: tuple[str, str] | None = None) -> Tool:
    if named is not None:  # the function, found through the @tool that holds its name
        given = {**given, "fn": _lookup(*named).fn}
    if given.get("parameters") is None:
        given = {k: v for k, v in given.items() if k != "parameters"}
    return Tool(**given)


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
    strict: bool = False,
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
    strict: bool = False,
) -> Tool | Callable[[Callable[..., Any]], Tool]:
    """A ``Tool`` from a function (sync or async, a method or a staticmethod): ``@tool``
    or ``@tool(name=..., description=..., strict=True, ...)``. It is named after the
    function; its description and the JSON Schema of its arguments are inferred from the
    docstring and signature unless given (see ``Tool``)."""

    def make(function: Callable[..., Any]) -> Tool:
        inner = function.__func__ if isinstance(function, (staticmethod, classmethod)) else None
        if not callable(function) and inner is None:
            raise ToolDefinitionError(
                f"@tool makes a tool from a function; {function!r:.80} is not callable"
            )
        own = getattr(inner or function, "__name__", None)
        if name is None and not (isinstance(own, str) and own.isidentifier()):
            raise ToolDefinitionError(
                f"@tool cannot name {function!r:.80} after itself (its __name__ is "
                f"{own!r}); give a name: @tool(name=...)"
            )
        return Tool(
            name=name if name is not None else str(own),
            fn=function,
            description=description or "",
            parameters=parameters if parameters is not None else _INFER,
            output_examples=tuple(output_examples),
            isolated=isolated,
            blocking=blocking,
            strict=strict,
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
