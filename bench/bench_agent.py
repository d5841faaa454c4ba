"""One agent iteration's own cost, against a plain loop calling the same reasoner and actor.

The reasoner is a zero-latency scripted one, so every microsecond the agent spends over
the plain loop is weft's: building the prompt, parsing the XML reply, running the action,
and writing the ``current`` record, the action record and the state item to the store.

    .venv/bin/python bench/bench_agent.py [--quick]

Every cell is sampled in turn, round after round, in one process (``harness.samples``):
a machine whose speed drifts slows every cell alike. "Overhead" is the median over rounds
of the cell's sample minus the plain loop's sample of the same round. Samples are the
thread's CPU time (``time.thread_time_ns``): on a shared machine the wall clock also
counts the time other processes hold the core, which swamps a difference of microseconds.
"""

from __future__ import annotations

import asyncio
import itertools
import statistics
import sys
import time
from collections.abc import Awaitable, Callable
from typing import Any

from harness import Cell, block, machine, samples, us

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
QUESTION = "What is 2 + 3?"
TARGET = 50.0  # us: the loop's own cost per iteration, reply parsing included (issue 13)


def add(a: int, b: int) -> int:
    return a + b


def async_cell(loop: asyncio.AbstractEventLoop, make: Callable[[], Awaitable[Any]], n: int) -> Cell:
    """A cell that awaits ``n`` calls of ``make`` on ``loop``; returns us per call."""

    async def many() -> None:
        for _ in range(n):
            await make()

    def sample() -> float:
        start = time.thread_time_ns()
        loop.run_until_complete(many())
        return (time.thread_time_ns() - start) / n / 1000

    return sample


def sync_cell(fn: Callable[[], Any], n: int) -> Cell:
    def sample() -> float:
        start = time.thread_time_ns()
        for _ in range(n):
            fn()
        return (time.thread_time_ns() - start) / n / 1000

    return sample


def fresh(
    cls: type[Agent], reply: Callable[[str], str], *, recorded: bool = False, **kw: Any
) -> Callable[[], Awaitable[Any]]:
    """One run of a fresh agent every 100 runs (the state list stays as short as in one
    task); ``recorded``: each run has a run id of its own, so each is recorded as it goes."""
    box: list[Agent] = []
    runs = itertools.count()

    def run() -> Awaitable[Any]:
        number = next(runs)
        if number % 100 == 0:  # each run adds one state item
            box[:] = [cls(ScriptedReasoner(reply), **kw)]
        return box[0].arun(QUESTION, run_id=f"run-{number}" if recorded else None)

    return run


def plain(reply: Callable[[str], str]) -> Callable[[], Awaitable[Any]]:
    """The floor: the same reasoner asked the same question, then the actor called with the
    arguments the reply holds (known here, so nothing is parsed)."""
    reasoner = ScriptedReasoner(reply)

    async def run() -> int:
        completion = await reasoner.areason(QUESTION)
        assert completion.text
        return add(a=2, b=3)

    return run


def main(quick: bool) -> None:
    rounds, n = (7, 100) if quick else (21, 200)
    loop = asyncio.new_event_loop()
    one = lambda p: ONE_ACTION  # noqa: E731
    branches = lambda p: TWO_BRANCHES if p.startswith("What") else DONE  # noqa: E731
    # case -> (what it runs per call, how many calls it makes of the reasoner and the actor)
    cases: dict[str, tuple[str, Callable[[], Awaitable[Any]], int]] = {
        "plain loop": (
            "await reasoner.areason(q); add(a=2, b=3): no parse, no store",
            plain(one),
            n,
        ),
        "Agent, 1 iteration, 1 action": (
            "prompt, reasoner, parse the XML reply, run the action, write current, the "
            "action record and the state item",
            fresh(Agent, one, actor={"add": add}),
            n,
        ),
        "PromptBasedActionAgent, 1 action": (
            "the same, the prompt from the default template (format instructions, states)",
            fresh(PromptBasedActionAgent, one, actor={"add": add}),
            n,
        ),
        "Agent, 1 action, recorded (run_id)": (
            "the same, each run recorded: run record, reply, action and iteration records",
            fresh(Agent, one, recorded=True, actor={"add": add}),
            n,
        ),
        "Agent, parallel group of 2": (
            "1 iteration of 2 branches on forks, each branch's own loop (1 iteration), merge",
            fresh(Agent, branches, actor={"add": add}),
            n // 4,
        ),
        "Agent, parallel group of 2, recorded": (
            "the same, recorded",
            fresh(Agent, branches, recorded=True, actor={"add": add}),
            n // 4,
        ),
        "planning agent, 3 problems A, B -> C": (
            "1 iteration: parse the JSON plan, solve 3 problems as a WorkGraph",
            fresh(PromptBasedActionPlanningAgent, lambda p: PLAN, solver=lambda request: request),
            n // 4,
        ),
    }
    agent = PromptBasedActionAgent(ScriptedReasoner([]), actor={"add": add})
    inputs = AgentInputs(
        iteration=0,
        user_input=QUESTION,
        user_profile=None,
        context=None,
        action_results=None,
        attachments=(),
        states=AgentStates(),
    )
    response, _ = parse_structured_response(ONE_ACTION)
    step = IterationContext(agent=agent, iteration=0, action_results=None, attachments=())
    parts: dict[str, tuple[str, Callable[[], Any]]] = {
        "parse the XML reply": (
            f"Agent.parse_response of the {len(ONE_ACTION)}-character reply above",
            lambda: agent.parse_response(ONE_ACTION),
        ),
        "prompt, default template": (
            "PromptBasedActionAgent.construct_reasoner_input, no states",
            lambda: agent.construct_reasoner_input(inputs),
        ),
        "build the action WorkGraph": (
            "build_action_graph of 1 group of 1 action (a run of 1 action skips it)",
            lambda: build_action_graph(response.next_actions, step),
        ),
    }
    cells: dict[str, Cell] = {
        name: async_cell(loop, make, k) for name, (_, make, k) in cases.items()
    }
    cells |= {name: sync_cell(fn, n) for name, (_, fn) in parts.items()}
    taken = samples(cells, rounds)
    loop.close()

    floor = taken["plain loop"]
    lines = [
        f"CPU time per call, median of {rounds} rounds; each cell sampled once a round in "
        f"turn ({n} calls a sample; a parallel group or a plan {n // 4}). Overhead: median "
        "over rounds of the cell minus the plain loop of the same round: what weft adds.",
        "",
        "| case | what one call does | median | overhead over the plain loop |",
        "|---|---|---:|---:|",
    ]
    for name, (what, _, _) in cases.items():
        median = statistics.median(taken[name])
        over = (
            "(the floor)"
            if name == "plain loop"
            else us(statistics.median(a - b for a, b in zip(taken[name], floor, strict=True)))
        )
        lines.append(f"| {name} | {what} | {us(median)} | {over} |")
    for name, (what, _) in parts.items():
        lines.append(f"| of which: {name} | {what} | {us(statistics.median(taken[name]))} | |")
    own = statistics.median(
        a - b for a, b in zip(taken["Agent, 1 iteration, 1 action"], floor, strict=True)
    )
    lines += [
        "",
        f"The loop's own cost per iteration (Agent, 1 iteration, 1 action, over the plain "
        f"loop; the XML reply parsed in it): {us(own)}, target under {us(TARGET)}: "
        f"{'met' if own < TARGET else 'NOT met'}.",
    ]
    print(f"Measured on {machine()}.\n")
    block("agent", "\n".join(lines))


if __name__ == "__main__":
    main("--quick" in sys.argv)
