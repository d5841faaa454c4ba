"""The team's shared ``TaskBoard`` and ``MessageBus``.

A board task moves ``open`` -> ``claimed`` (by one agent) -> ``completed`` (with a
result) or ``failed`` (with a reason); a claimed task can be released back to
``open``. A task with ``depends_on`` can be claimed only once those tasks completed.
Every change is a ``BoardEvent`` that subscribers hear (``on_event``), in order; the
``TeamExecutor`` mirrors ``task_completed`` events into memory as ``task:<id>``. The
board is safe to use from several threads; a refused move raises ``ExecutorError``
saying why (the team tools hand that text to the model).
"""

from __future__ import annotations

import itertools
import logging
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from typing import Any, Final, Literal

from weft.errors import ExecutorError

logger: Final = logging.getLogger("weft.plan")

BoardStatus = Literal["open", "claimed", "completed", "failed"]
EventType = Literal["task_added", "task_claimed", "task_released", "task_completed", "task_failed"]


@dataclass(frozen=True, slots=True, kw_only=True)
class BoardTask:
    """One task on the board (immutable: each change makes a new one)."""

    id: str
    title: str
    description: str = ""
    depends_on: tuple[str, ...] = ()
    status: BoardStatus = "open"
    assignee: str | None = None
    result: Any = None
    error: str | None = None
    added_by: str | None = None

    def summary(self) -> dict[str, Any]:
        """What a model sees of it on the board: no result (that is read from memory)."""
        out: dict[str, Any] = {"id": self.id, "title": self.title, "status": self.status}
        if self.description:
            out["description"] = self.description
        if self.depends_on:
            out["depends_on"] = list(self.depends_on)
        if self.assignee:
            out["assignee"] = self.assignee
        if self.status == "completed":
            out["result_key"] = f"task:{self.id}"
        if self.error:
            out["error"] = self.error
        return out


@dataclass(frozen=True, slots=True, kw_only=True)
class BoardEvent:
    type: EventType
    task_id: str
    agent: str | None
    seq: int


class TaskBoard:
    """Tasks several agents share (see the module docstring)."""

    def __init__(self, tasks: Iterable[BoardTask] = ()) -> None:
        self._tasks: dict[str, BoardTask] = {}
        self._lock = threading.RLock()
        self._subscribers: list[Callable[[BoardEvent], object]] = []
        self._seq = itertools.count(1)
        for task in tasks:
            self.add(task.id, task.title, task.description, depends_on=task.depends_on)

    # ------------------------------------------------------------------ reads

    def get(self, task_id: str) -> BoardTask | None:
        return self._tasks.get(task_id)

    def list(self, status: BoardStatus | None = None) -> list[BoardTask]:
        """Tasks in the order they were added, of one status if given."""
        return [t for t in self._tasks.values() if status is None or t.status == status]

    @property
    def finished(self) -> bool:
        """Whether the board has tasks and every one is completed or failed."""
        tasks = list(self._tasks.values())
        return bool(tasks) and all(t.status in ("completed", "failed") for t in tasks)

    def __len__(self) -> int:
        return len(self._tasks)

    # ------------------------------------------------------------------ moves

    def add(
        self,
        task_id: str,
        title: str,
        description: str = "",
        *,
        depends_on: Iterable[str] = (),
        agent: str | None = None,
    ) -> BoardTask:
        with self._lock:
            if not task_id or not isinstance(task_id, str):
                raise ExecutorError(f"a board task needs a non-empty id, got {task_id!r}")
            if task_id in self._tasks:
                raise ExecutorError(f"the board already has a task {task_id!r}; pick another id")
            deps = tuple(depends_on)
            unknown = [d for d in deps if d not in self._tasks]
            if unknown:
                raise ExecutorError(
                    f"task {task_id!r} depends on {', '.join(unknown)}, which the board does "
                    "not have; add those tasks first"
                )
            task = BoardTask(
                id=task_id, title=title, description=description, depends_on=deps, added_by=agent
            )
            self._tasks[task_id] = task
            self._emit("task_added", task_id, agent)
            return task

    def claim(self, task_id: str, agent: str) -> BoardTask:
        with self._lock:
            task = self._need(task_id)
            if task.status != "open":
                who = f" by {task.assignee}" if task.assignee else ""
                raise ExecutorError(f"task {task_id!r} is {task.status}{who}, not open")
            waiting = [d for d in task.depends_on if self._tasks[d].status != "completed"]
            if waiting:
                raise ExecutorError(
                    f"task {task_id!r} waits for {', '.join(waiting)} to complete; claim "
                    "another task meanwhile"
                )
            return self._move(task, "task_claimed", agent, status="claimed", assignee=agent)

    def release(self, task_id: str, agent: str) -> BoardTask:
        with self._lock:
            task = self._owned(task_id, agent)
            return self._move(task, "task_released", agent, status="open", assignee=None)

    def complete(self, task_id: str, agent: str, result: Any) -> BoardTask:
        with self._lock:
            task = self._owned(task_id, agent)
            return self._move(task, "task_completed", agent, status="completed", result=result)

    def fail(self, task_id: str, agent: str, reason: str) -> BoardTask:
        with self._lock:
            task = self._owned(task_id, agent)
            return self._move(task, "task_failed", agent, status="failed", error=reason)

    def on_event(self, fn: Callable[[BoardEvent], object]) -> Callable[[], None]:
        """Call ``fn(event)`` after every change; returns a function that unsubscribes.
        A subscriber that raises is logged and never breaks the move."""
        with self._lock:
            self._subscribers = [*self._subscribers, fn]

        def unsubscribe() -> None:
            with self._lock:
                self._subscribers = [s for s in self._subscribers if s is not fn]

        return unsubscribe

    # ------------------------------------------------------------- internals

    def _need(self, task_id: str) -> BoardTask:
        task = self._tasks.get(task_id)
        if task is None:
            known = ", ".join(self._tasks) or "none"
            raise ExecutorError(f"the board has no task {task_id!r}; its tasks: {known}")
        return task

    def _owned(self, task_id: str, agent: str) -> BoardTask:
        task = self._need(task_id)
        if task.status != "claimed" or task.assignee != agent:
            state = f"claimed by {task.assignee}" if task.status == "claimed" else task.status
            raise ExecutorError(
                f"task {task_id!r} is {state}; only the agent that claimed it can finish it "
                "(claim it first with board_claim)"
            )
        return task

    def _move(self, task: BoardTask, event: EventType, agent: str, **changes: Any) -> BoardTask:
        moved = replace(task, **changes)
        self._tasks[task.id] = moved
        self._emit(event, task.id, agent)
        return moved

    def _emit(self, event_type: EventType, task_id: str, agent: str | None) -> None:
        event = BoardEvent(type=event_type, task_id=task_id, agent=agent, seq=next(self._seq))
        for fn in self._subscribers:
            try:
                fn(event)
            except Exception:
                logger.exception("board subscriber %r raised on %s", fn, event.type)


@dataclass(frozen=True, slots=True, kw_only=True)
class TeamMessage:
    sender: str
    to: str
    content: str
    seq: int


class MessageBus:
    """Messages between agents: ``send`` to one agent or ``"*"`` (everyone else);
    ``receive`` returns an agent's unread messages, oldest first, and marks them read."""

    def __init__(self) -> None:
        self._log: list[TeamMessage] = []
        self._read: dict[str, int] = {}
        self._members: list[str] = []
        self._lock = threading.Lock()

    def register(self, agent: str) -> None:
        with self._lock:
            if agent not in self._members:
                self._members.append(agent)
                self._read.setdefault(agent, 0)

    @property
    def members(self) -> tuple[str, ...]:
        return tuple(self._members)

    def send(self, sender: str, to: str, content: str) -> TeamMessage:
        with self._lock:
            if to != "*" and to not in self._members:
                raise ExecutorError(
                    f"no teammate is named {to!r}; the team: {', '.join(self._members)} "
                    "(or '*' for everyone)"
                )
            message = TeamMessage(sender=sender, to=to, content=content, seq=len(self._log) + 1)
            self._log.append(message)
            return message

    def receive(self, agent: str) -> list[TeamMessage]:
        with self._lock:
            start = self._read.get(agent, 0)
            self._read[agent] = len(self._log)
            return [
                m for m in self._log[start:] if m.sender != agent and (m.to == agent or m.to == "*")
            ]

    @property
    def history(self) -> tuple[TeamMessage, ...]:
        return tuple(self._log)
