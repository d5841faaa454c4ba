"""Scripted replies for the executor tests."""

from __future__ import annotations

from typing import Any

from weft.llm import AssistantMessage, ScriptedCall, ScriptedChatModel, Usage


def call(name: str, arguments: dict[str, Any] | None = None, **usage: int) -> AssistantMessage:
    """A reply that calls one tool (optionally reporting token usage)."""
    return ScriptedChatModel.tool_call(
        name, arguments or {}, usage=Usage(**usage) if usage else None
    )


def finish(result: Any) -> AssistantMessage:
    return call("finish_step", {"result": result})


def text_of(scripted: ScriptedCall) -> str:
    """Every message of one model call, as one text."""
    return "\n".join(m.content or "" for m in scripted.messages)


def tool_results(scripted: ScriptedCall) -> list[str]:
    return [m.content or "" for m in scripted.messages if m.role == "tool"]
