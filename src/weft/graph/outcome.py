"""What became of each node, and what a run gives back: its output or its error.

Output. ``run()`` returns the sink's result when the graph has one sink, and the list of
results of the finished sinks in start order (depth-first from each start node in turn)
when it has several. After ``Terminate`` the terminating node counts as an end too: a
one-sink graph that stopped before its sink returns the terminating node's result, and
a several-sink graph lists it among the ends. A sink that was skipped or aborted gives
``None`` (one sink) or is left out (several).

Errors. A ``NodeError`` names the node's key and id, what it raised and the path of ids
from a start node that led to it (through each node's first finished predecessor), and
keeps the original exception as ``__cause__``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

from weft.errors import NodeError, NodeTimeoutError
from weft.graph.build import Schedule

PENDING: Final = 0
DONE: Final = 1
ABORTED: Final = 2
SKIPPED: Final = 3
FAILED: Final = 4
PAUSED: Final = 5


class TimedOut(TimeoutError):
    """The engine's own timeout of a node, told apart from a TimeoutError the node raised."""


def node_error(
    schedule: Schedule,
    status: Sequence[int],
    run_id: str | None,
    i: int,
    exc: BaseException,
    attempts: int,
) -> NodeError:
    """The error of a run that node ``i`` stopped by raising ``exc``."""
    key, label = schedule.keys[i], schedule.labels[i]
    if isinstance(exc, TimedOut):
        what = f"ran past its timeout of {exc.args[0]:g} s"
        if not schedule.asyncs[i]:
            what += " (its thread keeps running: Python cannot stop a thread)"
        cls: type[NodeError] = NodeTimeoutError
    else:
        what = f"raised {type(exc).__name__}: {exc}"
        cls = NodeError
    tries = f" after {attempts} attempts" if attempts > 1 else ""
    hint = "the run stopped; nodes already running finished and nothing new started"
    if run_id is not None:
        hint += (
            f". Finished nodes are recorded: run again with run_id={run_id!r} "
            "and the same store to resume from here"
        )
    error = cls(
        f"node {key} ({label!r}) {what}{tries} (path: {path_to(schedule, status, i)}); {hint}"
    )
    error.__cause__ = exc
    return error


def path_to(schedule: Schedule, status: Sequence[int], i: int) -> str:
    """Ids from a start node to ``i``, through each node's first finished predecessor."""
    ids = [schedule.labels[i]]
    while schedule.preds[i]:
        preds = schedule.preds[i]
        i = next((p for p in preds if status[p] == DONE), preds[0])
        ids.append(schedule.labels[i])
    return " -> ".join(reversed(ids))


def output_of(
    schedule: Schedule, status: Sequence[int], results: Sequence[Any], terminators: Sequence[int]
) -> Any:
    """What ``run()`` returns."""
    sinks = schedule.sinks
    if len(sinks) == 1:
        sink = sinks[0]
        if status[sink] == DONE:
            return results[sink]
        return results[min(terminators)] if terminators else None
    ends = {s for s in sinks if status[s] == DONE}
    ends.update(terminators)
    return [results[i] for i in sorted(ends, key=schedule.start_rank.__getitem__)]
