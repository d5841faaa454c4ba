"""A ``ToolAgent`` run in the one run model (``weft.store.RunLog``, kind ``step``)::

    <run id>                    RunRecord(kind="tool_agent", units=(<agent name>,)),
                                completed with {"answer", "stop_reason", "iterations"}
    <run id>/start              "input": the conversation the run began with
    <run id>/iter/<n>/reply     "reply": model call n's AssistantMessage, whether it was
                                made in the conclusion stage, the run's seconds so far
    <run id>/iter/<n>/tool/<k>  "action": the result the model read for call k of reply n
    <run id>/iter/<n>/tool/<k>/pauses/<i>   a question the tool asked a person

Each record is one commit, made as the call finishes: after a crash, a run started again
with its id replays every recorded reply and result (no model call and no tool call that
finished is made again) and goes on from the first call without a record.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any, Final

from weft.agent.toolbox import Outcome
from weft.errors import AgentError
from weft.llm import AssistantMessage, ChatMessage, ToolCall
from weft.store import RunLog, StepRecord

KIND: Final = "tool_agent"
"""The kind of a ToolAgent's RunRecord."""


def reply_unit(n: int) -> str:
    return f"iter/{n}/reply"


def tool_unit(n: int, k: int) -> str:
    return f"iter/{n}/tool/{k}"


def message_dict(message: ChatMessage) -> dict[str, Any]:
    """A message as a record holds it (only the fields it uses)."""
    out: dict[str, Any] = {"role": message.role, "content": message.content}
    if message.tool_calls:
        out["tool_calls"] = list(message.tool_calls)
    if message.tool_call_id is not None:
        out["tool_call_id"] = message.tool_call_id
    if message.name is not None:
        out["name"] = message.name
    if message.is_error:
        out["is_error"] = True
    return out


def message_from(data: Mapping[str, Any]) -> ChatMessage:
    """A message back from its record."""
    return ChatMessage(
        role=data["role"],
        content=data.get("content"),
        tool_calls=tuple(data.get("tool_calls", ())),
        tool_call_id=data.get("tool_call_id"),
        name=data.get("name"),
        is_error=bool(data.get("is_error", False)),
    )


def record_start(
    log: RunLog, agent: str, task: Sequence[ChatMessage], messages: Sequence[ChatMessage]
) -> None:
    """Begin the run: its record and the conversation it starts with, one commit."""
    with log.store.transaction() as tx:
        inner = RunLog(tx, log.run_id)
        inner.begin(KIND, (agent,), error=AgentError)
        start = {
            "task": [message_dict(m) for m in task],
            "messages": [message_dict(m) for m in messages],
        }
        inner.record("start", StepRecord(kind="input", label=agent, result=start))


def recorded_start(log: RunLog, task: Sequence[ChatMessage] | None) -> list[ChatMessage]:
    """The conversation a recorded run began with; a different ``task`` is refused."""
    found = log.get("start")
    if found is None or not isinstance(found.result, Mapping):
        raise AgentError(
            f"run {log.run_id!r} has a record but no start: it was not begun by a ToolAgent "
            "(or its records were deleted); use a new run_id"
        )
    if task is not None:
        given = [message_dict(m) for m in task]
        if given != found.result["task"]:
            raise AgentError(
                f"run {log.run_id!r} began with another task; to resume it, pass the same "
                "task or none (the recorded one is used), or start over with a new run_id"
            )
    return [message_from(m) for m in found.result["messages"]]


def record_reply(
    log: RunLog,
    n: int,
    agent: str,
    reply: AssistantMessage,
    concluding: bool,
    elapsed: float,
    *,
    started_at: float,
) -> None:
    if reply.raw is not None:  # the provider's whole body: not needed to resume, often large
        reply = replace(reply, raw=None)
    result = {"message": reply, "concluding": concluding, "elapsed": elapsed}
    record = StepRecord(kind="reply", label=agent, result=result, started_at=started_at)
    log.record(reply_unit(n), record)


def recorded_reply(log: RunLog, n: int) -> tuple[AssistantMessage, bool, float] | None:
    """Reply ``n``, whether it was made in the conclusion stage, and the run's seconds."""
    found = log.get(reply_unit(n))
    if found is None:
        return None
    result = found.result
    return result["message"], bool(result["concluding"]), float(result["elapsed"])


def record_outcome(
    log: RunLog, n: int, k: int, call: ToolCall, outcome: Outcome, started_at: float
) -> None:
    result = {"id": call.id, **outcome.to_record()}
    record = StepRecord(kind="action", label=call.name, result=result, started_at=started_at)
    log.record(tool_unit(n, k), record)


def recorded_outcome(log: RunLog, n: int, k: int) -> Outcome | None:
    found = log.get(tool_unit(n, k))
    if found is None:
        return None
    return Outcome.from_record(found.result)
