"""Tool calls told as ``CallNote`` s (``weft.store.notes``) while someone watches: a call
of a plan and a tool a model called both pass here. With nobody watching, a call is one
context-variable read more than calling the function."""

from __future__ import annotations

import inspect
import time
from collections.abc import Callable
from time import perf_counter
from typing import Any

from weft.store.notes import UNIT, CallNote, emit, watching


def call_tool(name: str, call_id: str | None, fn: Callable[..., Any], *args: Any) -> Any:
    """``fn(*args)``: the call of tool ``name`` (``call_id``: the model's id for it)."""
    if not watching():
        return fn(*args)
    started_at, began = time.time(), perf_counter()
    try:
        result = fn(*args)
    except Exception as exc:
        tell(name, call_id, started_at, began, exc)
        raise
    tell(name, call_id, started_at, began, None)
    return result


async def acall_tool(name: str, call_id: str | None, fn: Callable[..., Any], *args: Any) -> Any:
    """``call_tool`` for a function that may be async (its result is awaited)."""
    if not watching():
        result = fn(*args)
        return (await result) if inspect.isawaitable(result) else result
    started_at, began = time.time(), perf_counter()
    try:
        result = fn(*args)
        if inspect.isawaitable(result):
            result = await result
    except Exception as exc:
        tell(name, call_id, started_at, began, exc)
        raise
    tell(name, call_id, started_at, began, None)
    return result


def tell(
    name: str, call_id: str | None, started_at: float, began: float, error: Exception | None
) -> None:
    """Send the note of one tool call that ended (with ``error`` if it raised)."""
    unit = UNIT.get()
    note = CallNote(
        event="finished" if error is None else "failed",
        call="tool",
        name=name,
        call_id=call_id,
        parent=None if unit is None else unit[1],
        started_at=started_at,
        duration_ms=int((perf_counter() - began) * 1e6) / 1000,
        error=None if error is None else f"{type(error).__name__}: {error}",
    )
    store = None if unit is None else unit[0]
    emit(store, f"{note.parent or ''}/calls/tool", note, f"tool:{name}")
