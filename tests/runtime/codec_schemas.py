"""Two versions of one schema, for the codec tests and their fixture records.

Version 1 (``LegacyState``) kept the conversation in ``messages`` and counted turns in
``turns_seen``; version 2 (``CurrentState``) calls them ``history`` and
``session_progress.turn_count``. ``v1_to_v2`` migrates a thread.
"""

from __future__ import annotations

import operator
import sqlite3
from pathlib import Path
from typing import Annotated, Any, TypedDict

from weft.persist import Backend
from weft.runtime import (
    Input,
    Reducer,
    StateCodec,
    Transcript,
    TurnRuntime,
    TurnScoped,
    node,
)

FIXTURES = Path(__file__).parent / "fixtures"
THREAD = "fixture-thread"


class LegacyState(TypedDict):
    message: Annotated[str, Input]
    session_id: Annotated[str, Input]
    messages: Annotated[list[dict[str, Any]], Reducer(operator.add)]
    turns_seen: Annotated[int, Reducer(operator.add, each_turn=1)]
    reply: Annotated[str, TurnScoped]


class Progress(TypedDict, total=False):
    turn_count: Annotated[int, Reducer(operator.add, each_turn=1)]


class CurrentState(TypedDict):
    message: Annotated[str, Input]
    session_id: Annotated[str, Input]
    history: Annotated[list[dict[str, Any]], Reducer(operator.add)]
    session_progress: Progress
    response_text: Annotated[str, TurnScoped]


def v1_to_v2(state: dict[str, Any]) -> dict[str, Any]:
    state["history"] = state.pop("messages", [])
    state["session_progress"] = {"turn_count": state.pop("turns_seen", 0)}
    return state


CODEC = StateCodec(version=2, migrations={1: v1_to_v2})


@node(writes=["reply"])
def legacy_reply(state: Any, context: Any) -> dict[str, Any]:
    return {"reply": f"v1 reply {context.turn}"}


@node(writes=["response_text"])
def current_reply(state: Any, context: Any) -> dict[str, Any]:
    return {"response_text": f"v2 reply {context.turn}"}


def legacy_runtime(backend: Backend) -> TurnRuntime:
    return TurnRuntime(
        LegacyState,
        [legacy_reply],
        backend,
        codec=StateCodec(version=1),
        transcript=Transcript(fields=("messages",), assistant="reply"),
    )


def current_runtime(backend: Backend, codec: StateCodec = CODEC) -> TurnRuntime:
    return TurnRuntime(CurrentState, [current_reply], backend, codec=codec)


def install(database: Path, name: str, thread_id: str = THREAD) -> None:
    """Write the fixture's records straight into the SQLite tables, as stored rows."""
    import json

    rows = [json.loads(line) for line in (FIXTURES / f"{name}.jsonl").read_text().splitlines()]
    conn = sqlite3.connect(database)
    try:
        with conn:
            conn.execute(
                "INSERT INTO weft_threads (thread_id, first_step, created_at) VALUES (?, 0, 0)",
                (thread_id,),
            )
            conn.executemany(  # a thread's events are numbered (its number << 32) + step
                "INSERT INTO weft_events (seq, run_id, record) "
                "SELECT (num << 32) + ?, ?, ? FROM weft_threads WHERE thread_id = ?",
                [(r["step"], r["run_id"], r["record"], thread_id) for r in rows],
            )
    finally:
        conn.close()
