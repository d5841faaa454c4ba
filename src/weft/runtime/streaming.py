"""Following a turn while it runs: stage events, and the result at the end.

The runtime's stages (``load``, ``loaders``, ``graph``, ``finalise``, ``persist``) and each
node, from the engine's node notes, are timed here; the same timings go to the turn's
``diagnostics``.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from time import perf_counter
from typing import Any, Final, Literal

from weft.store import Event, Note

logger: Final = logging.getLogger("weft.runtime")

Phase = Literal["started", "finished", "failed", "skipped", "paused"]
StageKind = Literal["runtime", "node"]
Listener = Callable[["StageEvent"], object]


@dataclass(frozen=True, slots=True, kw_only=True)
class StageEvent:
    """A stage of a turn (a runtime stage or a node, as ``kind`` says) started, finished,
    failed or was skipped; ``at_ms`` is the time since the turn began."""

    label: str
    phase: Phase
    elapsed_ms: float
    kind: StageKind
    thread_id: str
    at_ms: float


@dataclass(frozen=True, slots=True, kw_only=True)
class TurnResult:
    """The end of a streamed turn: its output (what ``arun_turn`` returns) and more."""

    output: Any
    thread_id: str
    turn: int
    elapsed_ms: float


class Stages:
    """The clock of one turn: times stages and nodes, and tells the listener."""

    __slots__ = ("listener", "node_ms", "stage_ms", "start", "thread_id")

    def __init__(self, thread_id: str, listener: Listener | None) -> None:
        self.thread_id = thread_id
        self.listener = listener
        self.start = perf_counter()
        self.stage_ms: dict[str, float] = {}
        self.node_ms: dict[str, float] = {}

    def elapsed_ms(self) -> float:
        return ms_since(self.start)

    @contextmanager
    def stage(self, label: str) -> Iterator[None]:
        """Time the block as stage ``label``; a block that raises reports ``failed``."""
        self.emit(label, "started", 0.0, "runtime")
        began = perf_counter()
        try:
            yield
        except BaseException:
            self.emit(label, "failed", ms_since(began), "runtime")
            raise
        self.stage_ms[label] = ms = ms_since(began)
        self.emit(label, "finished", ms, "runtime")

    def emit(self, label: str, phase: Phase, elapsed: float, kind: StageKind) -> None:
        listener = self.listener
        if listener is None:
            return
        event = StageEvent(
            label=label,
            phase=phase,
            elapsed_ms=elapsed,
            kind=kind,
            thread_id=self.thread_id,
            at_ms=self.elapsed_ms(),
        )
        try:
            listener(event)
        except Exception:
            logger.exception(
                "a turn's event listener raised on %s %s; the turn goes on", label, phase
            )

    def on_note(self, event: Event) -> None:
        """A store subscriber: turns the graph engine's node notes into stage events."""
        note = event.value
        if event.op != "note" or not isinstance(note, Note):
            return
        label = note.label or note.unit
        elapsed = note.duration_ms or 0.0
        if note.event == "finished":
            self.node_ms[label] = round(self.node_ms.get(label, 0.0) + elapsed, 3)
        self.emit(label, note.event, elapsed, "node")


def ms_since(began: float) -> float:
    """Milliseconds since ``began`` (a ``perf_counter()``), rounded to the microsecond."""
    return round((perf_counter() - began) * 1000, 3)
