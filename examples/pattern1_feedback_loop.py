"""Pattern 1, the feedback loop: each iteration's action results feed the next reasoner call.

The scripted reasoner first asks to visit a page (a local file here), then answers from
what the visit returned. The second prompt shows the ``<ActionResults>`` XML it was fed.

    .venv/bin/python examples/pattern1_feedback_loop.py
"""

from __future__ import annotations

from pathlib import Path

from weft.agent import PromptBasedActionAgent
from weft.llm import ScriptedReasoner

DATA = Path(__file__).parent / "data"

VISIT = """<StructuredResponse>
  <InstantResponse>Let me read the page.</InstantResponse>
  <TaskStatus>Ongoing</TaskStatus>
  <NextActions><Action>
    <ActionType>Navigation.VisitURL</ActionType>
    <Target>page.html</Target>
  </Action></NextActions>
</StructuredResponse>"""
ANSWER = """<StructuredResponse>
  <InstantResponse>weft carries state and memory through agent workflows.</InstantResponse>
  <TaskStatus>Completed</TaskStatus>
</StructuredResponse>"""


def visit(target: str) -> dict[str, str]:
    return {"body_html_after": (DATA / target).read_text().strip(), "source": target}


def main() -> None:
    reasoner = ScriptedReasoner([VISIT, ANSWER])
    agent = PromptBasedActionAgent(
        reasoner,
        template="Task: {user_input}\n{action_result}",
        actor={"Navigation.VisitURL": visit},
    )
    result = agent.run("What is weft?")
    print("--- the second prompt ---")
    print(reasoner.prompts[1])
    print("--- the answer ---")
    print(result.instant_response)
    print(f"({result.iterations} iterations, stopped: {result.stop_reason})")


if __name__ == "__main__":
    main()
