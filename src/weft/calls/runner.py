"""``Plan.run``: a validated plan of tool calls, executed on the WorkGraph engine.

Each call (on each instance) is one state node (``WorkGraphNode(state=True)``) with edges
from the data flow; data moves through the store, never by pass-down. A call reads only
what the calls it depends on write, so it reads the run's store with no view of its own
(``WorkGraph(isolated=False)``); only a *sequenced* plan (unordered calls reducing one
field, ``weft.calls.dataflow``) runs on isolated views. Writes are committed in graph
order either way, so the log is the same whichever call finished first (on Ray too).
With a ``run_id`` each finished call is recorded with its writes in one commit, so
running again restores recorded calls instead of calling them (a call whose tool took
effect but whose record was not stored runs again: at least once).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from weft.calls.dataflow import CompiledPlan
from weft.calls.execute import Runtime, is_async_tool
from weft.calls.result import PlanResult
from weft.errors import NodeError, PlanRunError, PlanValidationError
from weft.graph import Paused, StateView, WorkGraph, WorkGraphNode
from weft.graph.offload import NodeExecutor, current_executor
from weft.persist import DurableRun
from weft.store import RunLog, Store


def run_store(store: Store | None, durable: DurableRun | None) -> Store:
    """The store a run works on: ``durable``'s, else ``store``, else a new one."""
    if durable is not None:
        if store is not None and store is not durable.store:
            raise PlanValidationError(
                "pass store= or durable=, not both: a durable run brings its own store"
            )
        return durable.store
    if store is not None and not isinstance(store, Store):
        raise PlanValidationError(
            f"store={store!r}: expected a weft.store.Store (or durable=DurableRun(...)), "
            f"not a {type(store).__name__}"
        )
    return store if store is not None else Store(name="plan")


@dataclass(frozen=True, slots=True)
class Prepared:
    """A validated plan made ready to run on ``store``: its runtime and its WorkGraph
    (None for a plan of no calls), with each call's engine key by position."""

    runtime: Runtime
    graph: WorkGraph | None
    keys: list[str]


def prepare(compiled: CompiledPlan, store: Store, max_concurrency: int | None) -> Prepared:
    """The runtime and graph of ``compiled`` on ``store`` (validated against it, see
    ``run_store``). ``Plan.arun`` calls it in the same pause of the cyclic collector as the
    validation: thousands of nodes and no cycle to find, and one collection after both."""
    runtime = Runtime(compiled, store)
    graph, keys = _graph(compiled, runtime, max_concurrency, current_executor())
    return Prepared(runtime, graph, keys)


async def arun_prepared(
    prepared: Prepared,
    *,
    merge_instances: bool = False,
    run_id: str | None = None,
    durable: DurableRun | None = None,
    answers: Mapping[str, Any] | None = None,
) -> PlanResult | Paused:
    """Run a prepared plan to the end; the options are ``Plan.arun``'s."""
    runtime, graph, keys = prepared.runtime, prepared.graph, prepared.keys
    compiled, store = runtime.compiled, runtime.store
    run_id = run_id if run_id is not None or durable is None else durable.run_id
    log = RunLog(store, run_id) if run_id is not None else None
    completed_before = (
        log is not None and (run := log.run()) is not None and (run.status == "completed")
    )
    if graph is not None:
        try:
            ended = await graph.arun(store=store, run_id=run_id, answers=answers)
        except NodeError as exc:
            error = _unwrap(exc, run_id)
            raise error from error.__cause__
        if isinstance(ended, Paused):
            return ended
    records = runtime.records
    if log is not None:
        records = _records(log, keys)
        for position, record in records.items():
            runtime.restore(compiled.nodes[position], record)
    if merge_instances and compiled.instances and not completed_before:
        runtime.merge_instances(records)
    return runtime.result(run_id=run_id, simulated=False)


def _graph(
    compiled: CompiledPlan,
    runtime: Runtime,
    max_concurrency: int | None,
    executor: NodeExecutor | None = None,
) -> tuple[WorkGraph | None, list[str]]:
    """The WorkGraph of the plan's calls, and each node's engine key (by position)."""
    if not compiled.nodes:
        return None, []
    graph_nodes = []
    kinds = {
        name: "async" if is_async_tool(tool.fn) else "thread" if tool.blocking else "inline"
        for name, tool in compiled.tools.items()
    }
    for node in compiled.nodes:
        if executor is not None and not node.tool.isolated:  # its call runs there
            value = _remote_caller(runtime, node.position, executor)
        else:
            value = _caller(runtime, node.position, kinds[node.tool.name])
        graph_nodes.append(WorkGraphNode(value, id=node.id, state=True))
    for position in compiled.order:
        for dep in compiled.nodes[position].deps:
            graph_nodes[dep].add_next(graph_nodes[position])
    starts = [graph_nodes[p] for p in compiled.order if not compiled.nodes[p].deps]
    graph = WorkGraph(
        start_nodes=starts, max_concurrency=max_concurrency, isolated=compiled.sequenced
    )
    keys = dict(zip(map(id, graph.nodes), graph.keys, strict=True))
    return graph, [keys[id(node)] for node in graph_nodes]


def _caller(runtime: Runtime, position: int, kind: str) -> Callable[..., Any]:
    """The node value of one call: a plain closure taking the node's view (a partial would
    cost the engine an ``inspect`` walk per node to find out whether it is async). A sync
    tool declared ``blocking=False`` is wrapped as async, so the engine runs it on its
    loop's thread."""
    if kind == "async":

        async def run_async(view: StateView) -> Any:
            return await runtime.call_async(position, view.store)

        return run_async
    if kind == "inline":

        async def run_inline(view: StateView) -> Any:
            return runtime.call_sync(position, view.store)

        return run_inline

    def run_sync(view: StateView) -> Any:
        return runtime.call_sync(position, view.store)

    return run_sync


def _remote_caller(runtime: Runtime, position: int, executor: NodeExecutor) -> Callable[..., Any]:
    """The node value of one call whose tool runs on ``executor`` (``offload_to``)."""

    async def run_remote(view: StateView) -> Any:
        return await runtime.call_remote(position, view.store, executor)

    return run_remote


def _records(log: RunLog, keys: list[str]) -> dict[int, Mapping[str, Any]]:
    """Each finished call's record (``{"value", "alt"}``), by position."""
    by_key = {key: position for position, key in enumerate(keys)}
    out: dict[int, Mapping[str, Any]] = {}
    for unit, record in log.recorded().items():
        position = by_key.get(unit)
        if position is not None and isinstance(record.result, Mapping):
            out[position] = record.result
    return out


def _unwrap(exc: NodeError, run_id: str | None) -> Exception:
    cause = exc.__cause__
    error: Exception = cause if isinstance(cause, PlanRunError) else exc
    if run_id is not None:
        error.add_note(
            f"finished calls are recorded: run the plan again with run_id={run_id!r} and the "
            "same store to resume from here"
        )
    return error
