"""``TeamExecutor``: several agents on a shared task board and message bus, one memory.

It plays rounds: every member takes a turn at once, a tool-calling conversation kept
from round to round that ends at a plain-text answer or ``max_turn_iterations`` calls.
Completed board tasks are mirrored into memory as ``task:<id>``. The run ends when the
board is finished, after ``max_rounds``, or after a round in which no member called a
tool (nothing can change any more). An empty board starts with the objective as its task.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Literal

from weft._sync import run_sync
from weft.agent.toolbox import AgentTools, Handler, LoopTool
from weft.calls import Tool
from weft.errors import ExecutorError, ModelError
from weft.llm import ChatMessage, ChatModel
from weft.llm.watch import achat
from weft.memory import AgentMemory, memory_keys
from weft.plan.board import BoardEvent, BoardTask, MessageBus, TaskBoard, TeamMessage
from weft.plan.prompts import team_system_prompt
from weft.plan.step import write_task_result
from weft.plan.types import Task

_STRING: Final = {"type": "string", "minLength": 1}
StopReason = Literal["finished", "idle", "max_rounds"]


@dataclass(frozen=True, slots=True, kw_only=True)
class TeamMember:
    """One agent of a team: its name, its model, its role, and the caller tools it may
    use (``None``: all of them)."""

    name: str
    model: ChatModel
    role: str = ""
    tools: tuple[str, ...] | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class TeamReport:
    """How the team's run ended: the board's tasks by status, the rounds played, why it
    stopped, and every message sent."""

    completed: tuple[str, ...]
    failed: Mapping[str, str]
    unfinished: tuple[str, ...]
    rounds: int
    stop_reason: StopReason
    messages: tuple[TeamMessage, ...] = ()
    errors: Mapping[str, str] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        """Whether every board task completed and no member's model failed."""
        return not self.failed and not self.unfinished and not self.errors


class TeamExecutor:
    """Run ``members`` on ``objective`` (see the module docstring)."""

    def __init__(
        self,
        objective: str,
        *,
        members: Sequence[TeamMember],
        memory: AgentMemory | None = None,
        board: TaskBoard | None = None,
        tasks: Iterable[Task | BoardTask] = (),
        tools: Iterable[Tool] = (),
        inputs: Mapping[str, Any] | None = None,
        system_prompt: str | None = None,
        max_rounds: int = 10,
        max_turn_iterations: int = 8,
    ) -> None:
        names = [m.name for m in members]
        if not members or len(set(names)) != len(names):
            raise ExecutorError(
                f"a team needs at least one member and distinct names, got {names!r}"
            )
        self.objective = objective
        self.members = tuple(members)
        if memory is None:
            memory = AgentMemory(board.store) if board is not None else AgentMemory()
        self.memory = memory
        if board is not None and board.store is not memory.store:
            raise ExecutorError(
                f"the board {board!r} is not on the memory's store {memory.store!r}; a team's "
                "board lives on its memory's store: make it with TaskBoard(memory.store)"
            )
        self.board = board if board is not None else TaskBoard(memory.store)
        self.tools = tuple(tools)
        # a member allowed a tool it was not given is refused before anything is written
        self._toolboxes = {
            member.name: AgentTools(
                self.tools,
                memory=memory,
                source=member.name,
                allowed=member.tools,
                builtins=self._team_tools(member.name),
                error=ExecutorError,
            )
            for member in self.members
        }
        for task in tasks:
            if self.board.get(task.id) is not None:
                continue  # a board continued from an earlier run holds it already
            title = task.label if isinstance(task, Task) else task.title
            self.board.add(task.id, title, task.description, depends_on=task.depends_on)
        self.bus = MessageBus(memory.store, team=self.board.team)
        for member in self.members:
            self.bus.register(member.name)
        self.inputs = dict(inputs or {})
        self.system_prompt = system_prompt
        self.max_rounds = max_rounds
        self.max_turn_iterations = max_turn_iterations
        self._conversations: dict[str, list[ChatMessage]] = {}
        self._errors: dict[str, str] = {}

    def execute(self) -> TeamReport:
        """The blocking form of ``aexecute``."""
        return run_sync(self.aexecute())

    async def aexecute(self) -> TeamReport:
        """Seed the inputs, play the rounds, and report."""
        for name, value in self.inputs.items():
            self.memory.set(memory_keys.input(name), value, source="caller", title=name)
        if not len(self.board):
            self.board.add("objective", self.objective)
        for task in self.board.list("completed"):  # stopped between a move and its mirror
            if not self.memory.has(memory_keys.task(task.id)):
                write_task_result(self.memory, task.id, task.result, task.title, task.description)
        unsubscribe = self.board.on_event(self._mirror)
        rounds = 0
        stop: StopReason = "max_rounds"
        try:
            while rounds < self.max_rounds and not self.board.finished:
                rounds += 1
                if not any(await asyncio.gather(*(self._turn(m, rounds) for m in self.members))):
                    stop = "idle"
                    break
        finally:
            unsubscribe()
        if self.board.finished:
            stop = "finished"
        return TeamReport(
            completed=tuple(t.id for t in self.board.list("completed")),
            failed={t.id: t.error or "" for t in self.board.list("failed")},
            unfinished=tuple(t.id for t in self.board.list() if t.status in ("open", "claimed")),
            rounds=rounds,
            stop_reason=stop,
            messages=self.bus.history,
            errors=dict(self._errors),
        )

    def _mirror(self, event: BoardEvent) -> None:
        """A completed board task becomes ``task:<id>`` in memory."""
        if event.type == "task_completed" and (task := self.board.get(event.task_id)):
            write_task_result(self.memory, task.id, task.result, task.title, task.description)

    async def _turn(self, member: TeamMember, round_number: int) -> bool:
        """One turn of ``member``; whether it called any tool."""
        if member.name in self._errors:
            return False
        toolbox = self._toolboxes[member.name]
        prompt = team_system_prompt(member.name, role=member.role, preamble=self.system_prompt)
        conversation = self._conversations.setdefault(member.name, [ChatMessage.system(prompt)])
        conversation.append(ChatMessage.user(self._briefing(member.name, round_number)))
        acted = False
        for _ in range(self.max_turn_iterations):
            try:
                reply = await achat(member.model, conversation, tools=toolbox.specs)
            except ModelError as exc:
                self._errors[member.name] = f"{type(exc).__name__}: {exc}"
                return acted
            conversation.append(reply.to_message())
            if not reply.tool_calls:
                break
            acted = True
            for call in reply.tool_calls:
                outcome = await toolbox.answer(call)
                conversation.append(outcome.to_message(call))
        return acted

    def _briefing(self, name: str, round_number: int) -> str:
        board = [task.summary() for task in self.board.list()]
        parts = [
            f"# Objective\n{self.objective}",
            f"# Round {round_number}: the task board\n{json.dumps(board, ensure_ascii=False)}",
        ]
        if inbox := self._inbox(name):
            parts.append(f"# New messages\n{json.dumps(inbox, ensure_ascii=False)}")
        return "\n\n".join(parts)

    def _inbox(self, name: str) -> list[dict[str, str]]:
        return [{"from": m.sender, "content": m.content} for m in self.bus.receive(name)]

    def _team_tools(self, agent: str) -> list[LoopTool]:
        board = self.board

        def moved(move: Callable[[dict[str, Any]], BoardTask]) -> Handler:
            return refusing(lambda args: {"ok": True, "task": move(args).summary()})

        def add(args: dict[str, Any]) -> BoardTask:
            return board.add(
                args["id"],
                args["title"],
                args.get("description", ""),
                depends_on=args.get("depends_on", ()),
                agent=agent,
            )

        def send(args: dict[str, Any]) -> dict[str, Any]:
            return {"ok": True, "seq": self.bus.send(agent, args["to"], args["content"]).seq}

        task_id = {"task_id": _STRING}
        return [
            LoopTool(
                name="board_list",
                description="List the board's tasks.",
                handler=lambda _: {"ok": True, "tasks": [t.summary() for t in board.list()]},
            ),
            LoopTool(
                name="board_add_task",
                description="Add a task to the board for anyone to claim.",
                parameters=_object(
                    {
                        "id": _STRING,
                        "title": _STRING,
                        "description": {"type": "string"},
                        "depends_on": {"type": "array", "items": _STRING},
                    },
                    ["id", "title"],
                ),
                handler=moved(add),
            ),
            LoopTool(
                name="board_claim",
                description="Claim an open task before working on it.",
                parameters=_object(task_id, ["task_id"]),
                handler=moved(lambda args: board.claim(args["task_id"], agent)),
            ),
            LoopTool(
                name="board_complete",
                description="Complete a task you claimed, with its result (any JSON).",
                parameters=_object({**task_id, "result": {}}, ["task_id", "result"]),
                handler=moved(lambda args: board.complete(args["task_id"], agent, args["result"])),
            ),
            LoopTool(
                name="board_fail",
                description="Give up a task you claimed, saying why.",
                parameters=_object({**task_id, "reason": _STRING}, ["task_id", "reason"]),
                handler=moved(lambda args: board.fail(args["task_id"], agent, args["reason"])),
            ),
            LoopTool(
                name="send_message",
                description="Send a message to a teammate by name, or to '*' for everyone.",
                parameters=_object({"to": _STRING, "content": _STRING}, ["to", "content"]),
                handler=refusing(send),
            ),
            LoopTool(
                name="read_messages",
                description="Fetch your unread messages.",
                handler=lambda _: {"ok": True, "messages": self._inbox(agent)},
            ),
        ]


def refusing(handler: Handler) -> Handler:
    """``handler`` with a refused move (``ExecutorError``) sent to the model as an error
    result: what was wrong and what to do instead."""

    def answer(args: dict[str, Any]) -> Any:
        try:
            return handler(args)
        except ExecutorError as exc:
            return {"ok": False, "error": str(exc)}

    return answer


def _object(properties: Mapping[str, Any], required: list[str]) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": dict(properties),
        "required": required,
        "additionalProperties": False,
    }
