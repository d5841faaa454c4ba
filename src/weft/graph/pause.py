"""Pausing a run to ask a person: ``interrupt(question)``, ``Paused`` and the answers.

Inside any unit of work that weft runs with a run id (a WorkGraph node, a call of a plan of
tool calls, an agent's action, a tool of a Step executor, a node of a turn),
``interrupt(question)`` stops the unit and records the question (any JSON value) as a
``Pause`` (``weft.store.records``). The rest of the run goes on as far as it can without
that unit (parallel branches finish, and may pause too); then the run is stored as paused
and the call that ran it returns ``Paused``, with every question waiting, instead of its
result. Running it again with the same run id and ``answers={question id: answer}``, in
this process or another, days later, skips everything that finished and runs the paused
unit again from its start: this time ``interrupt`` returns the answer.

Code of the paused unit that ran before ``interrupt`` runs again on resume, as in
LangGraph: keep effects before a pause point idempotent, or make them keyed calls
(``ctx.call_once``), whose results are recorded. A unit may pause several times: its pause
points are matched by their order (the first ``interrupt`` gets the first answer), so the
unit must reach them in the same order each time.

``interrupt`` raises ``Interrupt``, a ``BaseException`` like ``KeyboardInterrupt``, so an
``except Exception`` in the unit does not swallow it; do not catch it yourself.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from operator import attrgetter
from typing import Any, Final

from weft.errors import PauseError
from weft.store import RunLog
from weft.store.records import Pause
from weft.store.runlog import UnitExit
from weft.store.values import freeze

_ASKING: Final[ContextVar[Asking | None]] = ContextVar("weft_asking", default=None)


class Interrupt(UnitExit):
    """Units paused: carries their ``Pause`` s up to the code that runs the run."""

    def __init__(self, pauses: tuple[Pause, ...]) -> None:
        super().__init__(*(p.question for p in pauses))
        self.pauses = pauses


@dataclass(frozen=True, slots=True)
class Paused:
    """What a run returns when some unit waits for an answer: its ``run_id`` and the
    ``questions`` waiting (each a ``Pause``: ``.id``, ``.unit``, ``.label``,
    ``.question``). Run again with ``run_id`` and ``answers={q.id: answer, ...}``."""

    run_id: str
    questions: tuple[Pause, ...]

    @property
    def question(self) -> Any:
        """The one question waiting (a ``PauseError`` when several are)."""
        if len(self.questions) != 1:
            ids = ", ".join(q.id for q in self.questions)
            raise PauseError(
                f"run {self.run_id!r} waits for {len(self.questions)} answers ({ids}); read "
                "paused.questions and answer each by its id"
            )
        return self.questions[0].question

    def answer(self, value: Any) -> dict[str, Any]:
        """``{id: value}`` for the one question waiting: ``answers=paused.answer("yes")``."""
        self.question  # noqa: B018 (the one-question check)
        return {self.questions[0].id: value}


class Asking:
    """The pause points of one call of one unit: the n-th ``interrupt`` is point n."""

    __slots__ = ("index", "label", "log", "unit")

    def __init__(self, log: RunLog, unit: str, label: str | None = None) -> None:
        self.log = log
        self.unit = unit
        self.label = label
        self.index = 0

    def ask(self, question: Any) -> Any:
        index = self.index
        self.index = index + 1
        known = self.log.pause(self.unit, index)
        if known is not None and known.answered:
            return known.answer
        if known is None:
            try:
                question = freeze(question, where="a question to a person")
            except Exception as exc:
                raise PauseError(
                    f"interrupt({question!r:.80}) in {self.unit!r}: the question cannot be "
                    f"stored ({exc}); ask with plain JSON data (str, number, list, dict)"
                ) from None
            known = self.log.ask(self.unit, index, question, self.label)  # durable now
        raise Interrupt((known,))


def paused(log: RunLog | None, interrupt: Interrupt, enclosing: Asking | None) -> Paused:
    """A run that runs units itself (an agent, an executor, a turn) caught ``interrupt``:
    with no run id, or inside a unit of an enclosing run, the pause goes up (raised);
    else the run is marked paused and its ``Paused`` returned."""
    if log is not None:
        log.paused()
    if log is None or enclosing is not None:
        raise interrupt
    return Paused(log.run_id, tuple(sorted(interrupt.pauses, key=attrgetter("id"))))


def enclosing() -> Asking | None:
    """The unit of an enclosing recorded run that this code runs in, if any."""
    return _ASKING.get()


def interrupt(question: Any) -> Any:
    """Pause the unit of work running here until a person answers ``question``; returns
    the answer when the run is resumed with it (see the module docstring)."""
    asking = _ASKING.get()
    if asking is None:
        raise PauseError(
            "interrupt() was called outside a unit of a recorded run: a pause must be "
            "resumable, so run the graph (plan, agent, executor, turn) with a run_id and a "
            "store (a DurableRun's store to answer from another process)"
        )
    return asking.ask(question)


@contextmanager
def pausing(point: Asking | None) -> Iterator[None]:
    """Within the block, ``interrupt`` pauses ``point``'s unit (for the layers that call
    units themselves; the WorkGraph engine does it for its nodes). None: no change."""
    if point is None:
        yield
        return
    token = _ASKING.set(point)
    try:
        yield
    finally:
        _ASKING.reset(token)
