"""``Call``, ``Tool`` and ``Plan``: tool calls linked by references into a data-flow graph.

A call is the seed's JSON form: ``{"_tool": "fetchUserProfile", "userId":
"†state.currentUser.id", "_outputPath": "†state.profile"}``; the other meta properties
are ``_instance`` (which instance's state it works on, see ``weft.refs.instancing``),
``_imports`` (what an isolated module sees, see ``weft.refs.imports``) and ``_id`` (a
name for the call; default ``<index>.<tool>``). Every other key is an argument. A plan
is a list of calls; their order is not their schedule: references and output paths are.

``Plan.validate(tools)`` finds every problem before anything runs (``weft.refs.
validate``); ``Plan.run`` executes the plan on the WorkGraph engine, independent calls
concurrently (``weft.plan.runner``: the one place ``weft.refs`` reaches below itself,
imported when ``run`` is called, so ``import weft.refs`` never loads the engine);
``Plan.simulate`` runs it on the tools' output examples, calling no tool and changing
no store (``weft.refs.execute``).

>>> from weft.store import Store
>>> store = Store()
>>> _ = store.write("state", "currentUser", {"id": 7})
>>> profiles = Tool(name="fetchUserProfile", fn=lambda userId: {"id": userId, "name": "Ada"})
>>> plan = Plan([{"_tool": "fetchUserProfile", "userId": "†state.currentUser.id",
...               "_outputPath": "†state.profile"}])
>>> plan.run([profiles], store=store).results["0.fetchUserProfile"]
{'id': 7, 'name': 'Ada'}
>>> store.value("state", "profile")["name"]
'Ada'
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final, TypeAlias

from weft.errors import PlanValidationError
from weft.refs.schemas import schema_error
from weft.store import Store

if TYPE_CHECKING:
    from weft.refs.dataflow import CompiledPlan

META_KEYS: Final = ("_tool", "_outputPath", "_instance", "_imports", "_id")
EVERY_INSTANCE: Final = "*"
_OPEN_OBJECT: Final[Mapping[str, Any]] = {"type": "object"}


@dataclass(frozen=True, slots=True, kw_only=True)
class Tool:
    """A tool a plan (or an executor's model) can call.

    ``fn`` is called with the resolved arguments as keywords (sync or async).
    ``parameters`` is the JSON Schema of the arguments; a ``_outputPath`` property in it
    says which output paths a call may use (``{"type": "string"}``: any; ``const``,
    ``enum`` or ``oneOf`` of consts: only those, and a ``const`` is the default).
    ``output_examples`` are what ``Plan.simulate`` returns instead of calling ``fn``.
    ``isolated=True`` makes the tool a module: it gets ``store=`` a clean room holding
    only what the call's ``_imports`` name (``weft.refs.imports``).

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
        plan: Plan,
        tools: ToolsLike,
        *,
        description: str = "",
        parameters: Mapping[str, Any] | None = None,
    ) -> Tool:
        """A sub-plan as an isolated module: its arguments become ``input:<name>`` in the
        clean room, it runs there, and its ``output`` is the tool's result."""

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


ToolsLike: TypeAlias = Mapping[str, "Tool | Callable[..., Any]"] | Sequence[Tool]


def as_tools(tools: ToolsLike) -> dict[str, Tool]:
    """Tools by name, from a list of ``Tool`` s or a mapping of names to tools or functions."""
    if isinstance(tools, Mapping):
        out: dict[str, Tool] = {}
        for name, tool in tools.items():
            if isinstance(tool, Tool):
                if tool.name != name:
                    raise PlanValidationError(
                        f"the tool {tool.name!r} is given under the name {name!r}; use one name"
                    )
                out[name] = tool
            elif callable(tool):
                out[name] = Tool(name=name, fn=tool)
            else:
                raise PlanValidationError(f"tool {name!r} is {tool!r}: give a Tool or a function")
        return out
    found: dict[str, Tool] = {}
    for tool in tools:
        if not isinstance(tool, Tool):
            raise PlanValidationError(
                f"{tool!r} is not a weft.refs.Tool; give Tool(name=..., fn=...) or a mapping "
                "{name: function}"
            )
        if tool.name in found:
            raise PlanValidationError(f"two tools are named {tool.name!r}; names are unique")
        found[tool.name] = tool
    return found


@dataclass(frozen=True, slots=True, kw_only=True)
class Call:
    """One tool call of a plan, in the seed's JSON form (``Call.from_json``)."""

    tool: str
    arguments: Mapping[str, Any] = field(default_factory=dict)
    output_path: str | None = None
    instance: str | tuple[str, ...] | None = None
    imports: tuple[str, ...] | None = None
    id: str | None = None

    @classmethod
    def from_json(cls, data: Mapping[str, Any] | str) -> Call:
        """A call from its JSON object (or its text)."""
        if isinstance(data, str):
            try:
                data = json.loads(data)
            except ValueError as exc:
                raise PlanValidationError(f"a call's JSON does not parse: {exc}") from None
        if not isinstance(data, Mapping):
            raise PlanValidationError(
                f"a call is a JSON object with a '_tool', not a {type(data).__name__}"
            )
        tool = data.get("_tool")
        if not isinstance(tool, str) or not tool:
            raise PlanValidationError(
                f"a call needs '_tool': the name of the tool to call (got {tool!r} in "
                f"{json.dumps(data, default=str)[:120]})"
            )
        instance = data.get("_instance")
        imports = data.get("_imports")
        return cls(
            tool=tool,
            arguments={k: v for k, v in data.items() if k not in META_KEYS},
            output_path=data.get("_outputPath"),
            instance=tuple(instance) if isinstance(instance, list) else instance,
            imports=None if imports is None else tuple(imports),
            id=data.get("_id"),
        )

    def to_json(self) -> dict[str, Any]:
        """The seed's JSON form."""
        out: dict[str, Any] = {"_tool": self.tool, **self.arguments}
        if self.output_path is not None:
            out["_outputPath"] = self.output_path
        if self.instance is not None:
            out["_instance"] = (
                list(self.instance) if isinstance(self.instance, tuple) else self.instance
            )
        if self.imports is not None:
            out["_imports"] = list(self.imports)
        if self.id is not None:
            out["_id"] = self.id
        return out


@dataclass(frozen=True, slots=True, kw_only=True)
class PlanResult:
    """What a run (or a simulation) of a plan produced.

    ``results`` maps each call's id (``<id>@<instance>`` for an instance's call) to the
    value written to its output path (the tool's result); ``store`` is the store the run
    wrote (for a simulation, a throwaway fork); ``instances`` each instance's store;
    ``output`` the plan's ``output`` reference resolved at the end, or else the result
    of the plan's last call (its last instance's, for a call over several).
    """

    results: Mapping[str, Any]
    store: Store
    instances: Mapping[str, Store]
    output: Any
    run_id: str | None = None
    simulated: bool = False


class Plan(Sequence[Call]):
    """A list of calls, validated as a whole and run as a data-flow graph.

    ``state_schema`` is the JSON Schema of the state (its ``properties`` are the state
    fields): ``||`` output paths pick the first alternative it accepts, and writes to
    state are checked against it. ``output`` is a reference read at the end of a run
    (``PlanResult.output``).
    """

    __slots__ = ("_calls", "output", "state_schema")

    def __init__(
        self,
        calls: Iterable[Call | Mapping[str, Any]],
        *,
        state_schema: Mapping[str, Any] | None = None,
        output: str | None = None,
    ) -> None:
        self._calls = tuple(c if isinstance(c, Call) else Call.from_json(c) for c in calls)
        self.state_schema = state_schema
        self.output = output
        if state_schema is not None:
            problem = schema_error(state_schema)
            if problem is not None:
                raise PlanValidationError(f"the plan's state_schema is not valid: {problem}")

    @classmethod
    def from_json(cls, data: str | Sequence[Mapping[str, Any]], **options: Any) -> Plan:
        """A plan from its JSON list of calls (or the text of it)."""
        if isinstance(data, str):
            try:
                data = json.loads(data)
            except ValueError as exc:
                raise PlanValidationError(f"the plan's JSON does not parse: {exc}") from None
        if not isinstance(data, list):
            raise PlanValidationError("a plan is a JSON list of calls")
        return cls(data, **options)

    def to_json(self) -> list[dict[str, Any]]:
        return [call.to_json() for call in self._calls]

    def __len__(self) -> int:
        return len(self._calls)

    def __iter__(self) -> Iterator[Call]:
        return iter(self._calls)

    def __getitem__(self, index: Any) -> Any:
        return self._calls[index]

    def __repr__(self) -> str:
        return f"<Plan calls={len(self._calls)}>"

    # ---------------------------------------------------------------- the work

    def validate(
        self,
        tools: ToolsLike,
        *,
        store: Store | None = None,
        inputs: Mapping[str, Any] | None = None,
        instances: InstancesLike = None,
    ) -> CompiledPlan:
        """Check the whole plan; raise ``PlanValidationError`` listing every problem, or
        return the compiled data-flow graph that ``run`` and ``simulate`` execute.

        ``store`` and ``inputs`` are what exists before the run (reads of anything else
        must be written by some call); ``instances`` as for ``run``.
        """
        from weft.refs.validate import compile_plan

        return compile_plan(self, as_tools(tools), store=store, inputs=inputs, instances=instances)

    def run(self, tools: ToolsLike, **options: Any) -> PlanResult:
        """Validate, then run on the WorkGraph engine; see ``weft.plan.runner.run_plan``
        for the options (``store``, ``inputs``, ``instances``, ``merge_instances``,
        ``run_id``, ``durable``, ``max_concurrency``)."""
        from weft.plan.runner import run_plan

        return run_plan(self, tools, **options)

    async def arun(self, tools: ToolsLike, **options: Any) -> PlanResult:
        """The async core of ``run``."""
        from weft.plan.runner import arun_plan

        return await arun_plan(self, tools, **options)

    def simulate(
        self,
        tools: ToolsLike,
        *,
        store: Store | None = None,
        inputs: Mapping[str, Any] | None = None,
        instances: InstancesLike = None,
    ) -> PlanResult:
        """Run the plan on the tools' ``output_examples`` (calling no tool) on a fork of
        ``store``, which is left unchanged; references, output paths and schemas are
        checked as a run would."""
        from weft.refs.execute import simulate

        compiled = self.validate(tools, store=store, inputs=inputs, instances=instances)
        return simulate(compiled, store=store)


InstancesLike: TypeAlias = Sequence[str] | Mapping[str, Mapping[str, Any]] | None
