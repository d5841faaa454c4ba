"""An action agent on a real model through the OpenAI-compatible adapter.

Set ``OPENAI_BASE_URL`` (a local server such as Ollama's ``http://localhost:11434/v1``
needs no key; OpenAI itself needs ``OPENAI_API_KEY``) and optionally ``OPENAI_MODEL``:

    OPENAI_BASE_URL=http://localhost:11434/v1 OPENAI_MODEL=qwen2.5:7b \\
        .venv/bin/python examples/openai_agent.py

Without ``OPENAI_BASE_URL`` it says so and exits. The model is asked to add two numbers
with an ``add`` action and to report the sum.
"""

from __future__ import annotations

import os
from typing import Any

from weft.agent import PromptBasedActionAgent
from weft.llm import OpenAIChatModel


def add(a: float, b: float) -> float:
    return a + b


def main(model: Any = None) -> None:
    if model is None:
        if not os.environ.get("OPENAI_BASE_URL"):
            print("OPENAI_BASE_URL is not set: nothing to talk to. Set it to run this example.")
            return
        model = OpenAIChatModel(
            os.environ.get("OPENAI_MODEL", "gpt-4o-mini"), default_options={"temperature": 0}
        )
    agent = PromptBasedActionAgent(model, actor={"add": add}, max_iterations=4)
    result = agent.run('Use the "add" action with args {"a": 19, "b": 23}, then tell me the sum.')
    for state in result.states:
        actions = [a.type for group in state.response.next_actions for a in group]
        print(f"iteration {state.iteration}: {state.task_status.value}, actions {actions}")
    print(result.instant_response)


if __name__ == "__main__":
    main()
