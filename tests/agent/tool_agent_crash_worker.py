"""A ToolAgent run on a durable SQLite store, for the crash test (a script).

    python tool_agent_crash_worker.py DATABASE COUNTER CRASH_AT

The model (a scripted function of the conversation) asks, in reply k (0 to 4), for two
calls side by side: ``step(k)`` (a blocking function, on a worker thread) and ``note(k)``
(an async one), then answers ``done after 5``. Each model call appends ``<pid> model
<n>`` to COUNTER, each tool ``<pid> step <k>`` or ``<pid> note <k>``. ``step(CRASH_AT)``
ends the process with ``os._exit`` right after its line, the first time only (a marker
file beside COUNTER says it crashed). The worker prints ``done`` and the result as JSON.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

from weft.agent import ToolAgent, ToolAgentResult
from weft.llm import AssistantMessage, ChatMessage, ScriptedChatModel, ToolCall
from weft.persist import DurableRun, SQLiteBackend

REPLIES = 5


def append(path: str, line: str) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, f"{line}\n".encode())
    finally:
        os.close(fd)


def build(store: Any, counter: str, crash_at: int) -> ToolAgent:
    marker = Path(f"{counter}.crashed")

    def script(messages: list[ChatMessage], tools: Any) -> AssistantMessage:
        k = sum(1 for m in messages if m.role == "assistant")
        append(counter, f"{os.getpid()} model {k + 1}")
        if k >= REPLIES:
            return AssistantMessage(content=f"done after {k}")
        calls = (
            ToolCall.create("step", {"k": k}, id=f"s{k}"),
            ToolCall.create("note", {"k": k}, id=f"n{k}"),
        )
        return AssistantMessage(tool_calls=calls)

    def step(k: int) -> dict[str, int]:
        append(counter, f"{os.getpid()} step {k}")
        time.sleep(0.01)
        if k == crash_at and not marker.exists():
            marker.write_text("crashed")
            os._exit(3)  # the process dies inside the tool: no cleanup, no commit
        return {"step": k}

    async def note(k: int) -> str:
        append(counter, f"{os.getpid()} note {k}")
        await asyncio.sleep(0)
        return f"noted {k}"

    return ToolAgent(ScriptedChatModel(script), tools=[step, note], store=store, name="worker")


def main() -> None:
    database, counter, crash_at = sys.argv[1], sys.argv[2], int(sys.argv[3])
    backend = SQLiteBackend(database)
    try:
        with DurableRun.open(backend, "thread-1", run_id="job") as run:
            result = build(run.store, counter, crash_at).run("count to five", run_id="job")
            assert isinstance(result, ToolAgentResult), result
            summary = {
                "answer": result.answer,
                "stop_reason": result.stop_reason,
                "iterations": result.iterations,
                "tool_calls": result.tool_calls,
                "results": [m.content for m in result.messages if m.role == "tool"],
            }
        print("done", json.dumps(summary, sort_keys=True), flush=True)
    finally:
        backend.close()


if __name__ == "__main__":
    main()
