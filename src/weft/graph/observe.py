"""Lifecycle notes: what a run tells the observers of its store, as typed ``Note`` s.

Notes go to the run store through ``Store.note_many`` (kind ``step``, path ``<run id>/<node
key>``) and to the process's taps (``weft.store.notes``), only when someone listens as the
run starts (``watched``: a tap such as tracing, or a subscriber of the store such as a live
UI or the turn runtime's stage events; subscribe before you start the run), so a run nobody
watches pays nothing for them, not even a clock read per node. The run itself is told as a
``RunNote`` (``around``), and the node whose code runs is the context's ``UNIT``::

    Note(event="started" | "finished" | "failed" | "skipped" | "paused", unit=<node key>,
         label=<id>, run_id=..., duration_ms=..., flag=..., error=..., reason=...)

``skipped`` carries a reason: ``"aborted"`` (every predecessor was aborted or skipped),
``"recorded"`` (restored from a step record) or ``"cancelled"`` (stopped by a failure).
The engine holds the notes of a batch of completions or dispatches and logs them in one
commit before any node can run or any record is written, so the log keeps the order in
which things happened.
"""

from __future__ import annotations

from collections.abc import Coroutine, Sequence
from time import perf_counter
from typing import Any, Final

from weft.graph.modes import WorkGraphStopFlags
from weft.graph.pause import Paused
from weft.store import Note, RunNote, Store
from weft.store.notes import UNIT, emit, emit_checked, emit_many, watched
from weft.store.records import NoteEvent, node_note

_CONTINUE: Final = WorkGraphStopFlags.Continue


class Observer:
    """Sends one run's lifecycle notes to its store (see the module docstring)."""

    __slots__ = (
        "_held",
        "_keys",
        "_labels",
        "_paths",
        "_plain",
        "_unchecked",
        "run_id",
        "store",
        "unit",
    )

    def __init__(
        self, store: Store, run_id: str, keys: Sequence[str], labels: Sequence[str]
    ) -> None:
        self.store = store
        self.run_id = run_id
        self._keys = keys
        self._labels = labels
        self._paths: list[str] | None = None  # "<run id>/<node key>", built on the first note
        self._plain = False  # every name in its started and finished notes is ASCII (_first)
        self._held: list[tuple[str, Any, str | None]] | None = None
        self._unchecked = False  # a held note the store must check (not all _plain)
        self.unit = UNIT.get()  # the unit this run is nested in, if it is watched

    async def around(self, run: Coroutine[Any, Any, Any]) -> Any:
        """Await ``run`` (the run's ``execute``) between the run's own notes; while it runs,
        ``UNIT`` is the node whose code runs (the engine sets it as it calls a node)."""
        outer = self.unit
        parent = None if outer is None else outer[1]
        began = perf_counter()
        try:
            self._run("started", parent)
        except BaseException:
            run.close()
            raise
        token = UNIT.set(None)
        try:
            output = await run
        except BaseException as exc:
            self._run("failed", parent, began, f"{type(exc).__name__}: {exc}")
            raise
        finally:
            UNIT.reset(token)
        self._run("paused" if isinstance(output, Paused) else "finished", parent, began)
        return output

    def _run(
        self, event: Any, parent: str | None, began: float = 0.0, error: str | None = None
    ) -> None:
        self.flush()
        ms = int((perf_counter() - began) * 1e6) / 1000 if began else None
        note = RunNote(
            event=event,
            run_id=self.run_id,
            kind="graph",
            parent=parent,
            duration_ms=ms,
            error=error,
        )
        emit(self.store, self.run_id, note, "weft.graph")

    def enter(self, i: int) -> None:
        """Node ``i``'s code runs next in this context (a model call in it names it)."""
        UNIT.set((self.store, f"{self.run_id}/{self._keys[i]}"))

    def _send(self, i: int, event: NoteEvent, **fields: Any) -> None:
        if not watched(self.store):
            return
        paths = self._paths or self._first()
        key = self._keys[i]
        note = Note(event=event, unit=key, label=self._labels[i], run_id=self.run_id, **fields)
        if self._held is not None:
            self._held.append((paths[i], note, key))
            self._unchecked = True
        else:
            emit(self.store, paths[i], note, key)

    def _quick(self, i: int, event: NoteEvent, duration_ms: float | None, flag: str | None) -> None:
        """``_send`` of a started or finished note: in a run whose names are all ASCII
        (``_plain``) every field of it is one the store keeps as it is, so it is logged
        unchecked (``Store._log_notes``): two notes a node of a watched run, 4.7 -> 2.5 us
        each with a store subscriber (4.1 -> 1.2 us each in a held batch)."""
        store = self.store
        if not watched(store):
            return
        paths = self._paths
        if paths is None:
            paths = self._first()
        key = self._keys[i]
        note = node_note(event, key, self._labels[i], self.run_id, duration_ms, flag)
        held = self._held
        if held is not None:
            held.append((paths[i], note, key))
            if not self._plain:
                self._unchecked = True
        elif self._plain:
            emit_checked(store, ((paths[i], note, key),))
        else:
            emit(store, paths[i], note, key)

    def _first(self) -> list[str]:
        """At the first note: the notes' paths, and whether the run is ``_plain``."""
        run_id, keys, labels = self.run_id, self._keys, self._labels
        self._plain = run_id.isascii() and _ascii(keys) and _ascii(labels)
        paths = self._paths = [f"{run_id}/{key}" for key in keys]
        return paths

    def hold(self) -> None:
        """Keep the notes from now on, to log them in one commit at ``flush``/``release``."""
        if self._held is None:
            self._held = []

    def flush(self) -> None:
        """Log the notes kept so far (and go on keeping them, if held)."""
        held = self._held
        if held:
            self._held = []
            if self._unchecked:
                self._unchecked = False
                emit_many(self.store, held)
            else:
                emit_checked(self.store, held)

    def release(self) -> None:
        """Log the notes kept so far and stop keeping them."""
        self.flush()
        self._held = None

    def started(self, i: int) -> None:
        self._quick(i, "started", None, None)

    def finished(self, i: int, flag: WorkGraphStopFlags, seconds: float) -> None:
        flag_name = None if flag is _CONTINUE else flag.name
        self._quick(i, "finished", int(seconds * 1e6) / 1000, flag_name)

    def failed(self, i: int, error: BaseException, seconds: float) -> None:
        message = f"{type(error).__name__}: {error}"
        self._send(i, "failed", duration_ms=int(seconds * 1e6) / 1000, error=message)

    def paused(self, i: int) -> None:
        self._send(i, "paused")

    def skipped(self, i: int, reason: str) -> None:
        self._send(i, "skipped", reason=reason)


def _ascii(names: Sequence[str | None]) -> bool:
    """Whether every name is an ASCII string (or None)."""
    for name in names:
        if name is not None and (name.__class__ is not str or not name.isascii()):
            return False
    return True
