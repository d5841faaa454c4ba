"""Pattern 5, conversational history: the ``User:`` / ``Agent:`` transcript from the states.

.venv/bin/python examples/pattern5_conversation.py
"""

from __future__ import annotations

from weft.agent import PromptBasedAgent
from weft.llm import ScriptedReasoner


def main() -> None:
    reasoner = ScriptedReasoner(
        [
            "Quantum computing is a type of computation...",
            "Qubits are the fundamental units...",
            "A bit is 0 or 1; a qubit can be in a superposition of both.",
        ]
    )
    agent = PromptBasedAgent(reasoner, template="{user_input}", use_conversational_user_input=True)
    for question in (
        "Tell me about quantum computing",
        "What are qubits?",
        "How do they differ from classical bits?",
    ):
        agent.run(question)
    print("--- the third prompt ---")
    print(reasoner.prompts[-1])
    print(f"--- {len(agent.states)} state items in agent/{agent.name}/states ---")


if __name__ == "__main__":
    main()
