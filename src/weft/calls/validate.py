"""Validation: each call checked alone, then the calls together (``weft.calls.dataflow``),
every problem collected into one ``PlanValidationError`` before anything runs.

Literal arguments are checked against the tool's JSON Schema here; what a reference
supplies is checked when the call runs.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping, Sequence
from typing import Any

from weft.calls.call import Call
from weft.calls.dataflow import CompiledPlan, Node, PlanProblem, analyse
from weft.calls.imports import covered, parse_import
from weft.calls.instancing import InstancesLike, instance_table, targets_of
from weft.calls.tools import Tool
from weft.errors import PlanValidationError, ReferenceSyntaxError, ValueTypeError
from weft.persist._gc import paused
from weft.refs.outputs import OutputPath
from weft.refs.parse import Reference
from weft.refs.resolve import Compiled, compile_mapping
from weft.refs.schemas import closed_choices, schema_problem, schema_problems
from weft.store import Store
from weft.store.values import check_text


def compile_plan(
    calls: Sequence[Call],
    tools: dict[str, Tool],
    *,
    state_schema: Mapping[str, Any] | None,
    output: str | None,
    store: Store | None,
    inputs: Mapping[str, Any] | None,
    instances: InstancesLike,
) -> CompiledPlan:
    """Validate the plan ``calls`` against ``tools`` and compile it (see the module
    docstring); ``state_schema`` and ``output`` are the plan's, carried along."""
    table = instance_table(instances)
    if inputs is not None and not (
        isinstance(inputs, Mapping) and all(isinstance(name, str) and name for name in inputs)
    ):
        raise PlanValidationError(
            f"inputs={inputs!r:.80}: expected a mapping of input names (non-empty strings) to "
            "values, such as {'userId': 7}; each is written as input:<name>"
        )
    problems: list[PlanProblem] = []
    with paused():  # building thousands of nodes: no cycles to find, only time to lose
        compiled = CompiledPlan(
            calls=tuple(calls),
            state_schema=state_schema,
            output=output,
            tools=tools,
            nodes=_nodes(calls, tools, table, problems),
            order=(),
            instances=table,
            inputs=dict(inputs or {}),
        )
        analyse(compiled, store, problems)
    if problems:
        unique = sorted(dict.fromkeys(problems), key=lambda p: -1 if p.index is None else p.index)
        listed = "\n".join(f"  - {p}" for p in unique)
        raise PlanValidationError(
            f"the plan has {len(unique)} problem{'s' if len(unique) != 1 else ''}; nothing "
            f"ran:\n{listed}",
            problems=tuple(unique),
        )
    return compiled


def _nodes(
    calls: Sequence[Call],
    tools: dict[str, Tool],
    known: Mapping[str, Any],
    problems: list[PlanProblem],
) -> list[Node]:
    """One node per call and instance it runs on (a call with problems gets none), each call
    checked alone; what is wrong goes to ``problems``."""
    nodes: list[Node] = []
    seen: dict[str, int] = {}
    checked: dict[tuple[int, str, str], list[str]] = {}
    for index, call in enumerate(calls):
        cid = call.id if call.id is not None else f"{index}.{call.tool}"

        def problem(message: str, index: int = index, cid: Any = cid, call: Call = call) -> None:
            shown = cid if isinstance(cid, str) else repr(cid)  # problems are hashed
            problems.append(PlanProblem(index, shown, call.tool, message))

        if not isinstance(cid, str) or not cid or "/" in cid or not _text(cid):
            problem(f"_id={cid!r}: an id is a non-empty string without '/' (and Unicode text)")
        elif cid in seen:
            problem(f"its id {cid!r} is also the id of call {seen[cid]}; ids are unique")
        seen.setdefault(str(cid), index)
        tool = tools.get(call.tool)
        if tool is None:
            close = difflib.get_close_matches(call.tool, list(tools), n=3)
            hint = f"did you mean {', '.join(close)}?" if close else "check the name"
            known_tools = ", ".join(sorted(tools)[:20]) or "none"
            problem(f"no tool is named {call.tool!r} ({hint}); the tools are: {known_tools}")
        args = _compile_arguments(call, problem)
        output = _output(call, tool, problem)
        imports = _imports(call, tool, args, problem)
        targets, trouble = targets_of(call.instance, known)
        if trouble is not None:
            problem(trouble)
        if tool is None or args is None:
            continue
        constrains = _constrains(tool.arguments_schema)
        if constrains:
            for message in _literal_problems(tool, args, checked):
                problem(
                    f"its arguments do not fit the tool's JSON Schema: {message}; fix the "
                    "argument (see the tool's parameters)"
                )
        for instance in targets:
            nodes.append(
                Node(
                    position=len(nodes),
                    index=index,
                    call=call,
                    tool=tool,
                    id=str(cid) if instance is None else f"{cid}@{instance}",
                    instance=instance,
                    args=args,
                    output=output,
                    imports=imports,
                    check_arguments=constrains and bool(args.references),
                )
            )
    return nodes


def _literal_problems(
    tool: Tool, args: Compiled, checked: dict[tuple[int, str, str], list[str]]
) -> list[str]:
    """What the tool's schema refuses in the literal part of a call's arguments (a
    reference's place is left to run time); calls of one shape are checked once."""
    literal, places = args.literal()
    binder = tool._binder
    if binder is not None and binder.plain is not None and isinstance(literal, dict):
        later = {place[0] for place in places if len(place) == 1}  # whole arguments
        if len(later) == len(places) and binder.bind_plain(literal, later) is not None:  # type: ignore[arg-type]
            return []  # bare scalars of the declared types: nothing the schema would refuse
    try:  # repr tells JSON-like values apart (1, 1.0, True, "1"), and is quick
        key = (id(tool.arguments_schema), repr(literal), repr(places))
    except (TypeError, ValueError, RecursionError):
        return schema_problems(tool.arguments_schema, literal, dynamic=places)
    found = checked.get(key)
    if found is None:
        found = checked[key] = schema_problems(tool.arguments_schema, literal, dynamic=places)
    return found


def _compile_arguments(call: Call, problem: Any) -> Compiled | None:
    for name in call.arguments:
        if not isinstance(name, str):
            problem(f"argument name {name!r} is not a string")
            return None
    return compile_mapping(call.arguments, lambda name, exc: problem(f"argument {name!r}: {exc}"))


def _output(call: Call, tool: Tool | None, problem: Any) -> OutputPath | None:
    schema = tool.output_path_schema if tool is not None else None
    text = call.output_path
    if text is None and schema is not None and isinstance(schema.get("const"), str):
        text = schema["const"]  # a prescribed single path is the default
    if text is None:
        if tool is not None and "_outputPath" in (tool.parameters.get("required") or ()):
            problem(f"tool {tool.name!r} requires an _outputPath; add one")
        return None
    try:
        output = OutputPath.parse(text)
    except ReferenceSyntaxError as exc:
        problem(f"_outputPath: {exc}")
        return None
    if schema is None:
        return output
    choices = closed_choices(schema)
    if choices is None:
        refusal = schema_problem(schema, text)
        if refusal is not None:
            problem(f"the tool's schema does not allow the _outputPath {text!r} ({refusal})")
        return output
    allowed = set()
    for choice in choices:
        try:
            allowed.add(OutputPath.parse(choice).text)
        except ReferenceSyntaxError:
            allowed.add(choice)
    alternatives = [" && ".join(t.text for t in fanout) for fanout in output.alternatives]
    if output.text not in allowed and not all(a in allowed for a in alternatives):
        listed = ", ".join(repr(c) for c in choices)
        problem(
            f"its _outputPath {text!r} is not one the tool prescribes ({listed}); use one of "
            "them (or several joined by '||', for the tool to pick)"
        )
    return output


def _imports(
    call: Call, tool: Tool | None, args: Compiled | None, problem: Any
) -> tuple[Reference, ...] | None:
    if call.imports is None:
        return None
    if not isinstance(call.imports, (list, tuple)) or not all(
        isinstance(spec, str) for spec in call.imports
    ):
        problem(
            f"_imports={call.imports!r:.80}: expected a list of what the module may read, "
            'such as ["state", "input.user"]; wrap a single one in a list'
        )
        return None
    if tool is not None and not tool.isolated:
        problem(
            f"it has _imports, but {tool.name!r} is not an isolated module (Tool(..., "
            "isolated=True) or Tool.from_plan): only modules run in a clean room"
        )
    refs: list[Reference] = []
    for spec in call.imports:
        try:
            refs.append(parse_import(spec))
        except ReferenceSyntaxError as exc:
            problem(f"_imports: {exc}")
    if args is not None:
        for ref in args.references:
            if not covered(ref, refs):
                problem(
                    f"it reads {ref.text}, which its _imports ({', '.join(call.imports)}) do "
                    f"not bring into its clean room; add {ref.prefix(2).text[1:]!r} to _imports"
                )
    return tuple(refs)


def _text(text: str) -> bool:
    """Whether every backend can keep ``text`` (an id becomes the source of writes)."""
    try:
        check_text(text)
    except ValueTypeError:
        return False
    return True


def _constrains(schema: Mapping[str, Any]) -> bool:
    """Whether a schema could refuse some object (else run-time checks are skipped)."""
    return any(key not in ("type", "description", "title", "$schema") for key in schema)
