"""The notes of an agent's run while someone watches (``weft.store.notes``): the run as a
``RunNote`` of kind ``agent``, each iteration as a unit ``iter/<n>`` (``Note`` of kind
``iteration``), and the iteration as the ``UNIT`` its model calls and actions run in.
An agent nobody watches makes none of this (``Agent`` checks ``watched`` once a run)."""

from __future__ import annotations

import uuid
from collections.abc import Coroutine
from time import perf_counter
from typing import Any

from weft.graph.pause import Interrupt
from weft.store import Note, RunNote, Store
from weft.store.notes import UNIT, emit


class AgentWatch:
    """One watched run (or branch loop) of an agent."""

    __slots__ = ("_began", "_iteration", "name", "parent", "run_id", "store")

    def __init__(self, name: str, store: Store, run_id: str | None) -> None:
        self.name = name
        self.store = store
        self.run_id = run_id or f"agent-{uuid.uuid4().hex[:12]}"
        outer = UNIT.get()
        self.parent = None if outer is None else outer[1]
        self._iteration: int | None = None
        self._began = 0.0

    async def around(self, loop: Coroutine[Any, Any, Any]) -> Any:
        """Await the agent's ``loop`` between the run's notes."""
        began = perf_counter()
        try:
            self._run("started")
        except BaseException:
            loop.close()
            raise
        token = UNIT.set(None)
        try:
            result = await loop
        except Interrupt:
            self._end_iteration("paused")
            self._run("paused", began)
            raise
        except BaseException as exc:
            error = f"{type(exc).__name__}: {exc}"
            self._end_iteration("failed", error)
            self._run("failed", began, error)
            raise
        finally:
            UNIT.reset(token)
        self._run("finished", began)
        return result

    def iteration(self, n: int) -> None:
        """Iteration ``n`` starts: its model calls and actions are made in it."""
        self._iteration, self._began = n, perf_counter()
        self._unit("started", n)
        UNIT.set((self.store, f"{self.run_id}/iter/{n}"))

    def restored(self, n: int) -> None:
        """Iteration ``n`` was restored from its record: it does not run again."""
        self._unit("skipped", n, reason="recorded")

    def iteration_done(self) -> None:
        self._end_iteration("finished")

    def _end_iteration(self, event: Any, error: str | None = None) -> None:
        n = self._iteration
        if n is None:
            return
        self._iteration = None
        UNIT.set(None)
        ms = int((perf_counter() - self._began) * 1e6) / 1000
        self._unit(event, n, duration_ms=ms, error=error)

    def _unit(self, event: Any, n: int, **fields: Any) -> None:
        unit = f"iter/{n}"
        note = Note(
            event=event,
            unit=unit,
            kind="iteration",
            label=self.name,
            run_id=self.run_id,
            **fields,
        )
        emit(self.store, f"{self.run_id}/{unit}", note, self.name)

    def _run(self, event: Any, began: float = 0.0, error: str | None = None) -> None:
        ms = int((perf_counter() - began) * 1e6) / 1000 if began else None
        note = RunNote(
            event=event,
            run_id=self.run_id,
            kind="agent",
            label=self.name,
            parent=self.parent,
            duration_ms=ms,
            error=error,
        )
        emit(self.store, self.run_id, note, self.name)
