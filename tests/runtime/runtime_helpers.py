"""Schemas, nodes and contexts shared by the runtime tests (module level, so that
``typing.get_type_hints`` resolves them; a module of its own: ``conftest`` is ambiguous
across test folders)."""

from __future__ import annotations

import operator
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Annotated, Any, TypedDict

import pytest
from pydantic import BaseModel

from weft.errors import StorageError
from weft.persist import PostgresBackend
from weft.runtime import Input, Loaded, Reducer, TurnRuntime, TurnScoped, WorkflowContext, node
from weft.store import reducers

PG = "postgresql://postgres@127.0.0.1:5432/weft_test"
PG_SCHEMA = f"weft_runtime_{uuid.uuid4().hex[:10]}"  # one per test session, dropped after
Make = Callable[..., TurnRuntime]


def drop_schema() -> None:
    import psycopg

    with psycopg.connect(PG, autocommit=True) as conn:
        conn.execute(f'DROP SCHEMA IF EXISTS "{PG_SCHEMA}" CASCADE')


def postgres() -> PostgresBackend:
    try:
        return PostgresBackend(PG, schema=PG_SCHEMA, timeout=5)
    except StorageError as exc:
        pytest.fail(
            "the runtime's PostgreSQL tests need a server on 127.0.0.1:5432 with a database "
            "weft_test (trust auth, user postgres); .ci/run starts one. Locally: "
            "`pg_ctlcluster 15 main start && createdb -h 127.0.0.1 -U postgres weft_test`. "
            f"The error: {exc}"
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class ChatContext(WorkflowContext):
    """A context with one dependency of the app's own: where ``facts`` are loaded from."""

    facts: list[str] = field(default_factory=list)


def load_facts(context: ChatContext, state: Any) -> list[str]:
    return [f"{fact} (for {state['message']})" for fact in context.facts]


class SessionProgress(TypedDict, total=False):
    turn_count: Annotated[int, Reducer(operator.add, each_turn=1)]
    last_route: str


class ChatState(TypedDict):
    message: Annotated[str, Input]
    session_id: Annotated[str, Input]
    user_id: Annotated[str | None, Input(default=None)]
    history: Annotated[list[dict[str, Any]], Reducer(operator.add)]
    transcript: Annotated[list[dict[str, Any]], Reducer(operator.add)]
    session_progress: Annotated[SessionProgress, Reducer(reducers.merge)]
    notes: Annotated[list[str], Reducer(operator.add, default_factory=list)]
    facts: Annotated[list[str], Loaded(load_facts, default_factory=list)]
    route: Annotated[str, TurnScoped(default="none")]
    scratchpad: Annotated[str, TurnScoped]
    response_text: Annotated[str, TurnScoped]
    diagnostics: Annotated[dict[str, Any], Reducer(reducers.merge)]


class ScoreState(TypedDict):
    message: Annotated[str, Input]
    session_id: Annotated[str, Input]
    score: Annotated[int, TurnScoped(reducer=reducers.add, default=0)]
    response_text: Annotated[str, TurnScoped]


class TurnDiagnosticsState(TypedDict):
    message: Annotated[str, Input]
    session_id: Annotated[str, Input]
    diagnostics: Annotated[dict[str, Any], TurnScoped]


@node(writes=["route", "scratchpad", "diagnostics"])
def triage(state: Any, context: ChatContext) -> dict[str, Any]:
    seen = state.get("scratchpad")
    return {
        "route": "chat",
        "scratchpad": f"turn {context.turn}, scratchpad before: {seen}",
        "diagnostics": {"triage_path": "rules"},
    }


@node(writes=["response_text", "notes", "session_progress"])
async def reply(state: Any, context: ChatContext) -> dict[str, Any]:
    return {
        "response_text": f"reply {context.turn} to {state['message']}",
        "notes": [f"note {context.turn}"],
        "session_progress": {"last_route": state["route"]},
    }


class AgentInput(BaseModel):
    message: str
    session_id: str
    user_id: str | None = None


class AgentOutput(BaseModel):
    response_text: str
    route: str
    diagnostics: dict[str, Any] = {}


def say(text: str, thread: str, **more: Any) -> dict[str, Any]:
    return {"message": text, "session_id": thread, **more}
