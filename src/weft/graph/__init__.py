"""The WorkGraph engine, weft's one DAG scheduler: nodes, pass-down modes, stop flags,
fan-out and fan-in on store forks, sync and asyncio execution, state nodes, a typed run
context, and resume of finished work."""

from weft.graph.build import build_nodes_from_paths
from weft.graph.context import RunContext
from weft.graph.graph import WorkGraph
from weft.graph.modes import PassDown, ResultPassDownMode, WorkGraphStopFlags
from weft.graph.node import RetryPolicy, WorkGraphNode
from weft.graph.pause import Interrupt, Paused, interrupt
from weft.graph.state import StateView

__all__ = [
    "Interrupt",
    "PassDown",
    "Paused",
    "ResultPassDownMode",
    "RetryPolicy",
    "RunContext",
    "StateView",
    "WorkGraph",
    "WorkGraphNode",
    "WorkGraphStopFlags",
    "build_nodes_from_paths",
    "interrupt",
]
