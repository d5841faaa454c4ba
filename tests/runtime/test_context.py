"""WorkflowContext: dependencies beside the state, and long-term memory loaded each turn."""

from __future__ import annotations

import dataclasses
import operator
from pathlib import Path
from typing import Annotated, Any, TypedDict

import pytest
from runtime_helpers import ChatContext, ChatState, Make, say

from weft.errors import TurnError
from weft.llm import ScriptedReasoner
from weft.memory import (
    EpisodicWorkingMemoryEntry,
    HashingEmbedder,
    InMemoryMemoryBackend,
    LongTermMemory,
    MemoryBackend,
    Owner,
    SemanticWorkingMemoryEntry,
    SQLiteMemoryBackend,
    format_working_memory_entries,
)
from weft.persist import Backend, SQLiteBackend
from weft.runtime import (
    Input,
    Loaded,
    Reducer,
    TurnRuntime,
    TurnScoped,
    WorkflowContext,
    node,
    working_memory_loader,
)
from weft.store import reducers


class MemoryState(TypedDict):
    message: Annotated[str, Input]
    session_id: Annotated[str, Input]
    user_id: Annotated[str | None, Input(default=None)]
    history: Annotated[list[dict[str, Any]], Reducer(operator.add)]
    working_memory: Annotated[list[Any], Loaded(working_memory_loader(k=3))]
    response_text: Annotated[str, TurnScoped]
    diagnostics: Annotated[dict[str, Any], Reducer(reducers.merge)]


@node(writes=["response_text"])
def recall(state: Any, context: WorkflowContext) -> dict[str, Any]:
    return {"response_text": format_working_memory_entries(state["working_memory"])}


def seed(backend: Backend | MemoryBackend, user: str) -> None:
    memory = LongTermMemory(backend, owner=Owner(user_id=user))
    memory.remember(
        SemanticWorkingMemoryEntry(
            category="relationship",
            subject="User",
            predicate="WORRIES_ABOUT",
            object="work",
            evidence_quote="my boss is terrible",
        )
    )
    memory.remember(
        EpisodicWorkingMemoryEntry(
            summary="talked about loss after my dog died.", primary_themes=["grief"]
        )
    )


def test_the_context_is_frozen() -> None:
    context = WorkflowContext()
    with pytest.raises(dataclasses.FrozenInstanceError):
        context.turn = 3  # type: ignore[misc]


def test_context_memory_needs_a_store_and_an_owner() -> None:
    with pytest.raises(TurnError, match="no memory_store"):
        _ = WorkflowContext().memory
    with pytest.raises(TurnError, match="per owner"):
        _ = WorkflowContext(memory_store=object()).memory  # type: ignore[arg-type]


async def test_the_model_client_lives_on_the_context_never_in_the_state(
    make: Make, tid: str
) -> None:
    reasoner = ScriptedReasoner(lambda prompt: f"echo: {prompt}")

    @node(writes=["response_text"])
    def answer(state: Any, context: ChatContext) -> dict[str, Any]:
        return {"response_text": context.llm_client(state["message"])}

    runtime = make(ChatState, [answer], context=ChatContext(llm_client=reasoner))
    out = await runtime.arun_turn(say("hi", tid))
    assert out["response_text"] == "echo: hi"
    assert reasoner.prompts == ["hi"]
    stored = {logged.event.path for logged in runtime.backend.history(tid)}
    assert not any("llm" in path for path in stored)


async def test_working_memory_is_recalled_for_the_message_each_turn(
    make: Make, backend: Backend, tid: str
) -> None:
    user = f"user-{tid}"
    seed(backend, user)
    runtime = make(MemoryState, [recall], context=WorkflowContext())
    out = await runtime.arun_turn(say("trouble with my boss", tid, user_id=user))
    assert out["response_text"].startswith('[relationship] User WORRIES_ABOUT work — "my boss')
    assert out["diagnostics"]["loaded"]["working_memory"]["path"] == "token_recall"
    second = await runtime.arun_turn(say("I miss my dog", tid, user_id=user))
    assert second["response_text"].startswith("Last session (grief): talked about loss")
    assert "working_memory" not in runtime.thread_state(tid)


async def test_the_default_memory_store_is_the_checkpointers_database(
    tmp_path: Path, tid: str
) -> None:
    path = tmp_path / "weft.db"
    with SQLiteMemoryBackend(path) as rows:  # another connection, as another process would
        seed(rows, "ada")
    with TurnRuntime(MemoryState, [recall], SQLiteBackend(path)) as runtime:
        out = await runtime.arun_turn(say("trouble with my boss", tid, user_id="ada"))
    assert out["response_text"].startswith("[relationship] User WORRIES_ABOUT work")


async def test_a_memory_store_given_to_the_runtime_is_used(make: Make, tid: str) -> None:
    rows = InMemoryMemoryBackend()
    seed(rows, "ada")
    runtime = make(MemoryState, [recall], memory_store=rows, context=WorkflowContext())
    assert runtime.context.memory_store is rows
    out = await runtime.arun_turn(say("trouble with my boss", tid, user_id="ada"))
    assert out["response_text"].startswith("[relationship] User WORRIES_ABOUT work")


async def test_working_memory_belongs_to_the_turns_owner(
    make: Make, backend: Backend, tid: str
) -> None:
    seed(backend, f"user-{tid}")
    runtime = make(MemoryState, [recall], context=WorkflowContext())
    out = await runtime.arun_turn(say("trouble with my boss", tid, user_id=f"other-{tid}"))
    assert out["response_text"] == ""


async def test_an_embedder_on_the_context_turns_on_hybrid_recall(
    make: Make, backend: Backend, tid: str
) -> None:
    user = f"user-{tid}"
    seed(backend, user)
    context = WorkflowContext(embedding_provider=HashingEmbedder())
    runtime = make(MemoryState, [recall], context=context)
    out = await runtime.arun_turn(say("my boss at work", tid, user_id=user))
    assert out["diagnostics"]["loaded"]["working_memory"]["path"] == "hybrid_rrf"


async def test_a_failing_loader_names_its_field_and_stores_nothing(make: Make, tid: str) -> None:
    def broken(context: Any, state: Any) -> Any:
        raise ConnectionError("memory server down")

    # the functional syntax: a schema that names local objects (class syntax needs them
    # at module level, where typing.get_type_hints can resolve them)
    broken_state = TypedDict(  # noqa: UP013 (local names, see above)
        "Broken",
        {
            "message": Annotated[str, Input],
            "session_id": Annotated[str, Input],
            "facts": Annotated[list[str], Loaded(broken)],
        },
    )
    runtime = make(broken_state, [node(writes=[])(lambda s: None)])
    with pytest.raises(TurnError, match=r"the loader of 'facts' failed \(ConnectionError"):
        await runtime.arun_turn(say("hi", tid))
    assert runtime.backend.last_step(tid) == 0


async def test_async_loaders_run_concurrently(make: Make, tid: str) -> None:
    import asyncio

    running: list[int] = []
    peak: list[int] = []

    async def slow(context: Any, state: Any) -> int:
        running.append(1)
        peak.append(len(running))
        await asyncio.sleep(0.02)
        running.pop()
        return 1

    two_loaded = TypedDict(  # noqa: UP013 (local names)
        "TwoLoaded",
        {
            "message": Annotated[str, Input],
            "session_id": Annotated[str, Input],
            "a": Annotated[int, Loaded(slow)],
            "b": Annotated[int, Loaded(slow)],
        },
    )
    runtime = make(two_loaded, [node(writes=[])(lambda s: None)])
    await runtime.arun_turn(say("hi", tid))
    assert max(peak) == 2
