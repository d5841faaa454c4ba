"""The data flow of a plan: which call depends on which, and in what order calls are taken.

A call *depends on* every call that writes a path its references (or imports) read: same
kind and field, one path a prefix of the other. An instance call reads its instance's
writers and the global ones, a global call the global ones; every alternative of an ``||``
counts. The canonical order is Kahn's, lowest position first. Two calls with no order
between them writing overlapping paths, one of them with ``set``, are a problem; calls that
only reduce a field (``push``, ``concat``, ``merge``) are not, but they make the plan
*sequenced*: their writes must land in canonical order, so its calls run on isolated views
(``WorkGraph(isolated=True)``); any other plan's calls read and write the run's store.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, TypeAlias

from weft.calls.call import Call
from weft.calls.tools import Tool
from weft.errors import UnresolvedReferenceError
from weft.graph.build import find_cycle
from weft.refs.outputs import OutputPath
from weft.refs.parse import SIGIL, Expression, Reference
from weft.refs.resolve import Compiled
from weft.refs.resolve import read as read_ref
from weft.refs.scopes import ChainScope, MappingScope, Scope, StoreScope
from weft.refs.writes import Target
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


@dataclass(slots=True, kw_only=True)
class CompiledPlan:
    """A validated plan: its nodes, their dependencies and canonical order, and what the
    plan says about the state (``state_schema``) and its result (``output``)."""

    calls: tuple[Call, ...]
    state_schema: Mapping[str, Any] | None
    output: str | None
    tools: dict[str, Tool]
    nodes: list[Node]
    order: tuple[int, ...]
    instances: dict[str, Mapping[str, Any]]
    inputs: Mapping[str, Any]
    sequenced: bool = False
    """Calls with no order between them reduce one field: their writes must be committed
    in canonical order (see the module docstring)."""


def analyse(compiled: CompiledPlan, store: Store | None, problems: list[PlanProblem]) -> None:
    """Fill in every node's dependencies and the canonical order of ``compiled``, adding
    what is wrong to ``problems``."""
    nodes = compiled.nodes
    writers: dict[GroupKey, list[tuple[int, Target]]] = {}
    kind_writers: dict[tuple[str | None, str], list[tuple[int, Target]]] = {}
    for node in nodes:
        if node.output is None:
            continue
        for target in node.output.targets:
            written = (node.position, target)
            writers.setdefault((node.instance, target.kind, target.field), []).append(written)
            kind_writers.setdefault((node.instance, target.kind), []).append(written)
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
                    problems.append(_problem(node, message))
        node.deps = tuple(sorted(deps))
    order = _order(nodes, problems)
    if order is None:
        return
    compiled.order = order
    _conflicts(compiled, writers, problems)
    compiled.sequenced = _sequenced(compiled, writers)


def _sequenced(compiled: CompiledPlan, writers: dict[GroupKey, list[tuple[int, Target]]]) -> bool:
    """Whether two calls with no order between them write one field (only reducers can:
    ``_conflicts`` refuses the rest). A field's writers, taken in canonical order, are
    ordered when each is an ancestor of the next; the search from the next one goes back
    no further than the earlier one's rank, so a chain costs its length."""
    nodes = compiled.nodes
    rank: dict[int, int] | None = None
    for found in writers.values():
        if len(found) < 2:
            continue
        if rank is None:
            rank = {position: r for r, position in enumerate(compiled.order)}
        members = sorted({p for p, _ in found}, key=rank.__getitem__)
        for a, b in itertools.pairwise(members):
            if a not in nodes[b].deps and not _reaches(nodes, rank, b, a):
                return True
    return False


def _reaches(nodes: list[Node], rank: dict[int, int], start: int, target: int) -> bool:
    """Whether ``target`` is an ancestor of ``start`` (``target`` ranks before it)."""
    floor = rank[target]
    seen = {start}
    work = [start]
    while work:
        for dep in nodes[work.pop()].deps:
            if dep == target:
                return True
            if dep not in seen and rank[dep] > floor:
                seen.add(dep)
                work.append(dep)
    return False


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


def _problem(node: Node, message: str) -> PlanProblem:
    """A problem of ``node``'s call (named by the call's id, not the instance's)."""
    call_id = node.id if node.instance is None else node.id.rsplit("@", 1)[0]
    return PlanProblem(node.index, call_id, node.tool.name, message)


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
    # a node left out waits on a cycle, so every node it reaches is left out too
    left = {node.position for node in nodes} - set(order)
    reported: set[frozenset[int]] = set()
    for start in sorted(left):
        cycle = find_cycle(succs, [start])
        if cycle is None:
            continue
        calls = frozenset(nodes[p].index for p in cycle)
        if calls in reported:
            continue
        reported.add(calls)
        path = " -> ".join(f"call {nodes[p].index} ({nodes[p].tool.name})" for p in cycle)
        first = nodes[cycle[0]]
        problems.append(
            _problem(
                first,
                f"its calls form a cycle: {path} -> call {first.index} ({first.tool.name}), "
                "each writing what the next reads; break it by reading another path or "
                "writing the value in a separate call",
            )
        )
    return None


def _conflicts(
    compiled: CompiledPlan,
    writers: dict[GroupKey, list[tuple[int, Target]]],
    problems: list[PlanProblem],
) -> None:
    nodes = compiled.nodes
    shared = [found for found in writers.values() if len({p for p, _ in found}) > 1]
    # Whether two calls are ordered, through bit sets of the calls that could conflict (a
    # ``set`` or a write into a field, sharing the field with another call): each call's
    # such ancestors and such descendants. O(calls x those) bits, not O(calls^2): a chain
    # of 100,000 calls each writing its own field needs none at all.
    bit = {
        p: b
        for b, p in enumerate(
            dict.fromkeys(p for found in shared for p, t in found if t.method == "set" or t.path)
        )
    }
    if not bit:
        return
    above, below = [0] * len(nodes), [0] * len(nodes)
    succs: list[list[int]] = [[] for _ in nodes]
    for position in compiled.order:
        bits = 0
        for dep in nodes[position].deps:
            succs[dep].append(position)
            own = bit.get(dep)
            bits |= above[dep] if own is None else above[dep] | (1 << own)
        above[position] = bits
    for position in reversed(compiled.order):
        bits = 0
        for succ in succs[position]:
            own = bit.get(succ)
            bits |= below[succ] if own is None else below[succ] | (1 << own)
        below[position] = bits

    def ordered(a: int, b: int) -> bool:  # ``a`` has a bit; ``b`` may not
        return bool((above[b] >> bit[a]) & 1 or (below[b] >> bit[a]) & 1)

    reported: set[tuple[int, int, str]] = set()
    for found in shared:
        for a, target in found:
            if target.method != "set" and not target.path:
                continue  # a whole-field reducer write combines with the others
            for b, other in found:
                if a == b or ordered(a, b):
                    continue
                if not target.reference.overlaps(other.reference) and not target.path:
                    continue
                pair = (min(nodes[a].index, nodes[b].index), max(nodes[a].index, nodes[b].index))
                if (*pair, target.text) in reported:
                    continue
                reported.add((*pair, target.text))
                first, second = nodes[min(a, b)], nodes[max(a, b)]
                if target.reference.overlaps(other.reference):
                    what = (
                        f"both write {target.reference.text} (one sets it) with no order "
                        "between them, so the result would depend on which finishes last; "
                        "make one read the other's output, write different paths, or use "
                        ":push / :merge"
                    )
                else:
                    field = f"{target.kind}.{target.field}"
                    what = (
                        f"both write into {SIGIL}{field} ({target.reference.text}, "
                        f"{other.reference.text}) with no order between them, and a write "
                        "into a field replaces the whole field; collect them with :merge "
                        f"(an object to {SIGIL}{field}:merge), write separate fields, or "
                        "make one read the other's output"
                    )
                problems.append(
                    _problem(first, f"it and call {second.index} ({second.tool.name}) {what}")
                )
