"""Pattern 2, sequential accumulation: ``[[A], [B], [C]]`` and the shared list.

Each actor can take a ``previous_action_results`` parameter: the values produced so far in
this iteration, starting with the value the iteration was fed. The list is read-only and
rebuilt at each step, so what an actor was handed never changes afterwards.

    .venv/bin/python examples/pattern2_sequential_accumulation.py
"""

from __future__ import annotations

import json
from typing import Any

from weft.agent import Agent
from weft.llm import ScriptedReasoner

PLAN = json.dumps(
    {"next_actions": [[{"type": "ActionA"}], [{"type": "ActionB"}], [{"type": "ActionC"}]]}
)
DONE = json.dumps({"instant_response": "all three ran", "task_status": "Completed"})


def actor(name: str) -> Any:
    def act(previous_action_results: list[Any]) -> str:
        print(f"{name} sees {list(previous_action_results)}")
        return f"{name}_data"

    return act


def main() -> None:
    agent = Agent(
        ScriptedReasoner([PLAN, DONE]),
        actor={name: actor(name) for name in ("ActionA", "ActionB", "ActionC")},
    )
    result = agent.run("run A, B and C", action_results="initial_value")
    print(f"fed back to the reasoner: {result.states[0].action_results.result}")


if __name__ == "__main__":
    main()
