"""The executors' jobs (a task's steps, a plan's tasks, a process step's items) as one
``WorkGraph`` node each. A node never raises for a failed job (that would stop the
graph): it returns its ``JobOutcome``, passed down as ``upstream``, and a job after a
failed or blocked one is blocked without running, so every node settles.

With a ``store`` each job works on its own fork; with a ``run_id`` its ``StepRecord``
(``<run id>/<job>``) commits with its writes, and a run again with that id skips it
(README, "Runs"). A failed or blocked job is not recorded, so it runs again.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Literal
from urllib.parse import quote

from weft.errors import ExecutorError, GraphBuildError, NodeError, WeftError
from weft.graph import WorkGraph, WorkGraphNode
from weft.graph.build import check_acyclic
from weft.graph.pause import Asking, Interrupt, Paused, enclosing, paused, pausing
from weft.store import RunLog, StepRecord, Store, register_type
from weft.store.runlog import check_run_id

logger: Final = logging.getLogger("weft.plan")

Job = Callable[[str, Store | None], Awaitable[str | None]]
"""Runs one job (on its fork, if any); returns None when it completed, or why it failed."""

JobStatus = Literal["completed", "failed", "blocked"]
UPSTREAM: Final = "upstream"
"""The keyword under which a job's node receives its predecessors' outcomes."""


@dataclass(frozen=True, slots=True, kw_only=True)
class DagReport:
    """What became of each job: completed (in the order they completed), failed and
    blocked (each with why), skipped (on record from an earlier run with the run id)."""

    completed: tuple[str, ...] = ()
    failed: Mapping[str, str] = field(default_factory=dict)
    blocked: Mapping[str, str] = field(default_factory=dict)
    skipped: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        """Whether every job completed (now or in an earlier run)."""
        return not self.failed and not self.blocked

    def summary(self) -> str:
        """One line per job that did not complete, for error messages and logs."""
        lines = [f"{job} failed: {why}" for job, why in self.failed.items()]
        lines += [f"{job} was blocked: {why}" for job, why in self.blocked.items()]
        return "; ".join(lines) if lines else "every job completed"


@dataclass(frozen=True, slots=True)
class JobOutcome:
    """What one job's node returns, passes down and records: the job, how it ended, why."""

    job: str
    status: JobStatus
    why: str = ""


register_type(JobOutcome, "weft.JobOutcome")


def sub_run_id(run_id: str | None, job: str) -> str | None:
    """The run id of the graph nested in ``job`` of run ``run_id`` (None without one)."""
    return None if run_id is None else f"{run_id}.{quote(job, safe='')}"


async def run_jobs(
    jobs: Sequence[str],
    depends_on: Mapping[str, Sequence[str]],
    run: Job,
    *,
    what: str,
    store: Store | None = None,
    run_id: str | None = None,
    kind: str = "step",
    max_concurrency: int | None = None,
    answers: Mapping[str, Any] | None = None,
) -> DagReport | Paused:
    """Run ``jobs`` as a WorkGraph and report. ``what`` names them in errors ("the steps of
    task 'report'"); a graph that cannot be built or a bad ``run_id`` is an ``ExecutorError``.
    With a run id a job may ask a person (``weft.graph.interrupt``): the jobs that can go on
    do, and the run returns ``Paused``; ``answers=`` resumes it."""
    log = None
    if run_id is not None:
        if store is None:
            raise ExecutorError(f"{what}: run_id={run_id!r} needs the store to record into")
        log = RunLog(store, check_run_id(run_id, ExecutorError))
    outcomes: list[JobOutcome] = []

    def job_node(job: str) -> Callable[..., Awaitable[JobOutcome]]:
        """The value of one job's node: it never raises for a failure of the job."""
        deps = tuple(depends_on.get(job, ()))

        async def settle(*, upstream: Any = None) -> JobOutcome:
            if log is not None and log.get(job) is not None:
                return JobOutcome(job, "completed")  # on record: skipped
            if (why := _blocked_by(deps, upstream)) is not None:
                outcome = JobOutcome(job, "blocked", why)
            else:
                fork = None if store is None else store.fork(name=job)
                try:
                    with pausing(None if log is None else Asking(log, job, job)):
                        problem = await run(job, fork)
                    outcome = JobOutcome(job, "failed" if problem else "completed", problem or "")
                    if fork is not None and store is not None:
                        if log is not None and problem is None:
                            record = StepRecord(kind=kind, label=job, result=outcome)
                            log.record(job, record, into=fork)
                        store.merge([fork])  # its writes and its record: one commit
                except Exception as exc:  # a job's bug fails the job, never the other jobs
                    if not isinstance(exc, WeftError):
                        logger.exception("job %s raised", job)
                    outcome = JobOutcome(job, "failed", _described(exc))
                if log is not None and outcome.status == "failed":
                    log.forget_calls(job)  # it runs again from scratch
            outcomes.append(outcome)
            return outcome

        settle.__qualname__ = f"job {job!r}"
        return settle

    nodes = {job: WorkGraphNode(job_node(job), UPSTREAM, id=job) for job in jobs}
    try:
        for job, node in nodes.items():
            for dep in dict.fromkeys(depends_on.get(job, ())):
                if dep not in nodes:
                    raise ExecutorError(
                        f"{what}: {job!r} depends on {dep!r}, which is none of them "
                        f"({', '.join(nodes)}); fix its depends_on"
                    )
                nodes[dep].add_next(node)
        check_acyclic(nodes.values())
        if max_concurrency == 1:
            _chain(nodes, jobs, depends_on)
        graph = WorkGraph(
            start_nodes=[node for node in nodes.values() if not node.previous],
            max_concurrency=max_concurrency,
        )
    except GraphBuildError as exc:
        raise ExecutorError(f"{what} cannot run: {exc}") from exc
    if log is not None:
        log.begin("job graph", tuple(jobs), error=ExecutorError)
        if answers is not None:
            log.answer(answers, error=ExecutorError)
    elif answers is not None:
        raise ExecutorError(f"{what}: answers= resume a paused run; pass its run_id too")
    outer = enclosing()
    try:
        await graph.arun()
    except Interrupt as pause:  # a job asked a person (its fork is dropped: it runs again)
        return paused(log, pause, outer)
    ran = {o.job for o in outcomes}
    report = DagReport(
        completed=tuple(o.job for o in outcomes if o.status == "completed"),
        failed={o.job: o.why for o in outcomes if o.status == "failed"},
        blocked={o.job: o.why for o in outcomes if o.status == "blocked"},
        skipped=tuple(job for job in jobs if job not in ran),
    )
    if log is not None and report.ok:
        log.complete(None)
    return report


def _blocked_by(deps: Sequence[str], upstream: Any) -> str | None:
    """Why a job cannot run: the first of its dependencies that failed or was blocked
    (outcomes come in the order the edges were added: the order of ``deps``)."""
    received = upstream if isinstance(upstream, list) else [upstream]
    for o in received:
        if isinstance(o, JobOutcome) and o.job in deps and o.status != "completed":
            which = "failed" if o.status == "failed" else "was blocked"
            return f"it depends on {o.job!r}, which {which} ({o.why})"
    return None


def _described(exc: Exception) -> str:
    cause: BaseException = exc
    while isinstance(cause, NodeError) and cause.__cause__ is not None:
        cause = cause.__cause__  # a graph inside the job: say what its node raised
    return f"{type(cause).__name__}: {cause}"


def _chain(
    nodes: Mapping[str, WorkGraphNode], jobs: Sequence[str], depends_on: Mapping[str, Sequence[str]]
) -> None:
    """Edges that run the jobs one at a time, each time the first listed whose dependencies
    have run (the graph is acyclic by now, so there always is one). They pass outcomes,
    which a job reads only for its own dependencies, so they never block."""
    left, placed = list(jobs), set[str]()
    previous: WorkGraphNode | None = None
    while left:
        job = next(j for j in left if all(d in placed for d in depends_on.get(j, ())))
        left.remove(job)
        placed.add(job)
        node = nodes[job]
        if previous is not None and node not in previous.next:  # nodes compare by identity
            previous.add_next(node)
        previous = node
