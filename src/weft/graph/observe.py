"""Lifecycle notes: what a run tells the observers of its store, as typed ``Note`` s.

Notes go to the run store through ``Store.note_many`` (kind ``step``, path ``<run id>/<node
key>``), only when a store is given and someone observes it as the run starts
(``Store.observed``: a subscriber such as a live UI or the turn runtime's stage events;
subscribe before you start the run), so a run nobody watches pays nothing for them, not
even a clock read per node::

    Note(event="started" | "finished" | "failed" | "skipped" | "paused", unit=<node key>,
         label=<id>, run_id=..., duration_ms=..., flag=..., error=..., reason=...)

``skipped`` carries a reason: ``"aborted"`` (every predecessor was aborted or skipped),
``"recorded"`` (restored from a step record) or ``"cancelled"`` (stopped by a failure).
The engine holds the notes of a batch of completions or dispatches and logs them in one
commit before any node can run or any record is written, so the log keeps the order in
which things happened.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

from weft.graph.modes import WorkGraphStopFlags
from weft.store import Note, Store
from weft.store.records import KIND, NoteEvent

_CONTINUE: Final = WorkGraphStopFlags.Continue


class Observer:
    """Sends one run's lifecycle notes to its store (see the module docstring)."""

    __slots__ = ("_held", "_keys", "_labels", "_paths", "run_id", "store")

    def __init__(
        self, store: Store, run_id: str, keys: Sequence[str], labels: Sequence[str]
    ) -> None:
        self.store = store
        self.run_id = run_id
        self._keys = keys
        self._labels = labels
        self._paths: list[str] | None = None  # "<run id>/<node key>", built on the first note
        self._held: list[tuple[str, Note, str]] | None = None

    def _send(self, i: int, event: NoteEvent, **fields: Any) -> None:
        if not self.store.observed:
            return
        paths = self._paths
        if paths is None:
            paths = self._paths = [f"{self.run_id}/{key}" for key in self._keys]
        key = self._keys[i]
        note = Note(event=event, unit=key, label=self._labels[i], run_id=self.run_id, **fields)
        if self._held is not None:
            self._held.append((paths[i], note, key))
        else:
            self.store.note(KIND, paths[i], note, source=key)

    def hold(self) -> None:
        """Keep the notes from now on, to log them in one commit at ``flush``/``release``."""
        if self._held is None:
            self._held = []

    def flush(self) -> None:
        """Log the notes kept so far (and go on keeping them, if held)."""
        held = self._held
        if held:
            self._held = []
            self.store.note_many(KIND, held)

    def release(self) -> None:
        """Log the notes kept so far and stop keeping them."""
        self.flush()
        self._held = None

    def started(self, i: int) -> None:
        self._send(i, "started")

    def finished(self, i: int, flag: WorkGraphStopFlags, seconds: float) -> None:
        flag_name = None if flag is _CONTINUE else flag.name
        self._send(i, "finished", duration_ms=int(seconds * 1e6) / 1000, flag=flag_name)

    def failed(self, i: int, error: BaseException, seconds: float) -> None:
        message = f"{type(error).__name__}: {error}"
        self._send(i, "failed", duration_ms=int(seconds * 1e6) / 1000, error=message)

    def paused(self, i: int) -> None:
        self._send(i, "paused")

    def skipped(self, i: int, reason: str) -> None:
        self._send(i, "skipped", reason=reason)
