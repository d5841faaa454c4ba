"""A team of three on a board of nine tasks, on a DurableRun, for the crash test (``main``
or a script).

    python team_crash_worker.py BACKEND THREAD COUNTER

BACKEND is ``sqlite:<path>`` or ``postgres:<schema>`` (see ``crash_helpers``). The board:
six research tasks ``r1`` .. ``r6``; ``s1`` after ``r1`` .. ``r3`` and ``s2`` after ``r4`` ..
``r6``; ``final`` after ``s1`` and ``s2``. Each member is a scripted chat model that
decides from what it sees, as a model would: in a turn it takes the task it holds on the
board (claimed by it), or else claims the first open task it may claim; it reads the
results of the task's dependencies from memory (``memory_read``), calls the caller tool
``work`` with them, completes the task with what ``work`` returned, and ends its turn.

Effects (each a line ``<pid> <what>`` of COUNTER): ``ask <member> <decision>`` for every
model call (``claim r1``, ``read s1``, ``work r1``, ``complete r1``, ``idle``), ``work
<task>`` when the tool runs (it then sleeps a few milliseconds), and ``moved <task>
<move>`` from an observer of the board that hears each move before the executor does and
takes a few milliseconds (so that kills land between a move and its mirror into memory
too). The worker prints ``ready`` once the thread is loaded and, when the team is done,
``done`` and what must match an uninterrupted run (``outcome``) as JSON.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time
from typing import Any

from crash_helpers import append_line, dump, open_backend
from weft.calls import Tool
from weft.llm import AssistantMessage, ChatMessage, ScriptedChatModel, ToolSpec
from weft.memory import AgentMemory
from weft.persist import DurableRun
from weft.plan import BoardTask, TaskBoard, TeamExecutor, TeamMember
from weft.store import to_jsonable

PRELOAD = ("jsonschema",)  # what the fork server imports (see crash_helpers)
MEMBERS = ("ann", "bob", "cy")
TASKS = (
    *(BoardTask(id=f"r{i}", title=f"Research {i}") for i in range(1, 7)),
    BoardTask(id="s1", title="Sum up 1-3", depends_on=("r1", "r2", "r3")),
    BoardTask(id="s2", title="Sum up 4-6", depends_on=("r4", "r5", "r6")),
    BoardTask(id="final", title="Report", depends_on=("s1", "s2")),
)
DEPENDS = {task.id: task.depends_on for task in TASKS}
NEEDED_BY = {task.depends_on: task.id for task in TASKS if task.depends_on}


def member_model(name: str, counter: str) -> ScriptedChatModel:
    """A member that works through the board one task per turn (see the module doc)."""

    def decide(messages: list[ChatMessage], _tools: list[ToolSpec]) -> AssistantMessage | str:
        reply, decision = next_step(name, messages)
        append_line(counter, f"{os.getpid()} ask {name} {decision}")
        return reply

    return ScriptedChatModel(decide)


def next_step(name: str, messages: list[ChatMessage]) -> tuple[AssistantMessage | str, str]:
    """The member's next reply in the turn that ``messages`` ends with, and its summary."""
    start = max(i for i, m in enumerate(messages) if m.role == "user")
    board = board_of(messages[start].content or "")
    turn = messages[start + 1 :]
    if not turn:  # the turn begins: go on with my task, or claim one
        mine = [t for t in board if t["status"] == "claimed" and t.get("assignee") == name]
        if mine:
            return begin(mine[0]["id"])
        done = {t["id"] for t in board if t["status"] == "completed"}
        for task in board:
            if task["status"] == "open" and set(task.get("depends_on", ())) <= done:
                claim = ScriptedChatModel.tool_call("board_claim", {"task_id": task["id"]})
                return claim, f"claim {task['id']}"
        return "Nothing I can take now.", "idle"
    call = next(m for m in reversed(turn) if m.role == "assistant").tool_calls[0]
    content = turn[-1].content or ""
    if call.name == "work":  # its text, as the tool returned it
        complete = ScriptedChatModel.tool_call(
            "board_complete", {"task_id": call.arguments["task_id"], "result": content}
        )
        return complete, f"complete {call.arguments['task_id']}"
    result = json.loads(content)
    if call.name == "memory_read":
        task_id = NEEDED_BY[tuple(key.split(":", 1)[1] for key in call.arguments["keys"])]
    else:
        task_id = call.arguments["task_id"]
    if call.name == "board_claim":
        return begin(task_id) if result["ok"] else ("Someone else took it.", "idle")
    if call.name == "memory_read":
        entries = result["entries"]
        inputs = [entries[f"task:{dep}"]["value"] for dep in DEPENDS[task_id]]
        return work(task_id, inputs)
    return f"Finished {task_id}.", "idle"


def begin(task_id: str) -> tuple[AssistantMessage, str]:
    deps = DEPENDS[task_id]
    if not deps:
        return work(task_id, [])
    keys = [f"task:{dep}" for dep in deps]
    read = ScriptedChatModel.tool_call("memory_read", {"keys": keys})
    return read, f"read {task_id}"


def work(task_id: str, inputs: list[Any]) -> tuple[AssistantMessage, str]:
    call = ScriptedChatModel.tool_call("work", {"task_id": task_id, "inputs": inputs})
    return call, f"work {task_id}"


def board_of(briefing: str) -> list[dict[str, Any]]:
    """The board a turn's briefing shows (``# Round N: the task board`` then its JSON)."""
    lines = briefing.splitlines()
    at = next(i for i, line in enumerate(lines) if line.endswith(": the task board"))
    board: list[dict[str, Any]] = json.loads(lines[at + 1])
    return board


def tools(counter: str) -> list[Tool]:
    async def work(task_id: str, inputs: list[Any]) -> str:
        append_line(counter, f"{os.getpid()} work {task_id}")
        await asyncio.sleep(0.003)
        return f"{task_id}<{'+'.join(map(str, inputs))}>" if inputs else f"{task_id}: found"

    return [Tool(name="work", fn=work)]


def observe(board: TaskBoard, counter: str) -> None:
    """Hear every move before the executor does, and take a few milliseconds."""

    def heard(event: Any) -> None:
        append_line(counter, f"{os.getpid()} moved {event.task_id} {event.type}")
        time.sleep(0.002)

    board.on_event(heard)


def outcome(memory: AgentMemory, board: TaskBoard, report: Any) -> dict[str, Any]:
    """What must match an uninterrupted run: every task of the board (who took it aside),
    each task's result in memory, and how the run ended."""
    return {
        "board": [
            {k: v for k, v in task.to_dict().items() if k != "assignee"} for task in board.list()
        ],
        "memory": {f"task:{t.id}": to_jsonable(memory.get_value(f"task:{t.id}")) for t in TASKS},
        "report": [
            list(report.completed),
            dict(report.failed),
            list(report.unfinished),
            report.stop_reason,
            dict(report.errors),
        ],
    }


def main(argv: list[str]) -> None:
    spec, thread, counter = argv
    backend = open_backend(spec)
    try:
        with DurableRun.open(backend, thread, run_id="team", snapshot_every=30) as run:
            print("ready", flush=True)
            memory = AgentMemory(run.store)
            board = TaskBoard(run.store)
            observe(board, counter)
            team = TeamExecutor(
                "Research six things, sum them up in two, and write the report.",
                members=[TeamMember(name=n, model=member_model(n, counter)) for n in MEMBERS],
                memory=memory,
                board=board,
                tasks=TASKS,
                tools=tools(counter),
                max_rounds=30,
            )
            state = outcome(memory, board, team.execute())
        print("done", dump(state), flush=True)
    finally:
        backend.close()


if __name__ == "__main__":
    main(sys.argv[1:])
