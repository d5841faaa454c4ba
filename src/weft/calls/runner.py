"""``Plan.run``: a validated plan of tool calls, executed on the WorkGraph engine.

Each call (each call on each instance) becomes one ``WorkGraphNode`` whose edges come
from the data flow (``weft.calls.dataflow``); data moves through the store, not through
pass-down. Independent calls run concurrently: async tools as tasks, sync tools inline
when they are the only work and on the engine's threads otherwise. Each result is
written to its output path as its call finishes, with ``source=`` the call's id.

Resume. With ``run_id`` (and the same store, or a ``DurableRun`` whose store outlives a
crash), every finished call is recorded by the engine (``step:<run_id>/<node key>``);
running the plan again with that id restores recorded calls instead of calling them and
runs the rest. A global call's writes are already in the store; an instance's fork is
new in every run, so a restored instance call's writes are made again into it. A call
that crashed after writing but before its record was stored runs again (at least once).

A run that fails raises the ``PlanRunError`` of the first call that failed (its cause is
the tool's own exception); calls already running finish, and their writes are kept.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from weft.calls.dataflow import CompiledPlan
from weft.calls.execute import Runtime, is_async_tool
from weft.calls.result import PlanResult
from weft.calls.tools import Tool
from weft.errors import NodeError, PlanRunError, PlanValidationError
from weft.graph import WorkGraph, WorkGraphNode
from weft.persist import DurableRun
from weft.persist._gc import paused
from weft.store import Store


def run_store(store: Store | None, durable: DurableRun | None) -> Store:
    """The store a run works on: ``durable``'s, else ``store``, else a new one."""
    if durable is not None:
        if store is not None and store is not durable.store:
            raise PlanValidationError(
                "pass store= or durable=, not both: a durable run brings its own store"
            )
        return durable.store
    return store if store is not None else Store(name="plan")


async def arun_compiled(
    compiled: CompiledPlan,
    store: Store,
    *,
    merge_instances: bool = False,
    run_id: str | None = None,
    durable: DurableRun | None = None,
    max_concurrency: int | None = None,
) -> PlanResult:
    """Run ``compiled`` (validated against ``store``, see ``run_store``) to the end:
    instances get a fork each (``weft.calls.instancing``), merged into ``store`` at the
    end, in instance order, only with ``merge_instances=True``; ``run_id`` records the run
    for resume; ``durable`` runs on a ``DurableRun`` (its run id by default);
    ``max_concurrency`` bounds the calls in flight."""
    with paused():  # building thousands of nodes: no cycles to find, only time to lose
        runtime = Runtime(compiled, store)
        graph, keys = _graph(compiled, runtime, max_concurrency)
    run_id = run_id if run_id is not None or durable is None else durable.run_id
    merged_before = _completed(store, run_id)
    if graph is not None:
        _restore(compiled, runtime, keys, store, run_id)
        try:
            if durable is not None:
                await durable.arun_graph(graph, run_id=run_id)
            else:
                await graph.arun(**_engine_options(store, run_id))
        except NodeError as exc:
            error = _unwrap(exc, run_id)
            raise error from error.__cause__
        finally:
            if runtime.sequencer is not None:
                runtime.sequencer.flush_all()
    return _finish(compiled, runtime, store, merge_instances and not merged_before, run_id)


def _graph(
    compiled: CompiledPlan, runtime: Runtime, max_concurrency: int | None
) -> tuple[WorkGraph | None, list[str]]:
    """The WorkGraph of the plan's calls, and each node's engine key (by position)."""
    if not compiled.nodes:
        return None, []
    graph_nodes = []
    kinds = {name: _kind(tool) for name, tool in compiled.tools.items()}
    for node in compiled.nodes:
        value = _caller(runtime, node.position, kinds[node.tool.name])
        graph_nodes.append(WorkGraphNode(value, id=node.id))
    for position in compiled.order:
        for dep in compiled.nodes[position].deps:
            graph_nodes[dep].add_next(graph_nodes[position])
    starts = [graph_nodes[p] for p in compiled.order if not compiled.nodes[p].deps]
    graph = WorkGraph(start_nodes=starts, max_concurrency=max_concurrency)
    index = {id(n): i for i, n in enumerate(graph_nodes)}
    keys = [""] * len(graph_nodes)
    for graph_node, key in zip(graph.nodes, graph.keys, strict=True):
        keys[index[id(graph_node)]] = key
    return graph, keys


def _kind(tool: Tool) -> str:
    if is_async_tool(tool.fn):
        return "async"
    return "thread" if tool.blocking else "inline"


def _caller(runtime: Runtime, position: int, kind: str) -> Callable[[], Any]:
    """The node value of one call: a plain closure (a partial would cost the engine an
    ``inspect`` walk per node to find out whether it is async). A sync tool declared
    ``blocking=False`` is wrapped as async, so the engine runs it on its loop's thread."""
    if kind == "async":

        async def run_async() -> Any:
            return await runtime.call_async(position)

        return run_async
    if kind == "inline":

        async def run_inline() -> Any:
            return runtime.call_sync(position)

        return run_inline

    def run_sync() -> Any:
        return runtime.call_sync(position)

    return run_sync


def _restore(
    compiled: CompiledPlan, runtime: Runtime, keys: list[str], store: Store, run_id: str | None
) -> None:
    """On resume, take the recorded calls' results (and remake instance writes)."""
    if run_id is None:
        return
    for position in compiled.order:
        record = store.value("step", f"{run_id}/{keys[position]}", None)
        if isinstance(record, Mapping) and "result" in record:
            runtime.restore(compiled.nodes[position], record["result"])


def _completed(store: Store, run_id: str | None) -> bool:
    """Whether ``run_id`` already ran to the end (its instances were merged then)."""
    if run_id is None:
        return False
    record = store.value("step", run_id, None)
    return isinstance(record, Mapping) and record.get("status") == "completed"


def _engine_options(store: Store, run_id: str | None) -> dict[str, Any]:
    # the store goes to the engine only to record (run_id) or for its observers: a run
    # nobody watches takes the engine's plain path
    if run_id is not None or store.observed:
        return {"store": store, "run_id": run_id}
    return {}


def _unwrap(exc: NodeError, run_id: str | None) -> Exception:
    cause = exc.__cause__
    error: Exception = cause if isinstance(cause, PlanRunError) else exc
    if run_id is not None:
        error.add_note(
            f"finished calls are recorded: run the plan again with run_id={run_id!r} and the "
            "same store to resume from here"
        )
    return error


def _finish(
    compiled: CompiledPlan,
    runtime: Runtime,
    store: Store,
    merge_instances: bool,
    run_id: str | None,
) -> PlanResult:
    if merge_instances and runtime.forks:
        store.merge([runtime.forks[name] for name in compiled.instances])
    return runtime.result(run_id=run_id, simulated=False)
