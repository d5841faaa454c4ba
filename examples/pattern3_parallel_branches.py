"""Pattern 3, parallel branches: ``[[A1], [B1, B2], [C1]]``, the mixed case.

B1 and B2 each run in their own copy of the agent, on an O(1) fork of the store, and
continue their own loop; the summarizer merges them in action order, as one item. C1
sees the initial value, A1's result and the merged B results, in that order.

    .venv/bin/python examples/pattern3_parallel_branches.py
"""

from __future__ import annotations

import json
from typing import Any

from weft.agent import Agent
from weft.llm import ScriptedReasoner
from weft.store import Store

PLAN = json.dumps(
    {"next_actions": [[{"type": "A1"}], [{"type": "B1"}, {"type": "B2"}], [{"type": "C1"}]]}
)
DONE = json.dumps({"instant_response": "done", "task_status": "Completed"})


def act(action: Any, previous_action_results: list[Any], store: Store) -> str:
    store.write("state", f"notes/{action.type}", f"written by {action.type}")
    seen = sorted(e.path for e in store.entries(key_prefix="state:notes/"))
    print(f"{action.type}: previous_action_results={list(previous_action_results)} notes={seen}")
    return action.type


def main() -> None:
    reasoner = ScriptedReasoner(lambda prompt: PLAN if prompt.startswith("run") else DONE)
    agent = Agent(reasoner, actor=act, name="mixed")
    agent.run("run the mixed case", action_results="init")
    print(
        "branch agents:",
        sorted(
            {
                e.path.rsplit("/", 1)[0]
                for e in agent.store.entries()
                if e.path.startswith("agent/mixed/0.")
            }
        ),
    )


if __name__ == "__main__":
    main()
