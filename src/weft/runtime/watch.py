"""The notes of a turn while someone watches (``weft.store.notes``): the turn as a
``RunNote`` of kind ``turn`` with its thread's id, and as the ``UNIT`` its graph runs in.
The started and finished notes commit with the turn; a turn that fails or pauses stores
nothing of itself, so its last note goes to the taps alone."""

from __future__ import annotations

from contextvars import Token
from time import perf_counter
from typing import Any

from weft.store import RunNote, Store
from weft.store.notes import UNIT, emit


class TurnWatch:
    """One watched turn of thread ``thread_id``, recorded as run ``run_id``."""

    __slots__ = ("_began", "_token", "run_id", "thread_id")

    def __init__(self, thread_id: str, run_id: str) -> None:
        self.thread_id = thread_id
        self.run_id = run_id
        self._began = 0.0
        self._token: Token[Any] | None = None

    def start(self, tx: Store) -> None:
        """The turn starts its work in ``tx`` (the turn's transaction)."""
        self._began = perf_counter()
        parent = UNIT.get()
        note = self._note("started", parent=None if parent is None else parent[1])
        emit(tx, self.run_id, note, "weft.turn")
        self._token = UNIT.set((tx, note.key))

    @property
    def open(self) -> bool:
        """Whether the turn started and has not ended."""
        return self._token is not None

    def end(self, tx: Store | None, event: Any = "finished", error: str | None = None) -> None:
        """The turn ended (``tx`` None: its transaction is not committed)."""
        if self._token is None:
            return
        UNIT.reset(self._token)
        self._token = None
        ms = int((perf_counter() - self._began) * 1e6) / 1000
        emit(tx, self.run_id, self._note(event, duration_ms=ms, error=error), "weft.turn")

    def _note(self, event: Any, **fields: Any) -> RunNote:
        return RunNote(
            event=event, run_id=self.run_id, kind="turn", thread_id=self.thread_id, **fields
        )
