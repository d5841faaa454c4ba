"""The team's shared ``TaskBoard`` and ``MessageBus``: views over entries of the team's store.

Store layout (``state`` entries under the team's name): ``<team>/board/<id>`` one per
task (``BoardTask.to_dict``, written whole on every move, the move and agent in
``meta``), ``<team>/bus`` the messages (``append``), ``<team>/members`` (``union``),
``<team>/read/<member>`` a read cursor. AgentMemory never sees ``state``, so models see
the board only through the team tools and a ``memory_write`` cannot forge a move.
A refused move raises ``ExecutorError`` (the team tools hand its text to the model) and
writes nothing; moves and sends are atomic across every board and bus on one store.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable, Iterable, Mapping
from dataclasses import asdict, dataclass, fields, replace
from typing import Any, Final, Literal, get_args

from weft.errors import ExecutorError
from weft.store import Event, Store, reducers

BoardStatus = Literal["open", "claimed", "completed", "failed"]
EventType = Literal["task_added", "task_claimed", "task_released", "task_completed", "task_failed"]
MOVES: Final[frozenset[str]] = frozenset(get_args(EventType))
STATE: Final = "state"

_locks: weakref.WeakKeyDictionary[Store, threading.RLock] = weakref.WeakKeyDictionary()
_locks_guard: Final = threading.Lock()


def _lock_of(store: Store) -> threading.RLock:
    """One lock per store, shared by every board and bus over it (check, then write)."""
    with _locks_guard:
        return _locks.setdefault(store, threading.RLock())


def _checked(store: Store | None, team: str, what: str) -> Store:
    if not isinstance(team, str) or not team or "/" in team:
        raise ExecutorError(
            f"{what}: team={team!r}; a team's name is a non-empty string without '/' "
            "(it names the store paths state:<team>/...)"
        )
    if store is None:
        return Store(name=team)
    if not isinstance(store, Store):
        raise ExecutorError(
            f"{what} takes the team's store first (an AgentMemory's .store), got a "
            f"{type(store).__name__}; pass tasks=[...] by keyword"
        )
    return store


@dataclass(frozen=True, slots=True, kw_only=True)
class BoardTask:
    """One task on the board (immutable: each move makes a new one). ``number`` is its
    place on the board (1 for the first task added), which orders ``TaskBoard.list``."""

    id: str
    title: str
    description: str = ""
    depends_on: tuple[str, ...] = ()
    status: BoardStatus = "open"
    assignee: str | None = None
    result: Any = None
    error: str | None = None
    added_by: str | None = None
    number: int = 0

    def summary(self) -> dict[str, Any]:
        """What a model sees of it on the board: no result (that is read from memory)."""
        optional = {
            "description": self.description,
            "depends_on": list(self.depends_on),
            "assignee": self.assignee,
            "result_key": f"task:{self.id}" if self.status == "completed" else None,
            "error": self.error,
        }
        given = {key: value for key, value in optional.items() if value}
        return {"id": self.id, "title": self.title, "status": self.status, **given}

    def to_dict(self) -> dict[str, Any]:
        """The plain dict its store entry holds."""
        data = {f.name: getattr(self, f.name) for f in fields(self)}
        return data | {"depends_on": list(self.depends_on)}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> BoardTask:
        """The task a store entry holds."""
        return cls(**{**data, "depends_on": tuple(data.get("depends_on", ()))})


@dataclass(frozen=True, slots=True, kw_only=True)
class BoardEvent:
    """A move on the board: which, of what task, by whom, and the store event's ``seq``."""

    type: EventType
    task_id: str
    agent: str | None
    seq: int


class TaskBoard:
    """Tasks several agents share, kept in ``store`` (a new one if omitted) under
    ``state:<team>/board/`` (the README's "Executors" shows one)."""

    def __init__(
        self, store: Store | None = None, *, team: str = "team", tasks: Iterable[BoardTask] = ()
    ) -> None:
        self.store = _checked(store, team, "TaskBoard")
        self.team = team
        self._prefix = f"{team}/board/"
        self._lock = _lock_of(self.store)
        for task in tasks:
            self.add(task.id, task.title, task.description, depends_on=task.depends_on)

    def get(self, task_id: str) -> BoardTask | None:
        """The task with this id, or None."""
        if not isinstance(task_id, str) or not task_id:
            return None
        entry = self.store.get(STATE, self._prefix + task_id)
        return None if entry is None else BoardTask.from_dict(entry.value)

    def list(self, status: BoardStatus | None = None) -> list[BoardTask]:
        """Tasks in the order they were added, of one status if given."""
        tasks = [
            BoardTask.from_dict(entry.value)
            for entry in self.store.entries(key_prefix=f"{STATE}:{self._prefix}")
        ]
        tasks.sort(key=lambda task: (task.number, task.id))
        return [t for t in tasks if status is None or t.status == status]

    @property
    def finished(self) -> bool:
        """Whether the board has tasks and every one is completed or failed."""
        tasks = self.list()
        return bool(tasks) and all(t.status in ("completed", "failed") for t in tasks)

    def __len__(self) -> int:
        return len(self.store.entries(key_prefix=f"{STATE}:{self._prefix}"))

    def __repr__(self) -> str:
        return f"<TaskBoard {self.team!r} tasks={len(self)} on {self.store!r}>"

    def add(
        self,
        task_id: str,
        title: str,
        description: str = "",
        *,
        depends_on: Iterable[str] = (),
        agent: str | None = None,
    ) -> BoardTask:
        """Add an open task; its ``depends_on`` must already be on the board."""
        with self._lock:
            if not task_id or not isinstance(task_id, str):
                raise ExecutorError(f"a board task needs a non-empty id, got {task_id!r}")
            if self.get(task_id) is not None:
                raise ExecutorError(f"the board already has a task {task_id!r}; pick another id")
            deps = tuple(depends_on)
            if unknown := [d for d in deps if self.get(d) is None]:
                raise ExecutorError(
                    f"task {task_id!r} depends on {', '.join(unknown)}, which the board does "
                    "not have; add those tasks first"
                )
            task = BoardTask(
                id=task_id,
                title=title,
                description=description,
                depends_on=deps,
                added_by=agent,
                number=len(self) + 1,
            )
            return self._move(task, "task_added", agent)

    def claim(self, task_id: str, agent: str) -> BoardTask:
        """Claim an open task whose dependencies completed."""
        with self._lock:
            task = self._need(task_id)
            if task.status != "open":
                who = f" by {task.assignee}" if task.assignee else ""
                raise ExecutorError(f"task {task_id!r} is {task.status}{who}, not open")
            if waiting := [d for d in task.depends_on if self._need(d).status != "completed"]:
                raise ExecutorError(
                    f"task {task_id!r} waits for {', '.join(waiting)} to complete; claim "
                    "another task meanwhile"
                )
            return self._move(task, "task_claimed", agent, status="claimed", assignee=agent)

    def release(self, task_id: str, agent: str) -> BoardTask:
        """Hand a task ``agent`` claimed back to the board, open."""
        return self._settle(task_id, agent, "task_released", status="open", assignee=None)

    def complete(self, task_id: str, agent: str, result: Any) -> BoardTask:
        """Complete a task ``agent`` claimed, with its result."""
        return self._settle(task_id, agent, "task_completed", status="completed", result=result)

    def fail(self, task_id: str, agent: str, reason: str) -> BoardTask:
        """Give up a task ``agent`` claimed, saying why."""
        return self._settle(task_id, agent, "task_failed", status="failed", error=reason)

    def on_event(self, fn: Callable[[BoardEvent], object]) -> Callable[[], None]:
        """Call ``fn(event)`` after every move on this board (in this store, by any view
        of it); returns a function that unsubscribes. A subscriber that raises is logged
        by the store and never breaks the move."""
        prefix = self._prefix

        def forward(event: Event) -> None:
            if event.op != "write" or event.kind != STATE or not event.path.startswith(prefix):
                return
            meta = event.meta or {}
            move = meta.get("move")
            if move in MOVES:
                task_id = event.path[len(prefix) :]
                fn(BoardEvent(type=move, task_id=task_id, agent=meta.get("agent"), seq=event.seq))

        forward.__qualname__ = f"TaskBoard.on_event({getattr(fn, '__qualname__', repr(fn))})"
        return self.store.subscribe(forward)

    def _need(self, task_id: str) -> BoardTask:
        task = self.get(task_id)
        if task is None:
            known = ", ".join(t.id for t in self.list()) or "none"
            raise ExecutorError(f"the board has no task {task_id!r}; its tasks: {known}")
        return task

    def _settle(self, task_id: str, agent: str, move: EventType, **changes: Any) -> BoardTask:
        """A move only the agent that claimed the task may make."""
        with self._lock:
            task = self._need(task_id)
            if task.status != "claimed" or task.assignee != agent:
                state = f"claimed by {task.assignee}" if task.status == "claimed" else task.status
                raise ExecutorError(
                    f"task {task_id!r} is {state}; only the agent that claimed it can finish it "
                    "(claim it first with board_claim)"
                )
            return self._move(task, move, agent, **changes)

    def _move(
        self, task: BoardTask, move: EventType, agent: str | None, **changes: Any
    ) -> BoardTask:
        moved = replace(task, **changes)
        meta = {"move": move, "agent": agent}
        self.store.write(
            STATE, self._prefix + task.id, moved.to_dict(), source=agent, meta=meta, replace=True
        )
        return moved


@dataclass(frozen=True, slots=True, kw_only=True)
class TeamMessage:
    """One message on the bus; ``to`` is a member's name or ``"*"`` (everyone else)."""

    sender: str
    to: str
    content: str
    seq: int


class MessageBus:
    """Messages between agents, kept in ``store`` (a new one if omitted) under
    ``state:<team>/``.

    >>> bus = MessageBus()
    >>> bus.register("ann"); bus.register("bob")
    >>> bus.send("ann", "bob", "draft is ready").seq
    1
    >>> [m.content for m in bus.receive("bob")], bus.receive("bob")
    (['draft is ready'], [])
    """

    def __init__(self, store: Store | None = None, *, team: str = "team") -> None:
        self.store = _checked(store, team, "MessageBus")
        self.team = team
        self._bus = f"{team}/bus"
        self._members = f"{team}/members"
        self._read = f"{team}/read/"
        self._lock = _lock_of(self.store)
        self.store.declare(STATE, self._bus, reducers.append)
        self.store.declare(STATE, self._members, reducers.union)

    def register(self, agent: str) -> None:
        """Make ``agent`` a member (again: nothing changes)."""
        if not isinstance(agent, str) or not agent:
            raise ExecutorError(f"a teammate needs a non-empty name, got {agent!r}")
        with self._lock:
            if agent not in self.members:
                self.store.write(STATE, self._members, [agent], source=agent)

    @property
    def members(self) -> tuple[str, ...]:
        """The registered members, in the order they joined."""
        return tuple(self.store.value(STATE, self._members, ()))

    def send(self, sender: str, to: str, content: str) -> TeamMessage:
        """Send ``content`` to one member or to ``"*"``."""
        with self._lock:
            members = self.members
            if to != "*" and to not in members:
                raise ExecutorError(
                    f"no teammate is named {to!r}; the team: {', '.join(members)} "
                    "(or '*' for everyone)"
                )
            message = TeamMessage(sender=sender, to=to, content=content, seq=self._count() + 1)
            self.store.write(STATE, self._bus, asdict(message), source=sender)
            return message

    def receive(self, agent: str) -> list[TeamMessage]:
        """The messages to ``agent`` it has not received yet, oldest first."""
        with self._lock:
            log = self.history
            start = self.store.value(STATE, self._read + agent, 0)
            if len(log) > start:
                self.store.write(STATE, self._read + agent, len(log), source=agent)
            return [m for m in log[start:] if m.sender != agent and m.to in (agent, "*")]

    @property
    def history(self) -> tuple[TeamMessage, ...]:
        """Every message sent, oldest first."""
        return tuple(TeamMessage(**m) for m in self.store.value(STATE, self._bus, ()))

    def _count(self) -> int:
        entry = self.store.get(STATE, self._bus)
        return 0 if entry is None else entry.weight

    def __repr__(self) -> str:
        return f"<MessageBus {self.team!r} messages={self._count()} on {self.store!r}>"
