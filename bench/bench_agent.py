"""One agent iteration's own overhead, against the floor of calling the reasoner and the actor.

The reasoner is a zero-latency scripted one, so every microsecond measured is weft's:
building the prompt, parsing the reply, building and running the WorkGraph of the
actions, and writing the state item, the action record and the plan to the store.

    .venv/bin/python bench/bench_agent.py [--quick]

Prints a table of medians (microseconds per iteration) and the ratio to the floor.
"""

from __future__ import annotations

import asyncio
import itertools
import statistics
import sys
import time
from collections.abc import Awaitable, Callable
from typing import Any

from weft.agent import (
    Agent,
    AgentInputs,
    AgentStates,
    PromptBasedActionAgent,
    PromptBasedActionPlanningAgent,
    parse_structured_response,
)
from weft.agent.branching import build_action_graph
from weft.agent.context import IterationContext
from weft.llm import ScriptedReasoner

ONE_ACTION = (
    "<StructuredResponse><InstantResponse>Adding.</InstantResponse>"
    "<TaskStatus>Completed</TaskStatus><TaskStatusDescription>adding</TaskStatusDescription>"
    "<NextActions><ActionGroup><Action><ActionType>add</ActionType>"
    '<Args>{"a": 2, "b": 3}</Args><Reasoning>the user asked</Reasoning></Action>'
    "</ActionGroup></NextActions></StructuredResponse>"
)
TWO_BRANCHES = ONE_ACTION.replace(
    "</Action></ActionGroup>",
    '</Action><Action><ActionType>add</ActionType><Args>{"a": 1, "b": 1}</Args></Action>'
    "</ActionGroup>",
)
DONE = "<StructuredResponse><TaskStatus>Completed</TaskStatus></StructuredResponse>"
PLAN = (
    '{"problems": [{"request": "a", "problem_id": "A"}, {"request": "b", "problem_id": "B"},'
    ' {"request": "c", "problem_id": "C"}], "problem_graph": "A, B -> C", '
    '"task_status": "Completed"}'
)


def add(a: int, b: int) -> int:
    return a + b


def median_us(samples: list[float]) -> float:
    return statistics.median(samples) * 1e6


async def time_async(make: Callable[[], Awaitable[Any]], rounds: int, per_round: int) -> float:
    samples = []
    for _ in range(rounds):
        started = time.perf_counter()
        for _ in range(per_round):
            await make()
        samples.append((time.perf_counter() - started) / per_round)
    return median_us(samples)


def time_sync(fn: Callable[[], Any], rounds: int, per_round: int) -> float:
    samples = []
    for _ in range(rounds):
        started = time.perf_counter()
        for _ in range(per_round):
            fn()
        samples.append((time.perf_counter() - started) / per_round)
    return median_us(samples)


async def main(quick: bool) -> None:
    rounds, per_round = (5, 100) if quick else (15, 400)
    reasoner = ScriptedReasoner(lambda prompt: ONE_ACTION)

    def floor() -> None:  # what an iteration cannot avoid: ask, then act
        reasoner.reason("What is 2 + 3?")
        add(a=2, b=3)

    rows: list[tuple[str, float]] = [
        ("floor: reasoner + actor, called directly", time_sync(floor, rounds, per_round))
    ]

    def fresh(
        cls: type[Agent], reply: Callable[[str], str], *, recorded: bool = False, **kw: Any
    ) -> Callable[[], Any]:
        # a fresh agent every 100 runs keeps the state list short, as in one task;
        # recorded: each run has a run id of its own, so each is recorded as it goes
        box: list[Agent] = []
        runs = itertools.count()

        def run() -> Any:
            if not box or len(box[0].states) >= 100:
                box[:] = [cls(ScriptedReasoner(reply), **kw)]
            run_id = f"run-{next(runs)}" if recorded else None
            return box[0].arun("What is 2 + 3?", run_id=run_id)

        return run

    rows.append(
        (
            "Agent: 1 iteration, 1 action (XML)",
            await time_async(
                fresh(Agent, lambda p: ONE_ACTION, actor={"add": add}), rounds, per_round
            ),
        )
    )
    rows.append(
        (
            "PromptBasedActionAgent: default template, 1 action",
            await time_async(
                fresh(PromptBasedActionAgent, lambda p: ONE_ACTION, actor={"add": add}),
                rounds,
                per_round,
            ),
        )
    )
    rows.append(
        (
            "Agent: parallel group of 2 (2 branch loops)",
            await time_async(
                fresh(
                    Agent,
                    lambda p: TWO_BRANCHES if p.startswith("What") else DONE,
                    actor={"add": add},
                ),
                rounds,
                per_round // 4,
            ),
        )
    )
    rows.append(
        (
            "Agent: 1 iteration, 1 action, recorded (run_id)",
            await time_async(
                fresh(Agent, lambda p: ONE_ACTION, recorded=True, actor={"add": add}),
                rounds,
                per_round,
            ),
        )
    )
    rows.append(
        (
            "Agent: parallel group of 2, recorded (run_id)",
            await time_async(
                fresh(
                    Agent,
                    lambda p: TWO_BRANCHES if p.startswith("What") else DONE,
                    recorded=True,
                    actor={"add": add},
                ),
                rounds,
                per_round // 4,
            ),
        )
    )
    rows.append(
        (
            "planning agent: 3 problems, A, B -> C",
            await time_async(
                fresh(
                    PromptBasedActionPlanningAgent, lambda p: PLAN, solver=lambda request: request
                ),
                rounds,
                per_round // 4,
            ),
        )
    )

    agent = PromptBasedActionAgent(ScriptedReasoner([]), actor={"add": add})
    inputs = AgentInputs(
        iteration=0,
        user_input="What is 2 + 3?",
        user_profile=None,
        context=None,
        action_results=None,
        attachments=(),
        states=AgentStates(),
    )
    response, _ = parse_structured_response(ONE_ACTION)
    step = IterationContext(agent=agent, iteration=0, action_results=None, attachments=())
    parts = [
        ("  of which: prompt (default template)", lambda: agent.construct_reasoner_input(inputs)),
        ("  of which: parse the XML reply", lambda: agent.parse_response(ONE_ACTION)),
        (
            "  of which: build the action WorkGraph",
            lambda: build_action_graph(response.next_actions, step),
        ),
    ]
    for label, fn in parts:
        rows.append((label, time_sync(fn, rounds, per_round)))

    base = rows[0][1]
    width = max(len(label) for label, _ in rows)
    print(f"{'case':<{width}}  {'median us':>10}  {'x floor':>8}")
    print(f"{'-' * width}  {'-' * 10}  {'-' * 8}")
    for label, us in rows:
        print(f"{label:<{width}}  {us:>10.1f}  {us / base:>8.1f}")


if __name__ == "__main__":
    asyncio.run(main("--quick" in sys.argv))
