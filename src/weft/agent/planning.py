"""The planning agent: ``<Problems>`` and a ``<ProblemGraph>`` become a WorkGraph (pattern 4).

A ProblemGraph has one path per line, steps joined by ``->``; a step may list alternatives
joined by ``,``, and a line stands for the Cartesian product of its steps' alternatives
(``A, B -> C`` is ``A -> C`` and ``B -> C``). Paths share nodes by ProblemID. A problem the
graph does not mention runs on its own; with no graph, the problems run one after another
(the seed's linear default). An unknown ProblemID, an empty step and a cycle are each a
``ResponseProblem`` (a corrective retry) before anything runs.
"""

from __future__ import annotations

import functools
import itertools
import re
from collections.abc import Sequence
from dataclasses import replace
from typing import Any, Final

from weft._sync import run_sync
from weft.agent.actors import ActorTable, failed, finish, run_actor
from weft.agent.agent import Agent
from weft.agent.context import IterationContext, NextActions
from weft.agent.parsing import ResponseProblem, parse_structured_response
from weft.agent.prompt_agents import ACTION_FORMAT, PromptBasedActionAgent
from weft.agent.resume import fork_of, once_extras
from weft.agent.types import AgentAction, AgentResponse, from_plain_record, to_plain_record
from weft.errors import AgentBuildError
from weft.graph import WorkGraph, WorkGraphNode
from weft.graph.build import find_cycle
from weft.store import StepRecord, Store

_ARROW: Final = re.compile(r"->|→")
PREVIOUS: Final = "previous_agent_results"

PLANNING_FORMAT: Final = (
    ACTION_FORMAT
    + """
To split the task into sub-problems instead, reply with <Problems> and a <ProblemGraph>:
<StructuredResponse>
  <Problems>
    <Problem>
      <Request>what to solve</Request>
      <ProblemID>AN_ID</ProblemID>
    </Problem>
  </Problems>
  <ProblemGraph>
    FIRST_ID -> NEXT_ID
    OTHER_ID
  </ProblemGraph>
</StructuredResponse>
One path per line; A -> B means B needs A's result; "A, B -> C" means both A and B lead
to C. Problems that do not depend on each other run in parallel."""
)


def parse_problem_graph(
    text: str | None, problem_ids: Sequence[str]
) -> tuple[tuple[str, ...], ...]:
    """The paths of a ProblemGraph, checked against ``problem_ids`` (``ResponseProblem``)."""
    if not problem_ids:
        raise ResponseProblem(
            "the reply has a <ProblemGraph> but no <Problems>; declare each problem with "
            "<Problem><Request>...</Request><ProblemID>...</ProblemID></Problem>"
        )
    if text is None or not text.strip():
        return (tuple(problem_ids),)
    known = set(problem_ids)
    paths: list[tuple[str, ...]] = []
    for line in text.splitlines():
        line = line.strip()
        if not line:
            continue
        steps: list[list[str]] = []
        for step in _ARROW.split(line):
            names = [name.strip() for name in step.split(",")]
            if not all(names):
                raise ResponseProblem(
                    f"the ProblemGraph line {line!r} has an empty step; write "
                    "ID -> ID, with alternatives as ID, ID"
                )
            for name in names:
                if name not in known:
                    raise ResponseProblem(
                        f"ProblemGraph names {name}, which is not one of the ProblemIDs: "
                        f"{', '.join(problem_ids)}"
                    )
            steps.append(names)
        paths.extend(itertools.product(*steps))
    mentioned = {name for path in paths for name in path}
    paths.extend((pid,) for pid in problem_ids if pid not in mentioned)
    _check_acyclic(paths)
    return tuple(paths)


def _check_acyclic(paths: list[tuple[str, ...]]) -> None:
    ids = {name: i for i, name in enumerate(dict.fromkeys(n for path in paths for n in path))}
    succs: list[list[int]] = [[] for _ in ids]
    for path in paths:
        for a, b in itertools.pairwise(path):
            succs[ids[a]].append(ids[b])
    ring = find_cycle(succs)
    if ring is not None:
        names = list(ids)
        raise ResponseProblem(
            f"the ProblemGraph has a cycle: {' -> '.join(names[i] for i in [*ring, ring[0]])}; "
            "every problem is solved once, after the problems it needs, so remove one of "
            "these dependencies"
        )


class ProblemPlan:
    """The planning agent's ``next_actions``: the WorkGraph of a ProblemGraph, runnable.

    ``arun()`` returns the sink's executed problem, or the list of the sinks'. Each problem
    is solved on its own fork of the planner's store; the forks merge into it in the order
    the problems were given when the plan ends.
    """

    def __init__(
        self,
        planner: PromptBasedActionPlanningAgent,
        problems: Sequence[AgentAction],
        paths: Sequence[Sequence[str]],
        step: IterationContext,
    ) -> None:
        self.planner = planner
        self.problems = tuple(problems)
        self.paths = tuple(tuple(path) for path in paths)
        self._step = step
        self._forks: dict[str, Store] = {}
        self._solved: dict[str, AgentAction] = {}
        self._records: dict[str, StepRecord] = {}
        self._index = {p.id: i for i, p in enumerate(self.problems) if p.id is not None}
        nodes = {
            p.id: WorkGraphNode(functools.partial(self._solve, p), PREVIOUS, id=p.id)
            for p in self.problems
        }
        self.graph = WorkGraph([[nodes[pid] for pid in path] for path in self.paths])

    def __bool__(self) -> bool:
        return bool(self.problems)

    def __call__(self) -> Any:
        """The blocking form of :meth:`arun`."""
        return run_sync(self.arun())

    async def arun(self) -> Any:
        log = self._step.log
        done = None if log is None else log.get("plan")
        if done is not None:  # resumed after the plan was merged: nothing runs again
            return from_plain_record(done.result)
        output = await self.graph.arun()
        planner, iteration = self.planner, self._step.iteration
        order = [p.id for p in self.problems if p.id in self._forks]
        forks = [self._forks[pid] for pid in order]
        if log is None:
            planner.store.merge(forks)
            for index, pid in enumerate(order):
                planner.record_action(planner.name, iteration, 0, index, self._solved[pid])
            return output
        with planner.store.transaction() as tx:
            tx.merge(forks)
            for index, pid in enumerate(order):
                planner.record_action(planner.name, iteration, 0, index, self._solved[pid], into=tx)
                final = replace(self._records[pid], changes=None, committed=True)
                log.record(f"problem/{self._index[pid]}", final, into=tx)
            log.record("plan", StepRecord(kind="plan", result=to_plain_record(output)), into=tx)
        return output

    async def _solve(self, problem: AgentAction, previous_agent_results: Any = None) -> AgentAction:
        planner, step = self.planner, self._step
        assert problem.id is not None
        name = f"{planner.name}/{step.iteration}.{problem.id}"
        log, calls = step.log, step.calls
        unit = f"problem/{self._index[problem.id]}"
        done = None if log is None else log.get(unit)
        fork = self._forks[problem.id] = fork_of(planner.store, name, done)
        if done is not None:  # solved before the run was interrupted
            self._records[problem.id] = done
            solved = self._solved[problem.id] = AgentAction.from_dict(done.result)
            return solved
        base = fork.last_seq
        solver = planner.solver
        if isinstance(solver, Agent):
            copy = solver.copy(name=name, store=fork, clear_states=True)
            try:
                result = await copy.arun_unit(
                    step,
                    unit,
                    problem.args["request"],
                    previous_agent_results=previous_agent_results,
                )
            except Exception as exc:
                solved = failed(problem, exc)
            else:
                solved = finish(problem, result.output)
        else:
            offered = {
                "target": problem.id,
                "action": problem,
                "attachments": (
                    *step.attachments,
                    *planner.make_attachments(previous_agent_results),
                ),
                PREVIOUS: previous_agent_results,
                "store": fork,
            }
            assert planner.solver_table is not None
            bound = planner.solver_table.get("Problem")
            if bound is not None:
                once_extras(offered, bound.extras, calls, unit)
            solved = await run_actor(planner.solver_table, problem, offered)
        self._solved[problem.id] = solved
        if log is not None:
            self._records[problem.id] = log.record(
                unit,
                StepRecord(
                    kind="problem",
                    label=problem.id,
                    result=solved.to_dict(),
                    changes=tuple(fork.events(base)),
                    committed=False,
                ),
            )
        return solved


class PromptBasedActionPlanningAgent(PromptBasedActionAgent):
    """An action agent that can also split a task into sub-problems with dependencies.

    Each problem of a ``ProblemPlan`` is solved by ``solver`` once those it depends on are
    done: an ``Agent`` (copied per problem, fed the request as user input and its
    predecessors' results as attachments; its result is the copy's ``AgentResult.output``)
    or ``solver(request, **extras)`` (the extras of ``weft.agent.actors``).

    >>> from weft.llm import ScriptedReasoner
    >>> reasoner = ScriptedReasoner([
    ...     '{"problems": [{"request": "Pick a drink", "problem_id": "PICK"},'
    ...     ' {"request": "Order it", "problem_id": "ORDER"}], "problem_graph": "PICK -> ORDER"}',
    ...     '{"instant_response": "Ordered.", "task_status": "Completed"}',
    ... ])
    >>> def solver(request, previous_agent_results=None):
    ...     after = previous_agent_results
    ...     return f"{request} (after {after.id}: {after.result})" if after else "a latte"
    >>> planner = PromptBasedActionPlanningAgent(reasoner, solver=solver)
    >>> planner.run("Get me a coffee").states[0].action_results.result
    'Order it (after PICK: a latte)'
    """

    default_template: str = PromptBasedActionAgent.default_template.replace(
        ACTION_FORMAT, PLANNING_FORMAT
    )

    def __init__(self, reasoner: Any, *, solver: Any, **options: Any) -> None:
        super().__init__(reasoner, **options)
        if not callable(solver):
            raise AgentBuildError(
                f"solver={solver!r}: a planning agent needs solver=, an Agent (copied per "
                "problem) or a function solver(request, **extras) that solves one problem"
            )
        self.solver = solver
        self.solver_table = None if isinstance(solver, Agent) else ActorTable({"Problem": solver})

    def parse_response(self, raw: str) -> AgentResponse:
        """The structured reply; problems and their graph checked (see this module)."""
        response, graph_text = parse_structured_response(raw, action_types=self.action_types)
        if not response.problems and graph_text is None:
            return response
        if response.next_actions:
            raise ResponseProblem(
                "the reply has both <NextActions> and <Problems>; a reply either runs actions "
                "or splits the task into problems, so keep one of them"
            )
        ids = [p.id for p in response.problems if p.id is not None]
        paths = parse_problem_graph(graph_text, ids)
        return replace(response, problem_graph=paths)

    def create_next_actions(
        self, response: AgentResponse, context: IterationContext
    ) -> NextActions:
        """A ``ProblemPlan`` for a reply with problems, else the action groups."""
        if response.problems and response.problem_graph is not None:
            return ProblemPlan(self, response.problems, response.problem_graph, context)
        return response.next_actions
