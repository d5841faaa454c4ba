"""Notes about runs and calls, and who hears them: the part of the one event vocabulary
that says how work went while it goes (``weft.store.records.Note`` says it of one unit).

    RunNote   a run started, finished, failed or paused (a graph, an agent, a turn ...),
              and the unit of another run it is nested in (``parent``)
    CallNote  a model call finished or failed (what was called, how long it took, the tokens
              it cost, why the model stopped); a tool call started, finished or failed

Notes go to the store's log (``Store.note``: its subscribers and journal see them, as they
see a node's notes) and to the process's *taps* (``tap``: tracing, say), and only while
someone listens: ``watched(store)`` is what a run checks once as it starts, so a run that
nobody watches builds no note at all. ``UNIT`` is the unit of work running in this context
while it is watched (its store and its path ``<run id>/<unit>``): a model call, a tool call
or a run started inside a unit names it as its ``parent``.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Sequence
from contextvars import ContextVar
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final, Literal

from weft.errors import StoreError
from weft.store.records import KIND, Note
from weft.store.values import register_builtin

if TYPE_CHECKING:
    from weft.store.store import Store

logger = logging.getLogger("weft.store")

RunEvent = Literal["started", "finished", "failed", "paused"]
CallEvent = Literal["started", "finished", "failed"]
Tap = Callable[[Any], None]
"""``tap(note)``: hears every ``Note``, ``RunNote`` and ``CallNote`` of the process."""


@dataclass(frozen=True, slots=True, kw_only=True)
class RunNote:
    """A run ``started``, ``finished``, ``failed`` or ``paused``. ``kind`` is the run's kind
    (``graph``, ``agent``, ``turn`` ...), ``label`` its human name (an agent's name);
    ``parent`` the path (``<run id>/<unit>``, or a run's ``key``) of the unit it runs
    inside, if any; ``thread_id`` the conversation a turn belongs to."""

    event: RunEvent
    run_id: str
    kind: str
    label: str | None = None
    parent: str | None = None
    thread_id: str | None = None
    duration_ms: float | None = None
    error: str | None = None

    @property
    def key(self) -> str:
        """What names this run among the runs going on: its id (a turn's within its
        thread: ``<thread id>/<run id>``, as turn ids repeat from thread to thread)."""
        return self.run_id if self.thread_id is None else f"{self.thread_id}/{self.run_id}"


@dataclass(frozen=True, slots=True, kw_only=True)
class CallNote:
    """A model call (``call="model"``), told once as it ends (``finished`` or ``failed``),
    or a tool call (``call="tool"``), told as it starts too: what runs inside a tool (an
    agent, a plan) runs in it, and names its ``key`` as its parent.

    ``name`` is the tool's name or the model's; ``call_id`` the tool call's id (as the
    model sent it) or a plan call's id; ``parent`` the unit it was made in (``UNIT``);
    ``key`` a tool call's own path while it runs; ``started_at`` wall-clock seconds. For
    a model call: ``provider`` (``openai``, ``anthropic`` ...), ``operation`` (``chat``,
    or ``text_completion`` for a reasoner given a prompt), ``request_model`` and
    ``response_model``, the tokens it cost and ``finish_reasons`` (the provider's words)."""

    event: CallEvent
    call: Literal["model", "tool"]
    name: str
    call_id: str | None = None
    parent: str | None = None
    key: str | None = None
    started_at: float = 0.0
    duration_ms: float | None = None
    error: str | None = None
    provider: str | None = None
    operation: str | None = None
    request_model: str | None = None
    response_model: str | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    finish_reasons: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if not isinstance(self.finish_reasons, tuple):  # a list once it was stored as JSON
            object.__setattr__(self, "finish_reasons", tuple(self.finish_reasons))


register_builtin(RunNote, "weft.RunNote")
register_builtin(CallNote, "weft.CallNote")

NOTES: Final = (Note, RunNote, CallNote)
"""Every type of note."""

TAPS: Final[list[Tap]] = []
"""The taps of this process, in the order they were added (``tap``)."""

UNIT: ContextVar[tuple[Store | None, str] | None] = ContextVar("weft_unit", default=None)
"""The watched unit of work running in this context: ``(its run's store, its path)``."""


def tap(fn: Tap) -> Callable[[], None]:
    """Hear every note of this process, whatever store it goes to (and make every run
    watched while it listens); returns the function that stops it. Keep ``fn`` quick: it
    runs where the note is made. One that raises is logged and changes nothing."""
    if not callable(fn):
        raise StoreError(f"tap({fn!r}): a tap is a function of one note")
    TAPS.append(fn)

    def untap() -> None:
        with contextlib.suppress(ValueError):
            TAPS.remove(fn)

    return untap


def watched(store: Store | None) -> bool:
    """Whether notes about work on ``store`` (None: work with no store) have a listener."""
    return bool(TAPS) or (store is not None and store.observed)


def watching() -> bool:
    """Whether a call made now, in this context, is told to anyone: a tap listens, or it
    is made inside a watched unit."""
    return bool(TAPS) or UNIT.get() is not None


def emit(store: Store | None, path: str, note: Any, source: str | None = None) -> None:
    """Tell ``note`` (at ``path`` of kind ``step``) to the store's log and to the taps."""
    if store is not None:
        store.note(KIND, path, note, source=source)
    for fn in TAPS:
        _hear(fn, note)


def emit_many(store: Store, notes: Sequence[tuple[str, Any, str | None]]) -> None:
    """``emit`` for several ``(path, note, source)`` in order, as one commit of the store."""
    store.note_many(KIND, notes)
    for fn in TAPS:
        for _, note, _ in notes:
            _hear(fn, note)


def emit_checked(store: Store, notes: Sequence[tuple[str, Any, str | None]]) -> None:
    """``emit_many`` of notes whose names and fields the caller checked
    (``Store._log_notes``): a graph's started and finished notes."""
    store._log_notes(KIND, notes)
    for fn in TAPS:
        for _, note, _ in notes:
            _hear(fn, note)


def _hear(fn: Tap, note: Any) -> None:
    try:
        fn(note)
    except Exception:
        logger.exception("the note tap %r raised on %r; the run goes on", fn, note)
