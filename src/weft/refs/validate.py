"""Validation: a plan compiled into its data-flow graph, with every problem found first.

A call *depends on* every call that writes a path its references (or imports) read: the
same kind and field, one path a prefix of the other (a read of ``†state.user`` waits for
a write of ``†state.user.name`` and the other way round). An instance's call reads its
own instance's writers and the global ones; a global call reads global writers only.
All the alternatives of an ``||`` count, for reads and for writes.

Problems, all collected into one ``PlanValidationError`` (each names the call by index,
id and tool, and says how to fix it): an unknown tool; an argument the tool's JSON Schema
refuses (literal parts only: what a reference supplies is checked when the call runs);
a reference or output path that does not parse; an output path the tool's schema does
not allow; ``_imports`` on a tool that is not isolated, or a reference outside them; an
unknown instance; a read of a path that no call writes and neither the store nor the
inputs provide; a cycle; and two calls with no order between them writing overlapping
paths where either *sets* (replaces) it, since the result would depend on which finished
last.

Unordered calls that only *reduce* one field (``push``, ``concat``, ``merge``) are
allowed; their writes are applied in the plan's canonical order (a topological order
that follows the calls' order in the plan where the data flow leaves it free), never in
the order they finished: those fields form *sequenced groups*.
"""

from __future__ import annotations

import difflib
import heapq
import itertools
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, TypeAlias

from weft.errors import PlanValidationError, ReferenceSyntaxError, UnresolvedReferenceError
from weft.refs.calls import Call, InstancesLike, Plan, Tool
from weft.refs.imports import covered, parse_import
from weft.refs.instancing import instance_table, targets_of
from weft.refs.outputs import OutputPath, Target
from weft.refs.parse import Expression, Reference
from weft.refs.resolve import (
    ChainScope,
    Compiled,
    MappingScope,
    Scope,
    StoreScope,
    compile_mapping,
)
from weft.refs.resolve import read as read_ref
from weft.refs.schemas import closed_choices, schema_problem, schema_problems
from weft.store import Store

GroupKey: TypeAlias = tuple[str | None, str, str]
"""A written field: (instance or None for the parent store, kind, field)."""


@dataclass(frozen=True, slots=True)
class PlanProblem:
    """One problem of a plan: which call (index in the plan, id, tool) and what to do."""

    index: int | None
    call: str | None
    tool: str | None
    message: str

    def __str__(self) -> str:
        if self.index is None:
            return self.message
        return f"call {self.index} ({self.tool}, id {self.call!r}): {self.message}"


@dataclass(slots=True, kw_only=True)
class Node:
    """One call as it runs: a call of the plan, on one instance or global."""

    position: int
    index: int
    call: Call
    tool: Tool
    id: str
    instance: str | None
    args: Compiled
    output: OutputPath | None
    imports: tuple[Reference, ...] | None
    check_arguments: bool
    deps: tuple[int, ...] = ()
    groups: tuple[GroupKey, ...] = ()


@dataclass(slots=True, kw_only=True)
class CompiledPlan:
    """A validated plan: its nodes, their dependencies and canonical order."""

    plan: Plan
    tools: dict[str, Tool]
    nodes: list[Node]
    order: tuple[int, ...]
    instances: dict[str, Mapping[str, Any]]
    inputs: Mapping[str, Any]
    groups: dict[GroupKey, tuple[int, ...]] = field(default_factory=dict)

    @property
    def state_schema(self) -> Mapping[str, Any] | None:
        return self.plan.state_schema


@dataclass(slots=True)
class _Draft:
    index: int
    call: Call
    id: str
    tool: Tool | None
    args: Compiled | None
    output: OutputPath | None
    imports: tuple[Reference, ...] | None
    targets: list[str | None]


def compile_plan(
    plan: Plan,
    tools: dict[str, Tool],
    *,
    store: Store | None,
    inputs: Mapping[str, Any] | None,
    instances: InstancesLike,
) -> CompiledPlan:
    """Validate ``plan`` against ``tools`` and compile it (see the module docstring)."""
    table = instance_table(instances)
    problems: list[PlanProblem] = []
    drafts = _drafts(plan, tools, list(table), problems)
    nodes: list[Node] = []
    for draft in drafts:
        if draft.tool is None or draft.args is None:
            continue
        for instance in draft.targets:
            nodes.append(
                Node(
                    position=len(nodes),
                    index=draft.index,
                    call=draft.call,
                    tool=draft.tool,
                    id=draft.id if instance is None else f"{draft.id}@{instance}",
                    instance=instance,
                    args=draft.args,
                    output=draft.output,
                    imports=draft.imports,
                    check_arguments=bool(draft.args.references)
                    and _constrains(draft.tool.arguments_schema),
                )
            )
    compiled = CompiledPlan(
        plan=plan,
        tools=tools,
        nodes=nodes,
        order=(),
        instances=table,
        inputs=dict(inputs or {}),
    )
    _flow(compiled, store, problems)
    if problems:
        unique = sorted(dict.fromkeys(problems), key=_by_call)
        listed = "\n".join(f"  - {p}" for p in unique)
        raise PlanValidationError(
            f"the plan has {len(unique)} problem{'s' if len(unique) != 1 else ''}; nothing "
            f"ran:\n{listed}",
            problems=tuple(unique),
        )
    return compiled


def _by_call(problem: PlanProblem) -> int:
    return -1 if problem.index is None else problem.index


# --------------------------------------------------------------- each call alone


def _drafts(
    plan: Plan, tools: dict[str, Tool], known: list[str], problems: list[PlanProblem]
) -> list[_Draft]:
    drafts: list[_Draft] = []
    seen: dict[str, int] = {}
    for index, call in enumerate(plan):
        cid = call.id if call.id is not None else f"{index}.{call.tool}"

        def problem(message: str, index: int = index, cid: str = cid, call: Call = call) -> None:
            problems.append(PlanProblem(index, cid, call.tool, message))

        if not isinstance(cid, str) or not cid or "/" in cid:
            problem(f"_id={cid!r}: an id is a non-empty string without '/'")
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
        if tool is not None and args is not None and _constrains(tool.arguments_schema):
            literal, places = args.literal()
            for message in schema_problems(tool.arguments_schema, literal, dynamic=places):
                problem(
                    f"its arguments do not fit the tool's JSON Schema: {message}; fix the "
                    "argument (see the tool's parameters)"
                )
        drafts.append(_Draft(index, call, str(cid), tool, args, output, imports, targets))
    return drafts


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


def _constrains(schema: Mapping[str, Any]) -> bool:
    """Whether a schema could refuse some object (else run-time checks are skipped)."""
    return any(key not in ("type", "description", "title", "$schema") for key in schema)


# ---------------------------------------------------------------- the data flow


def _flow(compiled: CompiledPlan, store: Store | None, problems: list[PlanProblem]) -> None:
    nodes = compiled.nodes
    writers: dict[GroupKey, list[tuple[int, Target]]] = {}
    kind_writers: dict[tuple[str | None, str], list[tuple[int, Target]]] = {}
    for node in nodes:
        if node.output is None:
            continue
        for target in node.output.targets:
            writers.setdefault((node.instance, target.kind, target.field), []).append(
                (node.position, target)
            )
            kind_writers.setdefault((node.instance, target.kind), []).append(
                (node.position, target)
            )
    base: list[Scope] = [MappingScope({"input": compiled.inputs})]
    if store is not None:
        base.append(StoreScope(store))
    global_scope = ChainScope(*base)
    instance_scopes = {
        name: ChainScope(MappingScope({"input": inputs}), *base)
        for name, inputs in compiled.instances.items()
    }
    reported: set[tuple[int, str]] = set()
    for node in nodes:
        scopes = (node.instance, None) if node.instance is not None else (None,)
        deps: set[int] = set()
        reads = list(node.args.reads)
        reads.extend(Expression(((ref,),)) for ref in node.imports or ())
        initial = global_scope if node.instance is None else instance_scopes[node.instance]
        for expr in reads:
            provided = False
            for group in expr.alternatives:
                group_ok = True
                for ref in group:
                    found = _writers_of(ref, scopes, writers, kind_writers, node.position)
                    deps.update(found)
                    if not found and not _resolves(ref, initial):
                        group_ok = False
                provided = provided or group_ok
            if not provided:
                message = _unprovided(expr, initial, node, writers)
                if (node.index, message) not in reported:  # once per call, not per instance
                    reported.add((node.index, message))
                    if node.instance is not None:
                        message += f" (on instance {node.instance!r}, and maybe others)"
                    problems.append(
                        PlanProblem(node.index, _call_id(node), node.tool.name, message)
                    )
        node.deps = tuple(sorted(deps))
    order = _order(nodes, problems)
    if order is None:
        return
    compiled.order = order
    _conflicts(compiled, writers, problems)


def _writers_of(
    ref: Reference,
    scopes: tuple[str | None, ...],
    writers: dict[GroupKey, list[tuple[int, Target]]],
    kind_writers: dict[tuple[str | None, str], list[tuple[int, Target]]],
    me: int,
) -> list[int]:
    found: list[int] = []
    for scope in scopes:
        if ref.field is None:
            candidates = kind_writers.get((scope, ref.kind), ())
        else:
            candidates = writers.get((scope, ref.kind, ref.field), ())
        for position, target in candidates:
            if position != me and target.reference.overlaps(ref):
                found.append(position)
    return found


def _resolves(ref: Reference, scope: Scope) -> bool:
    try:
        read_ref(ref, scope)
    except UnresolvedReferenceError:
        return False
    return True


def _call_id(node: Node) -> str:
    return node.id if node.instance is None else node.id.rsplit("@", 1)[0]


def _unprovided(
    expr: Expression,
    scope: Scope,
    node: Node,
    writers: dict[GroupKey, list[tuple[int, Target]]],
) -> str:
    ref = expr.alternatives[0][0]
    try:
        read_ref(ref, scope)
        why = "it does not resolve"
    except UnresolvedReferenceError as exc:
        if exc.deepest is None:
            shown = ", ".join(exc.keys[:10]) + (", ..." if len(exc.keys) > 10 else "")
            held = f"{ref.kind} holds: {shown}" if exc.keys else f"there is no {ref.kind} yet"
            why = f"nothing is stored at {ref.kind}:{ref.field} ({held})"
        else:
            why = str(exc).split(": ", 1)[-1]
    if len(expr.alternatives) > 1 or len(expr.alternatives[0]) > 1:
        why = f"no alternative of {expr.text} is written or provided (the first: {why})"
    in_instances = node.instance is None and any(
        key[0] is not None and key[1:] == (ref.kind, ref.field) for key in writers
    )
    if in_instances:
        return (
            f"it reads {ref.text}, which only instance calls write, and an instance's "
            "writes never reach the parent store while the plan runs; give this call an "
            "_instance, or write the value with a global call"
        )
    return (
        f"it reads {expr.text}, which no call writes and nothing provides: {why}; write it "
        "with a call's _outputPath, pass it in inputs= (or the store), or fix the path"
    )


def _order(nodes: list[Node], problems: list[PlanProblem]) -> tuple[int, ...] | None:
    """Kahn's algorithm, smallest position first: the canonical topological order."""
    succs: list[list[int]] = [[] for _ in nodes]
    indegree = [len(node.deps) for node in nodes]
    for node in nodes:
        for dep in node.deps:
            succs[dep].append(node.position)
    ready = [node.position for node in nodes if not node.deps]
    heapq.heapify(ready)
    order: list[int] = []
    while ready:
        position = heapq.heappop(ready)
        order.append(position)
        for succ in succs[position]:
            indegree[succ] -= 1
            if not indegree[succ]:
                heapq.heappush(ready, succ)
    if len(order) == len(nodes):
        return tuple(order)
    left = {node.position for node in nodes} - set(order)
    reported: set[frozenset[int]] = set()
    for start in sorted(left):
        cycle = _cycle_from(start, nodes, left)
        calls = frozenset(nodes[p].index for p in cycle)
        if calls in reported:
            continue
        reported.add(calls)
        path = " -> ".join(f"call {nodes[p].index} ({nodes[p].tool.name})" for p in cycle)
        first = nodes[cycle[0]]
        problems.append(
            PlanProblem(
                first.index,
                _call_id(first),
                first.tool.name,
                f"its calls form a cycle: {path} -> call {first.index} ({first.tool.name}), "
                "each reading what the next writes; break it by reading another path or "
                "writing the value in a separate call",
            )
        )
    return None


def _cycle_from(start: int, nodes: list[Node], left: set[int]) -> list[int]:
    """A cycle among ``left`` reached from ``start`` (each node depends on the next)."""
    path: list[int] = []
    seen: dict[int, int] = {}
    current = start
    while current not in seen:
        seen[current] = len(path)
        path.append(current)
        current = next(d for d in nodes[current].deps if d in left)
    return list(reversed(path[seen[current] :]))


def _conflicts(
    compiled: CompiledPlan,
    writers: dict[GroupKey, list[tuple[int, Target]]],
    problems: list[PlanProblem],
) -> None:
    nodes = compiled.nodes
    rank = {position: r for r, position in enumerate(compiled.order)}
    ancestors = [0] * len(nodes)
    for position in compiled.order:
        bits = 0
        for dep in nodes[position].deps:
            bits |= ancestors[dep] | (1 << dep)
        ancestors[position] = bits

    def ordered(a: int, b: int) -> bool:
        return bool((ancestors[a] >> b) & 1 or (ancestors[b] >> a) & 1)

    reported: set[tuple[int, int, str]] = set()
    groups: dict[GroupKey, tuple[int, ...]] = {}
    for key, found in writers.items():
        members = sorted({p for p, _ in found}, key=rank.__getitem__)
        if len(members) < 2:
            continue
        for a, target in found:
            if target.method != "set":
                continue
            for b, other in found:
                if a == b or not target.reference.overlaps(other.reference) or ordered(a, b):
                    continue
                pair = (min(nodes[a].index, nodes[b].index), max(nodes[a].index, nodes[b].index))
                if (*pair, target.text) in reported:
                    continue
                reported.add((*pair, target.text))
                first, second = nodes[min(a, b)], nodes[max(a, b)]
                problems.append(
                    PlanProblem(
                        first.index,
                        _call_id(first),
                        first.tool.name,
                        f"it and call {second.index} ({second.tool.name}) both write "
                        f"{target.reference.text} (one sets it) with no order between them, "
                        "so the result would depend on which finishes last; make one read "
                        "the other's output, write different paths, or use :push / :merge",
                    )
                )
        if any(not ordered(a, b) for a, b in itertools.pairwise(members)):
            groups[key] = tuple(members)
    compiled.groups = groups
    for key, group in groups.items():
        for position in group:
            nodes[position].groups = (*nodes[position].groups, key)
