"""A thread of twenty turns on a TurnRuntime, for the crash test (``main`` or a script).

    python turn_crash_worker.py BACKEND THREAD COUNTER

BACKEND is ``sqlite:<path>`` or ``postgres:<schema>`` (see ``crash_helpers``). The worker
asks the runtime how many turns the thread has stored and runs the rest, turn ``k`` with
the message ``message k`` (a turn refused with a ``ConflictError``, because the killed
worker's last commit reached PostgreSQL after this one read the thread, is on record
already: the worker asks again). A turn loads ``facts`` (a ``Loaded`` field), then ``triage``
(sync) and ``reply`` (async) run; what they write depends on what the thread stored
before (the history's length, the notes, the counters), so a turn that read a wrong
state ends differently. The loader and each node append ``<pid> <what> <turn>`` to
COUNTER (``load``, ``triage``, ``reply``), then sleep a few milliseconds. The worker
prints ``ready`` once the runtime is open and, when the thread has all its turns,
``done`` and the thread's stored state as JSON.
"""

from __future__ import annotations

import asyncio
import operator
import os
import sys
import time
from typing import Annotated, Any, TypedDict

from crash_helpers import append_line, dump, open_backend
from weft.errors import ConflictError
from weft.runtime import Input, Loaded, Reducer, TurnRuntime, TurnScoped, WorkflowContext, node
from weft.store import reducers

TURNS = 20
COUNTER = "WEFT_CRASH_COUNTER"


def effect(what: str, turn: int) -> None:
    append_line(os.environ[COUNTER], f"{os.getpid()} {what} {turn}")


def load_facts(context: WorkflowContext, state: Any) -> list[str]:
    effect("load", context.turn)
    time.sleep(0.001)
    return [f"fact for {state['message']}"]


class Progress(TypedDict, total=False):
    turns: Annotated[int, Reducer(operator.add, each_turn=1)]
    last_route: str


class ThreadState(TypedDict):
    message: Annotated[str, Input]
    session_id: Annotated[str, Input]
    history: Annotated[list[dict[str, Any]], Reducer(operator.add)]
    transcript: Annotated[list[dict[str, Any]], Reducer(reducers.append)]
    notes: Annotated[list[str], Reducer(operator.add, default_factory=list)]
    progress: Annotated[Progress, Reducer(reducers.merge)]
    seen: Annotated[dict[str, int], Reducer(reducers.merge)]
    facts: Annotated[list[str], Loaded(load_facts, default_factory=list)]
    route: Annotated[str, TurnScoped(default="none")]
    response_text: Annotated[str, TurnScoped]


@node(writes=["route", "seen"])
def triage(state: Any, context: WorkflowContext) -> dict[str, Any]:
    effect("triage", context.turn)
    time.sleep(0.002)
    route = "long" if len(state.get("history", [])) % 6 == 4 else "short"
    return {"route": route, "seen": {f"t{context.turn}": len(state.get("notes", []))}}


@node(writes=["response_text", "notes", "progress"])
async def reply(state: Any, context: WorkflowContext) -> dict[str, Any]:
    effect("reply", context.turn)
    await asyncio.sleep(0.002)
    count = state["progress"]["turns"]
    return {
        "response_text": f"reply {context.turn} ({state['route']}, {count} turns) to "
        f"{state['message']}: {state['facts'][0]}",
        "notes": [f"note {context.turn} after {len(state['notes'])}"],
        "progress": {"last_route": state["route"]},
    }


def main(argv: list[str]) -> None:
    spec, thread, counter = argv
    os.environ[COUNTER] = counter
    backend = open_backend(spec)
    try:
        with TurnRuntime(ThreadState, [triage, reply], backend, snapshot_every=10) as runtime:
            print("ready", flush=True)
            while (turn := runtime.turns(thread) + 1) <= TURNS:
                try:
                    runtime.run_turn({"message": f"message {turn}", "session_id": thread})
                except ConflictError:
                    # the killed worker's last commit, sent before it died, landed after
                    # this one read the thread: this turn is stored already, go on from it
                    continue
            state = runtime.thread_state(thread)
        print("done", dump(state), flush=True)
    finally:
        backend.close()


if __name__ == "__main__":
    main(sys.argv[1:])
