"""Tool calls told as ``CallNote`` s (``weft.store.notes``) while someone watches: a call
of a plan, an agent's action and a tool a model called all pass here. A watched call is
told as it starts and as it ends, and is the ``UNIT`` of what runs inside it. With nobody
watching, a call is one context-variable read more than calling the function."""

from __future__ import annotations

import inspect
import secrets
import time
from collections.abc import Callable
from contextvars import Token
from dataclasses import replace
from time import perf_counter
from typing import Any

from weft.store import Store
from weft.store.notes import UNIT, CallNote, emit, watching


def call_tool(name: str, call_id: str | None, fn: Callable[..., Any], *args: Any) -> Any:
    """``fn(*args)``: the call of tool ``name`` (``call_id``: the model's id for it)."""
    if not watching():
        return fn(*args)
    with _Call(name, call_id):  # a pause or a cancellation ends the call too
        return fn(*args)


async def acall_tool(name: str, call_id: str | None, fn: Callable[..., Any], *args: Any) -> Any:
    """``call_tool`` for a function that may be async (its result is awaited)."""
    if not watching():
        result = fn(*args)
        return (await result) if inspect.isawaitable(result) else result
    with _Call(name, call_id):
        result = fn(*args)
        return (await result) if inspect.isawaitable(result) else result


class _Call:
    """One watched tool call, between its two notes (a context manager)."""

    __slots__ = ("began", "note", "store", "token")

    def __init__(self, name: str, call_id: str | None) -> None:
        unit = UNIT.get()
        self.store: Store | None = None if unit is None else unit[0]
        parent = None if unit is None else unit[1]
        key = f"{parent or 'calls'}/calls/{call_id or name}~{secrets.token_hex(4)}"
        self.note = CallNote(
            event="started",
            call="tool",
            name=name,
            call_id=call_id,
            parent=parent,
            key=key,
            started_at=time.time(),
        )
        self.began = perf_counter()
        emit(self.store, key, self.note, f"tool:{name}")
        self.token: Token[Any] = UNIT.set((self.store, key))

    def __enter__(self) -> None:
        pass

    def __exit__(self, _type: object, error: BaseException | None, _tb: object) -> None:
        UNIT.reset(self.token)
        note = self.note
        ended = replace(
            note,
            event="finished" if error is None else "failed",
            duration_ms=int((perf_counter() - self.began) * 1e6) / 1000,
            error=None if error is None else f"{type(error).__name__}: {error}",
        )
        emit(self.store, note.key or "", ended, f"tool:{note.name}")
