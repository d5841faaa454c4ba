"""Building a graph: nodes from paths, the wiring checks, the compiled schedule, and mermaid.

The schedule is computed once, when the graph is built: the canonical order, each node's
unique key, predecessors and successors by index, in-degrees, mode codes, and which nodes
see everything before them. Running a graph then costs index arithmetic, not graph walks.

*Canonical order* is a topological order: Kahn's algorithm with a first-in-first-out
queue seeded with the start nodes in the order given, successors joining the queue in
edge order as their last predecessor is placed. A node's key is ``f"{id}#{position}"``
in that order (``"$class-Actioner#3"``), so the same graph gets the same keys every time
it is built, and keys are unique even where ids repeat.
"""

from __future__ import annotations

import inspect
from collections import deque
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from types import FunctionType, MethodType
from typing import Any

from weft.errors import GraphBuildError
from weft.graph.modes import KEYWORD, mode_code
from weft.graph.node import RetryPolicy, WorkGraphNode, is_async, linked


def build_nodes_from_paths(
    paths: Iterable[Sequence[Any]], node_cls: Callable[..., WorkGraphNode] = WorkGraphNode
) -> list[WorkGraphNode]:
    """Nodes wired along ``paths``; returns the start nodes (those without predecessors).

    The same value means the same node, so common prefixes merge:
    ``[["A","B","C"], ["A","B","D"], ["X","Y"]]`` gives ``A -> B -> C``, ``B -> D`` and
    ``X -> Y``, with start nodes ``A`` and ``X``. A path item that is already a
    ``WorkGraphNode`` is used as it is. Values must be hashable (functions, partials and
    strings are). A cycle is a ``GraphBuildError`` naming the nodes on it.
    """
    by_value: dict[Hashable, WorkGraphNode] = {}
    created: dict[int, WorkGraphNode] = {}  # by id(): in the order first met
    if isinstance(paths, str | bytes | Mapping) or not isinstance(paths, Iterable):
        raise GraphBuildError(
            f"paths={paths!r:.80}: expected a list of paths, each a list of node values, e.g. "
            '[["A", "B"], ["A", "C"]]'
        )
    for number, path in enumerate(paths):
        if isinstance(path, (str, bytes)) or not isinstance(path, Sequence):
            raise GraphBuildError(
                f"path #{number} is {path!r}; a path is a list of node values, e.g. "
                '[["A", "B"], ["A", "C"]]'
            )
        previous: WorkGraphNode | None = None
        for value in path:
            node = _node_for(value, by_value, created, node_cls, number)
            if previous is not None and not linked(previous, node):
                previous.add_next(node)
            previous = node
    check_acyclic(created.values())
    return [node for node in created.values() if not node.previous]


def _node_for(
    value: Any,
    by_value: dict[Hashable, WorkGraphNode],
    created: dict[int, WorkGraphNode],
    node_cls: Callable[..., WorkGraphNode],
    number: int,
) -> WorkGraphNode:
    if isinstance(value, WorkGraphNode):
        created.setdefault(id(value), value)
        return value
    try:
        node = by_value.get(value)
    except TypeError:
        raise GraphBuildError(
            f"path #{number}: the value {value!r} is not hashable, so it cannot name a node; "
            "use a function, a functools.partial, a string, or a WorkGraphNode"
        ) from None
    if node is None:
        node = node_cls(value=value)
        if not isinstance(node, WorkGraphNode):
            raise GraphBuildError(
                f"node_cls returned a {type(node).__name__}, not a WorkGraphNode; pass "
                "WorkGraphNode or a partial of it"
            )
        by_value[value] = node
        created[id(node)] = node
    return node


def find_cycle(
    succs: Sequence[Sequence[int]], roots: Iterable[int] | None = None
) -> list[int] | None:
    """A cycle among nodes ``0..n-1`` with successors ``succs``, reachable from ``roots``
    (default: every node), as the nodes on it in edge order; None when there is none.

    weft's one cycle check: WorkGraphs, the executors' plans of tasks and plans of tool
    calls all find their cycles here (each names the nodes in its own words)."""
    state = [0] * len(succs)  # 1: on the current path, 2: finished
    for root in range(len(succs)) if roots is None else roots:
        if state[root]:
            continue
        path, iters = [root], [iter(succs[root])]
        state[root] = 1
        while iters:
            child = next(iters[-1], None)
            if child is None:
                state[path.pop()] = 2
                iters.pop()
            elif state[child] == 1:
                return path[path.index(child) :]
            elif not state[child]:
                state[child] = 1
                path.append(child)
                iters.append(iter(succs[child]))
    return None


def check_acyclic(nodes: Iterable[WorkGraphNode]) -> None:
    """Raise ``GraphBuildError`` naming the nodes of a cycle reachable from ``nodes``."""
    _check_acyclic(_reachable(list(nodes)))


def _check_acyclic(reached: list[WorkGraphNode]) -> None:
    index = {id(n): i for i, n in enumerate(reached)}
    ring = find_cycle([[index[id(c)] for c in n.next] for n in reached])
    if ring is not None:
        names = [reached[i].id for i in [*ring, ring[0]]]
        raise GraphBuildError(
            "the graph has a cycle: "
            + " -> ".join(names)
            + "; a WorkGraph is acyclic, so remove one of these edges (a loop belongs "
            "in the agent that runs the graph, not in the graph)"
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class Schedule:
    """The compiled graph: everything the engine needs, by index in canonical order."""

    nodes: tuple[WorkGraphNode, ...]
    keys: tuple[str, ...]
    labels: tuple[str, ...]
    fns: tuple[Any, ...]
    codes: tuple[int, ...]
    mode_args: tuple[Any, ...]
    preds: tuple[tuple[int, ...], ...]
    succs: tuple[tuple[int, ...], ...]
    indegree: tuple[int, ...]
    starts: tuple[int, ...]
    sinks: tuple[int, ...]
    """Nodes without successors, in start order: depth-first from each start node in turn."""
    start_rank: tuple[int, ...]
    """Each node's position in that depth-first walk (orders the results of a run)."""
    multi_keywords: tuple[frozenset[str], ...]
    asyncs: tuple[bool, ...]
    inline: tuple[bool, ...]
    timeouts: tuple[float | None, ...]
    retries: tuple[RetryPolicy | None, ...]
    states: tuple[bool, ...]
    ctxs: tuple[bool, ...]
    """Nodes whose function takes a ``ctx`` parameter (they get the ``RunContext``)."""
    full: tuple[bool, ...]
    """``full[i]``: every node before ``i`` in canonical order is an ancestor of ``i``, so
    the run's store holds exactly ``i``'s view once every node before it is committed."""
    chain: tuple[int, ...]
    """``chain[i]``: ``i``'s only successor when ``i`` is that one's only predecessor; else -1."""
    loopless: bool
    """No node is async and none has a timeout: ``run()`` needs no event loop. Sync nodes
    that run in parallel go to threads, and the run waits for them in a blocking wait."""
    wiring: int
    memo: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)
    """What the engine derives from the schedule once and reuses in every run."""

    @property
    def size(self) -> int:
        return len(self.nodes)

    def check_runnable(self) -> None:
        """Every value must be callable; checked once before the first run."""
        for key, fn in zip(self.keys, self.fns, strict=True):
            if not callable(fn):
                raise GraphBuildError(
                    f"node {key}: its value {fn!r} is not callable, so it cannot run; give the "
                    "node a function (paths of names are fine for drawing, not for running)"
                )


def compile_schedule(start_nodes: Sequence[WorkGraphNode]) -> Schedule:
    """Check the wiring and compile the schedule; every wiring mistake is a
    ``GraphBuildError``."""
    if not start_nodes:
        raise GraphBuildError(
            "the graph is empty: it has no start nodes; pass start_nodes=[...] or a "
            "non-empty list of paths"
        )
    seen_start: set[int] = set()
    for node in start_nodes:
        if not isinstance(node, WorkGraphNode):
            raise GraphBuildError(
                f"start_nodes holds a {type(node).__name__}; every start node must be a "
                "WorkGraphNode"
            )
        if id(node) in seen_start:
            raise GraphBuildError(f"{node.id!r} is given twice in start_nodes; list it once")
        seen_start.add(id(node))
    reached = _reachable(start_nodes)
    _check_acyclic(reached)
    for node in start_nodes:
        if node.previous:
            raise GraphBuildError(
                f"{node.id!r} is a start node but {node.previous[0].id!r} leads to it; a start "
                "node has no predecessors, so drop it from start_nodes or remove the edge"
            )
    known = {id(n) for n in reached}
    for node in reached:
        for pred in node.previous:
            if id(pred) not in known:
                raise GraphBuildError(
                    f"{node.id!r} waits for {pred.id!r}, which no start node reaches, so it "
                    f"could never run; add {pred.id!r} (or its first ancestor) to start_nodes"
                )
    order = _canonical_order(start_nodes, len(reached))
    n = len(order)
    index = {id(node): i for i, node in enumerate(order)}
    rank = [0] * n
    for position, node in enumerate(reached):
        rank[index[id(node)]] = position
    keys: list[str] = []
    codes: list[int] = []
    preds: list[tuple[int, ...]] = []
    succs: list[tuple[int, ...]] = []
    asyncs: list[bool] = []
    inline: list[bool] = []
    ctxs: list[bool] = []
    for i, node in enumerate(order):  # one pass: a small graph is built at every step
        key = f"{node.id}#{i}"
        keys.append(key)
        codes.append(mode_code(node.result_pass_down_mode, node=key))
        preds.append(tuple([index[id(p)] for p in node.previous]))
        succs.append(tuple([index[id(c)] for c in node.next]))
        asynchronous = is_async(node.value)
        asyncs.append(asynchronous)
        retry = node.retry
        inline.append(
            not asynchronous and node.timeout is None and (retry is None or retry.backoff == 0)
        )
        ctxs.append(_takes_ctx(node.value))
    _check_keywords(order, keys, codes, index)
    return Schedule(
        nodes=tuple(order),
        keys=tuple(keys),
        labels=tuple([node.id for node in order]),
        fns=tuple([node.value for node in order]),
        codes=tuple(codes),
        mode_args=tuple([node.result_pass_down_mode for node in order]),
        preds=tuple(preds),
        succs=tuple(succs),
        indegree=tuple([len(p) for p in preds]),
        starts=tuple([index[id(node)] for node in start_nodes]),
        sinks=tuple(sorted([i for i in range(n) if not succs[i]], key=rank.__getitem__)),
        start_rank=tuple(rank),
        multi_keywords=tuple([_multi_keywords(node, codes, index) for node in order]),
        asyncs=tuple(asyncs),
        inline=tuple(inline),
        timeouts=tuple([node.timeout for node in order]),
        retries=tuple([node.retry for node in order]),
        states=tuple([node.state for node in order]),
        ctxs=tuple(ctxs),
        full=_full(succs),
        chain=tuple(
            [
                succs[i][0] if len(succs[i]) == 1 and len(preds[succs[i][0]]) == 1 else -1
                for i in range(n)
            ]
        ),
        loopless=not any(asyncs) and all(node.timeout is None for node in order),
        wiring=WorkGraphNode.wiring,
    )


def _full(succs: Sequence[Sequence[int]]) -> tuple[bool, ...]:
    """``full[i]`` for every node, in O(nodes + edges).

    Every node before ``i`` is an ancestor of ``i`` exactly when ``i`` is the only sink of
    the graph cut down to the nodes up to ``i``: that is, when every node before ``i`` has
    a successor at or before ``i`` (following such edges from any of them ends at ``i``).
    """
    out: list[bool] = []
    reach = -1  # the largest "first successor" among the nodes seen so far
    for i, ss in enumerate(succs):
        out.append(reach <= i)
        first = min(ss) if ss else len(succs)
        reach = max(reach, first)
    return tuple(out)


def _named_params(value: Any) -> tuple[str, ...] | None:
    """The parameters ``value`` takes by name, read from its code when it is a plain
    function, a bound method or a partial of either (a signature costs far more);
    None for anything else."""
    func: Any = value
    bound = 0
    while True:
        if func.__class__ is partial:
            bound += len(func.args)
            func = func.func
        elif func.__class__ is MethodType:
            func, bound = func.__func__, bound + 1
        else:
            break
    if (
        func.__class__ is not FunctionType
        or hasattr(func, "__wrapped__")
        or hasattr(func, "__signature__")
        or hasattr(value, "__signature__")
    ):
        return None
    code = func.__code__
    count = code.co_argcount
    names = code.co_varnames
    return names[max(bound, code.co_posonlyargcount) : count + code.co_kwonlyargcount]


def _takes_ctx(value: Any) -> bool:
    """Whether a node value declares a ``ctx`` parameter (it then gets the run context)."""
    if not callable(value):
        return False
    named = _named_params(value)
    if named is not None:
        return "ctx" in named
    try:
        params = inspect.signature(value).parameters
    except (TypeError, ValueError):  # builtins and C callables
        return False
    found = params.get("ctx")
    return found is not None and found.kind in (
        inspect.Parameter.POSITIONAL_OR_KEYWORD,
        inspect.Parameter.KEYWORD_ONLY,
    )


def _reachable(start_nodes: Sequence[WorkGraphNode]) -> list[WorkGraphNode]:
    out: list[WorkGraphNode] = []
    seen: set[int] = set()
    stack = list(reversed(start_nodes))
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        out.append(node)
        stack.extend(reversed(node.next))
    return out


def _canonical_order(start_nodes: Sequence[WorkGraphNode], size: int) -> list[WorkGraphNode]:
    waiting: dict[int, int] = {}
    queue = deque(start_nodes)
    order: list[WorkGraphNode] = []
    while queue:
        node = queue.popleft()
        order.append(node)
        for child in node.next:
            left = waiting.get(id(child), len(child.previous)) - 1
            waiting[id(child)] = left
            if left == 0:
                queue.append(child)
    assert len(order) == size, "acyclic and closed graphs order every node"
    return order


def _check_keywords(
    order: Sequence[WorkGraphNode],
    keys: Sequence[str],
    codes: Sequence[int],
    index: dict[int, int],
) -> None:
    for i, node in enumerate(order):
        if codes[i] != KEYWORD:
            continue
        keyword = node.result_pass_down_mode
        assert isinstance(keyword, str)
        for child in node.next:
            problem = _keyword_problem(child, keyword)
            if problem:
                raise GraphBuildError(
                    f"{keys[i]} passes its result as the keyword {keyword!r} to "
                    f"{keys[index[id(child)]]}, but {problem}; rename the keyword, add a "
                    f"{keyword!r} parameter (or **kwargs), or choose another "
                    "result_pass_down_mode"
                )


def _keyword_problem(node: WorkGraphNode, keyword: str) -> str | None:
    if not callable(node.value):
        return None
    if not node.state and keyword in (_named_params(node.value) or ()):
        return None  # the common case, read from the code
    try:
        signature = inspect.signature(node.value)
    except (TypeError, ValueError):  # builtins and C callables: cannot tell, so trust it
        return None
    params = list(signature.parameters.values())
    shown = f"{node.id}{signature}"
    positional = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    if node.state and params and params[0].kind in positional:
        if params[0].name == keyword:
            return f"{shown} takes the state view as {keyword!r}"
        params = params[1:]
    for p in params:
        if p.kind is p.VAR_KEYWORD:
            return None
        if p.name == keyword and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY):
            return None
    return f"{shown} takes no such parameter"


def _multi_keywords(
    node: WorkGraphNode, codes: Sequence[int], index: dict[int, int]
) -> frozenset[str]:
    counts: dict[str, int] = {}
    for pred in node.previous:
        if codes[index[id(pred)]] == KEYWORD:
            name = pred.result_pass_down_mode
            assert isinstance(name, str)
            counts[name] = counts.get(name, 0) + 1
    return frozenset(k for k, c in counts.items() if c > 1)


def to_mermaid(plan: Schedule, direction: str = "TD") -> str:
    """A mermaid ``flowchart``: one line per node (its id) and one per edge."""
    lines = [f"flowchart {direction}"]
    for i, label in enumerate(plan.labels):
        text = label.replace('"', "#quot;")
        lines.append(f'    n{i}["{text}"]')
    for i, succs in enumerate(plan.succs):
        lines.extend(f"    n{i} --> n{j}" for j in succs)
    return "\n".join(lines)
