"""Pattern 6, action memory: an actor surfaces ``action_memory.memory`` beside its raw result.

.venv/bin/python examples/pattern6_action_memory.py
"""

from __future__ import annotations

import json

from weft.agent import PromptBasedActionAgent
from weft.llm import ScriptedReasoner

READ = json.dumps({"next_actions": [[{"type": "Profile.Read", "target": "user"}]]})
DONE = json.dumps({"instant_response": "You are Ada.", "task_status": "Completed"})


def read_profile(target: str) -> dict[str, object]:
    return {
        "raw": {"id": 7, "name": "Ada Lovelace", "visits": 12},
        "action_memory": {"memory": "The user is Ada Lovelace, a returning visitor."},
    }


def main() -> None:
    reasoner = ScriptedReasoner([READ, DONE])
    agent = PromptBasedActionAgent(
        reasoner,
        template="Memory: {action_memory}\nResults:\n{action_result}\nTask: {user_input}",
        actor={"Profile.Read": read_profile},
    )
    print(agent.run("Who am I?").instant_response)
    print("--- the second prompt ---")
    print(reasoner.prompts[1])


if __name__ == "__main__":
    main()
