"""The WorkGraph engine: nodes, pass-down modes, stop flags, fan-out and fan-in, sync and
asyncio execution, state nodes, and save/resume of node results."""

from weft.graph.build import build_nodes_from_paths
from weft.graph.graph import WorkGraph
from weft.graph.modes import PassDown, ResultPassDownMode, WorkGraphStopFlags
from weft.graph.node import RetryPolicy, WorkGraphNode
from weft.graph.state import StateView

__all__ = [
    "PassDown",
    "ResultPassDownMode",
    "RetryPolicy",
    "StateView",
    "WorkGraph",
    "WorkGraphNode",
    "WorkGraphStopFlags",
    "build_nodes_from_paths",
]
