"""Pattern 4, the planning DAG: the Starbucks ProblemGraph.

The planner splits the task into problems with dependencies; each problem is solved by a
copy of the solver agent, and a problem's successors receive its result as an
attachment. Independent problems run concurrently.

    .venv/bin/python examples/pattern4_planning_dag.py
"""

from __future__ import annotations

from weft.agent import PromptBasedActionPlanningAgent, PromptBasedAgent
from weft.llm import ScriptedReasoner

PLAN = """<StructuredResponse>
  <InstantResponse>I will plan lunch.</InstantResponse>
  <Problems>
    <Problem>
      <Request>Search for Starbucks recipe</Request>
      <ProblemID>SUGGEST_RECIPE_STARBUCKS</ProblemID>
    </Problem>
    <Problem>
      <Request>Order from Starbucks</Request>
      <ProblemID>ORDER_STARBUCKS</ProblemID>
    </Problem>
    <Problem>
      <Request>Order from McDonald's</Request>
      <ProblemID>ORDER_MCDONALDS</ProblemID>
    </Problem>
  </Problems>
  <ProblemGraph>
    SUGGEST_RECIPE_STARBUCKS -> ORDER_STARBUCKS
    ORDER_MCDONALDS
  </ProblemGraph>
</StructuredResponse>"""
DONE = """<StructuredResponse>
  <InstantResponse>Lunch is ordered from both places.</InstantResponse>
  <TaskStatus>Completed</TaskStatus>
</StructuredResponse>"""


def solve(prompt: str) -> str:
    request = prompt.splitlines()[-1]
    if "Attachment" in prompt:
        return f"{request}: done, using the attached recipe"
    return f"{request}: done"


def main() -> None:
    solver_reasoner = ScriptedReasoner(solve)
    solver = PromptBasedAgent(solver_reasoner, template="{attachments}\n{user_input}")
    planner = PromptBasedActionPlanningAgent(
        ScriptedReasoner([PLAN, DONE]), solver=solver, name="lunch"
    )
    result = planner.run("Get lunch for the team")
    print("plan:", [" -> ".join(path) for path in result.states[0].response.problem_graph])
    for prompt in solver_reasoner.prompts:
        if "<Attachment>" in prompt:
            print("--- what ORDER_STARBUCKS's agent saw ---")
            print(prompt)
    print("--- results fed back to the planner ---")
    for solved in result.states[0].action_results:
        print(f"{solved.id}: {solved.result['instant_response']}")
    print(result.instant_response)


if __name__ == "__main__":
    main()
