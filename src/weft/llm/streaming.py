"""A chat model's reply as it is made: text deltas, thinking deltas, tool calls as they
start and grow, and the whole :class:`AssistantMessage` last.

Every chat model streams: one with its own ``astream`` (the provider adapters, over
server-sent events) yields events as the bytes arrive; any other gives its whole reply as
a few events once it has it (:func:`astream`). The last event is always ``MessageDone``,
whose message is exactly what ``achat`` would have returned.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from typing import Any, TypeAlias

from weft.llm.messages import AssistantMessage, MessageLike
from weft.llm.tools import ToolLike
from weft.llm.watch import achat


@dataclass(frozen=True, slots=True)
class TextDelta:
    """More of the answer's text."""

    text: str


@dataclass(frozen=True, slots=True)
class ThinkingDelta:
    """More of the model's visible reasoning (Anthropic's extended thinking)."""

    text: str


@dataclass(frozen=True, slots=True)
class ToolCallStarted:
    """The model began the call number ``index`` of this reply (0-based, in reply order)."""

    index: int
    id: str
    name: str


@dataclass(frozen=True, slots=True)
class ToolCallDelta:
    """More of the JSON text of the arguments of the call number ``index``."""

    index: int
    text: str


@dataclass(frozen=True, slots=True)
class MessageDone:
    """The reply is complete: the same message ``achat`` returns (tool calls parsed)."""

    message: AssistantMessage


StreamEvent: TypeAlias = TextDelta | ThinkingDelta | ToolCallStarted | ToolCallDelta | MessageDone


async def replay(message: AssistantMessage) -> AsyncIterator[StreamEvent]:
    """A whole reply as the events a streaming model would have sent for it."""
    for block in message.thinking:
        if block.text:
            yield ThinkingDelta(block.text)
    if message.content:
        yield TextDelta(message.content)
    for index, call in enumerate(message.tool_calls):
        yield ToolCallStarted(index, call.id, call.name)
        yield ToolCallDelta(index, call.raw_or_json())
    yield MessageDone(message)


async def astream(
    model: Any,
    messages: Sequence[MessageLike],
    *,
    tools: Sequence[ToolLike] | None = None,
    **options: Any,
) -> AsyncIterator[StreamEvent]:
    """Stream ``model``'s reply: its own ``astream`` when it has one, else its ``achat``
    reply as events (:func:`replay`). Ends with ``MessageDone``."""
    own = getattr(model, "astream", None)
    if callable(own):
        async for event in own(messages, tools=tools, **options):
            yield event
        return
    reply = await achat(model, messages, tools=tools, **options)
    async for event in replay(reply):
        yield event
