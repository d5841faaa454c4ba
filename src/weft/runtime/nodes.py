"""Turn nodes: ``node(state, context) -> delta``, the fields each owns, and the turn's graph.

A node's writes given to the runtime win over its ``@node(writes=...)``; declaring a group
owns its subfields.

The graph is a ``WorkGraph`` (its nodes' ids, retries and timeouts kept), a list of turn
nodes (a chain), or one node; the runtime runs its own copy whose nodes wrap yours.
``fn(state)`` is a state node whose delta the engine writes; ``fn(state, context)`` gets
the turn's ``WorkflowContext`` (``RunContext.deps``) and runs on its own fork.
"""

from __future__ import annotations

import inspect
import itertools
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from weft.errors import ChannelOwnershipError, SchemaError, TurnError
from weft.graph import RetryPolicy, RunContext, StateView, WorkGraph, WorkGraphNode
from weft.graph.node import is_async
from weft.runtime.context import WorkflowContext
from weft.runtime.schema import StateSchema
from weft.runtime.views import TurnState, reader
from weft.store import DELETE

F = TypeVar("F", bound=Callable[..., Any])
GraphLike = WorkGraph | Sequence[Callable[..., Any] | WorkGraphNode] | Callable[..., Any]
_SPEC = "__weft_node__"


@dataclass(frozen=True, slots=True, kw_only=True)
class NodeSpec:
    """What ``@node`` records on a function."""

    writes: tuple[str, ...]
    id: str | None = None
    retry: RetryPolicy | int | None = None
    timeout: float | None = None


def node(
    *,
    writes: Iterable[str],
    id: str | None = None,
    retry: RetryPolicy | int | None = None,
    timeout: float | None = None,
) -> Callable[[F], F]:
    """Declare a turn node's writes (and id, retry, timeout); returns the function as is."""
    if isinstance(writes, str):
        raise SchemaError(f"@node(writes={writes!r}): writes is a list of field names")
    spec = NodeSpec(writes=tuple(writes), id=id, retry=retry, timeout=timeout)

    def mark(fn: F) -> F:
        try:
            setattr(fn, _SPEC, spec)
        except (AttributeError, TypeError) as exc:
            raise SchemaError(
                f"@node cannot mark {fn!r}; pass its writes in TurnRuntime(writes={{id: [...]}})"
            ) from exc
        return fn

    return mark


@dataclass(frozen=True, slots=True, kw_only=True)
class Bound:
    """One turn node, compiled: its label, function and the leaf paths it owns."""

    label: str
    fn: Callable[..., Any]
    declared: tuple[str, ...]
    owned: frozenset[str]
    takes_context: bool

    def translate(self, delta: Any, schema: StateSchema) -> dict[str, Any] | None:
        """The node's delta as ``{leaf path: value}``, every write checked for ownership."""
        if delta is None:
            return None
        if not isinstance(delta, Mapping):
            raise TurnError(
                f"node {self.label!r} returned a {type(delta).__name__}; a turn node returns a "
                "delta {field: value} (or None for no change)"
            )
        writer = f"node {self.label!r}"
        out: dict[str, Any] = {}
        for key, value in delta.items():
            for leaf, item in schema.split(key, value, writer):
                if leaf.path not in self.owned:
                    raise self._not_owned(leaf.path, leaf.lifecycle == "input")
                if item is DELETE:
                    raise TurnError(
                        f"{writer} wrote DELETE as the whole of {leaf.path!r}; DELETE removes "
                        "one key of a dict written to a merge field ({'diagnostics': {'key': "
                        "DELETE}}). Write the field's empty value instead"
                    )
                out[leaf.path] = item
        return out or None

    def _not_owned(self, path: str, is_input: bool) -> ChannelOwnershipError:
        declared = ", ".join(self.declared) or "nothing"
        if is_input:
            why = "an Input field: only the caller sets it, at turn start"
        else:
            why = f"a field it does not declare (it declares {declared})"
        return ChannelOwnershipError(
            f"node {self.label!r} wrote {path!r}, {why}. Add it to the node's writes "
            "(@node(writes=[...]) or TurnRuntime(writes=...)), or let the node that owns it "
            "write it; nothing of this turn was stored",
            writer=self.label,
            field=path,
        )


def compile_graph(
    graph: GraphLike,
    schema: StateSchema,
    writes: Mapping[str, Iterable[str]] | None = None,
) -> tuple[WorkGraph, tuple[Bound, ...]]:
    """The runtime's own WorkGraph over wrapped turn nodes (see the module docstring)."""
    originals, starts, limit = _topology(graph)
    overrides = dict(writes or {})
    new: dict[int, WorkGraphNode] = {}
    bound: list[Bound] = []
    for old in originals:
        fn = old.value
        spec: NodeSpec | None = getattr(fn, _SPEC, None)
        label = spec.id if spec is not None and spec.id else old.id
        if label in overrides:
            declared = tuple(overrides.pop(label))
        elif spec is not None:
            declared = spec.writes
        else:
            raise SchemaError(
                f"node {label!r} does not declare the fields it writes; decorate it with "
                f"@node(writes=[...]) or pass TurnRuntime(writes={{{label!r}: [...]}}) "
                "(an empty list for a node that only reads)"
            )
        one = Bound(
            label=label,
            fn=fn,
            declared=declared,
            owned=_owned(label, declared, schema),
            takes_context=_takes_context(fn, label),
        )
        bound.append(one)
        new[id(old)] = WorkGraphNode(
            _wrap(one, schema),
            id=label,
            retry=spec.retry if spec is not None and spec.retry is not None else old.retry,
            timeout=spec.timeout if spec is not None and spec.timeout is not None else old.timeout,
            state=not one.takes_context,
        )
    if overrides:
        raise SchemaError(
            f"writes= names {', '.join(map(repr, overrides))}, which is no node of the graph; "
            f"its nodes are {', '.join(b.label for b in bound)}"
        )
    for old in originals:
        for nxt in old.next:
            new[id(old)].add_next(new[id(nxt)])
    return WorkGraph(start_nodes=[new[id(s)] for s in starts], max_concurrency=limit), tuple(bound)


def _topology(graph: GraphLike) -> tuple[list[WorkGraphNode], list[WorkGraphNode], int | None]:
    if isinstance(graph, WorkGraph):
        return list(graph.nodes), list(graph.start_nodes), graph.max_concurrency
    items = list(graph) if isinstance(graph, Sequence) else [graph]
    if not items:
        raise SchemaError("the turn's graph has no nodes; pass a WorkGraph, a list or a node")
    chain: list[WorkGraphNode] = []
    for n in items:
        if isinstance(n, WorkGraphNode):  # a copy: the caller's node keeps its edges
            chain.append(WorkGraphNode(n.value, id=n.id, retry=n.retry, timeout=n.timeout))
        elif callable(n):
            chain.append(WorkGraphNode(n))
        else:
            raise SchemaError(f"the graph item {n!r} is not a callable turn node")
    for a, b in itertools.pairwise(chain):
        a.add_next(b)
    return chain, chain[:1], None


def _owned(label: str, declared: tuple[str, ...], schema: StateSchema) -> frozenset[str]:
    owned: set[str] = set()
    for path in declared:
        if path not in schema.nodes:
            raise SchemaError(f"node {label!r} declares {schema.unknown(path, 'it').args[0]}")
        for leaf in schema.leaves_under(path):
            if leaf.lifecycle == "input":
                raise SchemaError(
                    f"node {label!r} declares that it writes {leaf.path!r}, an Input field; "
                    "only the caller sets Input fields. Make it TurnScoped or a Reducer field "
                    "if nodes should write it"
                )
            owned.add(leaf.path)
    return frozenset(owned)


def _takes_context(fn: Callable[..., Any], label: str) -> bool:
    try:
        params = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        return True
    kinds = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    if any(p.kind is inspect.Parameter.VAR_POSITIONAL for p in params):
        return True
    positional = [p for p in params if p.kind in kinds]
    if not positional:
        raise SchemaError(
            f"node {label!r} takes no positional parameter; a turn node is called "
            "fn(state, context) or fn(state)"
        )
    return len(positional) >= 2


def _wrap(one: Bound, schema: StateSchema) -> Callable[..., Any]:
    """The WorkGraph node of one turn node (see the module docstring)."""
    fn, translate = one.fn, one.translate
    if one.takes_context:
        # The engine keeps what a node that takes ctx wrote to its fork as its changes.
        if is_async(fn):

            async def run_async_in(ctx: RunContext[WorkflowContext]) -> None:
                state = TurnState(schema, reader(ctx.store.value))
                delta = translate(await fn(state, ctx.deps), schema)
                if delta:
                    ctx.store.write_many("state", delta, source=ctx.node)

            return run_async_in

        def run_in(ctx: RunContext[WorkflowContext]) -> None:
            delta = translate(fn(TurnState(schema, reader(ctx.store.value)), ctx.deps), schema)
            if delta:
                ctx.store.write_many("state", delta, source=ctx.node)

        return run_in

    if is_async(fn):

        async def run_async(view: StateView) -> dict[str, Any] | None:
            return translate(await fn(TurnState(schema, reader(view.read))), schema)

        return run_async

    def run(view: StateView) -> dict[str, Any] | None:
        return translate(fn(TurnState(schema, reader(view.read))), schema)

    return run
