"""``WorkGraph``: a DAG of ``WorkGraphNode`` s, checked when built, run by the engine
(``weft.graph.engine``). ``arun()`` is the core; ``run()`` (and calling the graph) is a thin
sync wrapper: on the calling thread's cached event loop, or, when that thread already runs
a loop, on a helper thread (``await graph.arun()`` is the better call there).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from weft._sync import drive, run_sync
from weft.errors import GraphBuildError, GraphError
from weft.graph.build import Schedule, build_nodes_from_paths, compile_schedule, to_mermaid
from weft.graph.engine import Run
from weft.graph.node import WorkGraphNode
from weft.graph.offload import NodeExecutor
from weft.store import Store


class WorkGraph:
    """A DAG of nodes, built from start nodes or from paths of values.

    >>> def double(x): return 2 * x
    >>> def inc(x): return x + 1
    >>> from weft.graph import ResultPassDownMode
    >>> a = WorkGraphNode(double, ResultPassDownMode.ResultAsFirstArg)
    >>> _ = a.add_next(WorkGraphNode(inc))
    >>> WorkGraph(start_nodes=[a]).run(20)
    41

    ``WorkGraph(paths, node_cls=...)`` builds the nodes with ``build_nodes_from_paths``
    (a list of ``WorkGraphNode`` s as the first argument is taken as start nodes).
    ``max_concurrency`` bounds the nodes in flight at once, async tasks and sync threads
    together; ``None`` leaves async nodes unbounded and gives sync nodes up to 32 threads.

    ``run(*args, **kwargs)`` passes its arguments to every start node, but for its own
    keywords. With a ``store``, state nodes read and write it and, when someone subscribes
    to it before the run starts, node-lifecycle events go to its log and subscribers
    (``events=False`` leaves them out even then: two ``Store.note`` calls per node, ~4 us
    each, add up in a fan-out over thousands of quick nodes); with a ``run_id`` as well,
    each finished node is recorded so that running again with that id resumes, and a node
    may pause the run to ask a person (``interrupt``): ``run`` then returns ``Paused``, and
    running again with ``answers=`` goes on (``weft.graph.pause``). With an ``executor``
    (``weft.distributed.RayExecutor``), the nodes that take no ``ctx`` are called there,
    and the run is scheduled, merged and recorded here (``weft.graph.offload``).

    ``isolated=False`` gives up the isolation of views for speed: a node whose ancestors'
    changes are all committed reads the run's store as it is, with no view built for it
    (changes are still committed in graph order). Only for graphs where each node reads
    only what its ancestors write and no two nodes without an order between them write
    one field, so what else it sees there does not matter (a plan of tool calls, whose
    compiler checks both).
    """

    __slots__ = ("_runnable", "_schedule", "isolated", "max_concurrency", "start_nodes")

    def __init__(
        self,
        paths: Sequence[Sequence[Any]] | Sequence[WorkGraphNode] | None = None,
        *,
        start_nodes: Sequence[WorkGraphNode] | None = None,
        node_cls: Callable[..., WorkGraphNode] = WorkGraphNode,
        max_concurrency: int | None = None,
        isolated: bool = True,
    ) -> None:
        if start_nodes is not None and paths is not None:
            raise GraphBuildError(
                "pass either paths or start_nodes, not both: paths build new nodes, "
                "start_nodes use nodes you wired with add_next"
            )
        for name, given in (("paths", paths), ("start_nodes", start_nodes)):
            if given is not None and (
                isinstance(given, (str, bytes, WorkGraphNode)) or not isinstance(given, Iterable)
            ):
                raise GraphBuildError(
                    f"{name}={given!r:.80}: expected a list (of WorkGraphNode s, or of paths "
                    "of values); one node is a list of one"
                )
        if start_nodes is None:
            items: list[Any] = list(paths or ())
            if items and all(isinstance(p, WorkGraphNode) for p in items):
                start_nodes = items
            else:
                start_nodes = build_nodes_from_paths(items, node_cls)
        if max_concurrency is not None and (
            isinstance(max_concurrency, bool)
            or not isinstance(max_concurrency, int)
            or max_concurrency < 1
        ):
            raise GraphBuildError(
                f"max_concurrency={max_concurrency!r}; expected a positive int, or None for "
                "no bound on async nodes"
            )
        if not isinstance(isolated, bool):
            raise GraphBuildError(f"isolated={isolated!r}: expected True or False")
        self.start_nodes: list[WorkGraphNode] = list(start_nodes)
        self.max_concurrency = max_concurrency
        self.isolated = isolated
        self._schedule = compile_schedule(self.start_nodes)
        self._runnable = False

    def run(
        self,
        *args: Any,
        run_id: str | None = None,
        store: Store | None = None,
        events: bool = True,
        context: Any = None,
        answers: Mapping[str, Any] | None = None,
        executor: NodeExecutor | None = None,
        **kwargs: Any,
    ) -> Any:
        """Run the graph to the end and return the sink's result (a list for several sinks),
        or ``Paused`` when a node waits for a person (``weft.graph.pause``)."""
        run = self._new_run(args, kwargs, store, run_id, events, context, answers, executor)
        body = run.execute() if run.observer is None else run.observer.around(run.execute())
        return drive(body) if run.schedule.loopless else run_sync(body)

    __call__ = run

    async def arun(
        self,
        *args: Any,
        run_id: str | None = None,
        store: Store | None = None,
        events: bool = True,
        context: Any = None,
        answers: Mapping[str, Any] | None = None,
        executor: NodeExecutor | None = None,
        **kwargs: Any,
    ) -> Any:
        """The async core of ``run``: same arguments, same result."""
        run = self._new_run(args, kwargs, store, run_id, events, context, answers, executor)
        body = run.execute(driven=False)
        return await (body if run.observer is None else run.observer.around(body))

    def _new_run(
        self,
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
        store: Store | None,
        run_id: str | None,
        events: bool,
        context: Any,
        answers: Mapping[str, Any] | None,
        executor: NodeExecutor | None,
    ) -> Run:
        """The one run of ``run`` or ``arun``, on this graph's schedule."""
        schedule = self._ready_schedule_unchecked()
        if not self._runnable:
            schedule.check_runnable()
            self._runnable = True
        return Run(
            schedule,
            args,
            kwargs,
            store,
            run_id,
            events,
            context,
            self.max_concurrency,
            answers,
            executor,
            self.isolated,
        )

    @property
    def nodes(self) -> tuple[WorkGraphNode, ...]:
        """Every node, in canonical order (the order of their keys' positions)."""
        return self._ready_schedule_unchecked().nodes

    @property
    def keys(self) -> tuple[str, ...]:
        """Each node's unique key (``id#position``), in canonical order."""
        return self._ready_schedule_unchecked().keys

    def key_of(self, node: WorkGraphNode) -> str:
        """The unique key of ``node`` in this graph."""
        schedule = self._ready_schedule_unchecked()
        for n, key in zip(schedule.nodes, schedule.keys, strict=True):
            if n is node:
                return key
        raise GraphError(f"{node!r} is not a node of this graph; its nodes are .nodes")

    def to_mermaid(self, direction: str = "TD") -> str:
        """The graph as a mermaid ``flowchart``: one line per node and per edge."""
        return to_mermaid(self._ready_schedule_unchecked(), direction)

    def _ready_schedule_unchecked(self) -> Schedule:
        if self._schedule.wiring != WorkGraphNode.wiring:
            self._schedule = compile_schedule(self.start_nodes)
            self._runnable = False
        return self._schedule

    def __repr__(self) -> str:
        starts = ", ".join(n.id for n in self.start_nodes)
        return f"<WorkGraph nodes={self._schedule.size} start=[{starts}]>"
