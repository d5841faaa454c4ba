"""Model calls told as ``CallNote`` s (``weft.store.notes``) while someone watches: the
unit the call is made in (``UNIT``) gets the note in its run's store, and the process's
taps hear it. ``areason`` and ``achat`` are the two ways weft calls a model, so every
model call of the agent loop and the executors passes here; with nobody watching this is
one context-variable read per call."""

from __future__ import annotations

import time
from collections.abc import Awaitable, Sequence
from time import perf_counter
from typing import Any, Literal, TypeVar

from weft.llm.messages import AssistantMessage, Completion, MessageLike
from weft.llm.tools import ToolLike
from weft.store.notes import UNIT, CallNote, emit, watching

T = TypeVar("T", Completion, AssistantMessage)


async def achat(
    model: Any,
    messages: Sequence[MessageLike],
    *,
    tools: Sequence[ToolLike] | None = None,
    **options: Any,
) -> AssistantMessage:
    """Ask a chat model (``model.achat``), told to watchers as a model call."""
    call = model.achat(messages, tools=tools, **options)
    if not watching():
        return await call  # type: ignore[no-any-return]
    return await watched(model, "chat", call)


async def watched(
    model: Any, operation: Literal["chat", "text_completion"], call: Awaitable[T]
) -> T:
    """Await ``call`` to ``model`` and tell how it went (it raises as it did)."""
    started_at, began = time.time(), perf_counter()
    try:
        reply = await call
    except BaseException as exc:
        tell(model, operation, started_at, began, None, f"{type(exc).__name__}: {exc}")
        raise
    tell(model, operation, started_at, began, reply, None)
    return reply


def tell(
    model: Any,
    operation: str,
    started_at: float,
    began: float,
    reply: Completion | AssistantMessage | None,
    error: str | None,
) -> None:
    """Send the note of one model call that ended with ``reply`` or ``error``."""
    requested = getattr(model, "model", None)
    requested = requested if isinstance(requested, str) else None
    provider = getattr(model, "provider", None)
    usage = None if reply is None else reply.usage
    answered = reply.model if isinstance(reply, AssistantMessage) else None
    stop = reply.stop_reason if isinstance(reply, AssistantMessage) else None
    unit = UNIT.get()
    note = CallNote(
        event="failed" if error is not None else "finished",
        call="model",
        name=requested or answered or type(model).__name__,
        parent=None if unit is None else unit[1],
        started_at=started_at,
        duration_ms=int((perf_counter() - began) * 1e6) / 1000,
        error=error,
        provider=provider if isinstance(provider, str) else None,
        operation=operation,
        request_model=requested,
        response_model=answered,
        input_tokens=None if usage is None else usage.input_tokens,
        output_tokens=None if usage is None else usage.output_tokens,
        finish_reasons=() if stop is None else (stop,),
    )
    store = None if unit is None else unit[0]
    emit(store, f"{note.parent or ''}/calls/model", note, "weft.llm")
