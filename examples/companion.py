"""A companion agent on the turn runtime: history, a session summary,
working-memory recall and diagnostics, three turns, a restart, and a fourth turn.

    .venv/bin/python examples/companion.py

The state schema says where each field lives: the caller's ``message`` is an input, the
``history`` and the ``session_memory`` summary accumulate in the thread (SQLite),
``working_memory`` is recalled each turn from the user's long-term memory (in the same
SQLite file), and the reply, its style and the route live for one turn only. The model
is scripted, so the run is the same every time; swap in ``weft.llm.OpenAIChatModel``
for a real one.
"""

from __future__ import annotations

import asyncio
import operator
import tempfile
from pathlib import Path
from typing import Annotated, Any, TypedDict

from pydantic import BaseModel

from weft.llm import ScriptedReasoner
from weft.memory import (
    EpisodicWorkingMemoryEntry,
    LongTermMemory,
    Owner,
    SemanticWorkingMemoryEntry,
    format_working_memory_entries,
)
from weft.persist import SQLiteBackend
from weft.runtime import (
    Input,
    Loaded,
    Reducer,
    StageEvent,
    TurnResult,
    TurnRuntime,
    TurnScoped,
    WorkflowContext,
    node,
    working_memory_loader,
)
from weft.store import reducers

# --------------------------------------------------------------------- contract


class AgentInput(BaseModel):
    message: str
    session_id: str
    user_id: str | None = None


class AgentOutput(BaseModel):
    response_text: str
    response_style: str
    route: str
    diagnostics: dict[str, Any] = {}


# ------------------------------------------------------------------------ state


class SessionProgress(TypedDict, total=False):
    turn_count: Annotated[int, Reducer(operator.add, each_turn=1)]


class CompanionState(TypedDict):
    message: Annotated[str, Input]
    session_id: Annotated[str, Input]
    user_id: Annotated[str | None, Input(default=None)]
    history: Annotated[list[dict[str, Any]], Reducer(operator.add, default_factory=list)]
    session_memory: Annotated[dict[str, Any], Reducer(reducers.merge, default_factory=dict)]
    session_progress: SessionProgress
    working_memory: Annotated[list[Any], Loaded(working_memory_loader(k=2))]
    route: Annotated[str, TurnScoped(default="chat")]
    response_style: Annotated[str, TurnScoped(default="supportive")]
    response_text: Annotated[str, TurnScoped]
    diagnostics: Annotated[dict[str, Any], Reducer(reducers.merge)]


# ------------------------------------------------------------------------ nodes


@node(writes=["route", "response_style", "diagnostics"])
def triage(state: Any) -> dict[str, Any]:
    recalled = bool(state["working_memory"])
    return {
        "route": "recall" if recalled else "chat",
        "response_style": "reflective" if recalled else "supportive",
        "diagnostics": {"triage_path": "keywords"},
    }


@node(writes=["response_text"])
async def respond(state: Any, context: WorkflowContext) -> dict[str, Any]:
    recent = "\n".join(f"{m['role']}: {m['content']}" for m in state["history"][-4:])
    prompt = (
        f"Style: {state['response_style']}\n"
        f"Summary so far: {state['session_memory'].get('summary', '(none)')}\n"
        f"What you remember:\n{format_working_memory_entries(state['working_memory'])}\n"
        f"Recent turns:\n{recent}\nUser: {state['message']}"
    )
    completion = await context.llm_client.areason(prompt)
    return {"response_text": completion.text}


@node(writes=["session_memory"])
def summarise(state: Any) -> dict[str, Any]:
    turns = state["session_progress"]["turn_count"]
    return {"session_memory": {"summary": f"{turns} turns; last topic: {state['message']}"}}


# ------------------------------------------------------------------------ model


def scripted_reply(prompt: str) -> str:
    """The 'model': a reply chosen by what the user said (the prompt's last line)."""
    said = prompt.rsplit("User: ", 1)[-1]
    if "boss" in said:
        return "That sounds draining. Is it the workload, or how your boss treats you?"
    if "dog" in said:
        return "Last time you told me about losing your dog. How are you holding up?"
    if "remember" in said:
        return "I remember we talked about work and about your dog."
    return "I'm here. Tell me more."


def seed_memory(backend: SQLiteBackend, user: str) -> None:
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


def make_runtime(backend: SQLiteBackend) -> TurnRuntime:
    return TurnRuntime(
        CompanionState,
        [triage, respond, summarise],
        backend,
        context=WorkflowContext(llm_client=ScriptedReasoner(scripted_reply)),
        input_model=AgentInput,
        output_model=AgentOutput,
    )


def show(n: int, said: str, out: AgentOutput) -> None:
    diagnostics = out.diagnostics
    recall = diagnostics.get("loaded", {}).get("working_memory", {})
    print(f"turn {n}  user: {said}")
    print(f"        agent ({out.response_style}, route {out.route}): {out.response_text}")
    print(
        f"        recall: {recall.get('path')}  turn_total_ms: {diagnostics['turn_total_ms']:.2f}"
        f"  nodes: {', '.join(diagnostics['node_ms'])}"
    )


async def main(folder: Path | None = None) -> None:
    with tempfile.TemporaryDirectory() as scratch:
        database = (folder or Path(scratch)) / "companion.db"
        thread, user = "session-42", "ada"
        turns = ["hi there", "trouble with my boss again", "I miss my dog"]

        with SQLiteBackend(database) as backend:
            seed_memory(backend, user)
            with make_runtime(backend) as runtime:
                for n, said in enumerate(turns, start=1):
                    out = await runtime.arun_turn(
                        AgentInput(message=said, session_id=thread, user_id=user)
                    )
                    show(n, said, out)
        print("--- restart: a new runtime on the same database ---")

        with SQLiteBackend(database) as backend, make_runtime(backend) as runtime:
            said = "do you remember what we talked about?"
            stream = runtime.astream_turn(AgentInput(message=said, session_id=thread, user_id=user))
            async for item in stream:
                if isinstance(item, StageEvent) and item.phase == "finished":
                    print(f"        [{item.kind} {item.label}: {item.elapsed_ms:.2f} ms]")
                elif isinstance(item, TurnResult):
                    show(item.turn, said, item.output)
            print("the model's prompt at turn 4 (history, summary and memory, from the thread):")
            print("        " + runtime.context.llm_client.prompts[-1].replace("\n", "\n        "))
            state = runtime.thread_state(thread)
            print(f"history: {len(state['history'])} entries, roles alternate: "
                  f"{[m['role'] for m in state['history']][:4]} ...")  # fmt: skip
            print(f"session_progress: {state['session_progress']}")
            print(f"session_memory: {state['session_memory']}")
            print(f"stored fields: {sorted(state)}")


if __name__ == "__main__":
    asyncio.run(main())
