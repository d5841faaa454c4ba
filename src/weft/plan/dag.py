"""The executors' scheduler: run a DAG of named jobs with a concurrency cap.

A job starts when everything it depends on completed; a failed job *blocks* every job
that depends on it, directly or not, and the report says which failed, why, and what
each blocked job waited for. Jobs listed in ``done`` (finished before: a resumed run)
count as completed without running. Jobs start in the order given, as far as the
dependencies allow, so a run with ``max_concurrency=1`` is deterministic. Cycles are
refused before this runs (``weft.plan.types``); the scheduler cannot deadlock or hang on
its own: when nothing runs and nothing can start, it returns.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Final

from weft.errors import WeftError

logger: Final = logging.getLogger("weft.plan")

Job = Callable[[str], Awaitable[str | None]]
"""Runs one job; returns None when it completed, or why it failed."""


@dataclass(frozen=True, slots=True, kw_only=True)
class DagReport:
    """What became of each job: completed (in the order they completed), failed (with
    why), blocked (with the failed job they waited for), skipped (done before)."""

    completed: tuple[str, ...] = ()
    failed: Mapping[str, str] = field(default_factory=dict)
    blocked: Mapping[str, str] = field(default_factory=dict)
    skipped: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        """Whether every job completed (or was done before)."""
        return not self.failed and not self.blocked

    def summary(self) -> str:
        """One line per job that did not complete, for error messages and logs."""
        lines = [f"{job} failed: {why}" for job, why in self.failed.items()]
        lines += [f"{job} was blocked: {why}" for job, why in self.blocked.items()]
        return "; ".join(lines) if lines else "every job completed"


async def run_dag(
    jobs: Sequence[str],
    depends_on: Mapping[str, Sequence[str]],
    run: Job,
    *,
    done: Collection[str] = (),
    max_concurrency: int | None = None,
) -> DagReport:
    """Run ``jobs`` (see the module docstring); returns the report."""
    if max_concurrency is not None and max_concurrency < 1:
        raise ValueError(f"max_concurrency={max_concurrency}; expected an int >= 1 or None")
    skipped = tuple(job for job in jobs if job in done)
    finished: set[str] = set(skipped)
    completed: list[str] = []
    failed: dict[str, str] = {}
    blocked: dict[str, str] = {}
    waiting = [job for job in jobs if job not in finished]
    running: dict[asyncio.Task[str | None], str] = {}
    try:
        while waiting or running:
            _block(waiting, depends_on, failed, blocked)
            for job in list(waiting):
                if max_concurrency is not None and len(running) >= max_concurrency:
                    break
                if all(d in finished for d in depends_on.get(job, ())):
                    waiting.remove(job)
                    running[asyncio.ensure_future(_guarded(run, job))] = job
            if not running:
                for job in waiting:  # nothing runs and nothing can start
                    blocked[job] = "its dependencies never completed"
                break
            finished_now, _ = await asyncio.wait(running, return_when=asyncio.FIRST_COMPLETED)
            for task in finished_now:
                job = running.pop(task)
                problem = task.result()
                if problem is None:
                    finished.add(job)
                    completed.append(job)
                else:
                    failed[job] = problem
    except BaseException:
        for task in running:
            task.cancel()
        if running:
            await asyncio.gather(*running, return_exceptions=True)
        raise
    return DagReport(completed=tuple(completed), failed=failed, blocked=blocked, skipped=skipped)


async def _guarded(run: Job, job: str) -> str | None:
    try:
        return await run(job)
    except asyncio.CancelledError:
        raise
    except WeftError as exc:
        return f"{type(exc).__name__}: {exc}"
    except Exception as exc:
        logger.exception("job %s raised", job)
        return f"{type(exc).__name__}: {exc}"


def _block(
    waiting: list[str],
    depends_on: Mapping[str, Sequence[str]],
    failed: Mapping[str, str],
    blocked: dict[str, str],
) -> None:
    """Move every waiting job that depends on a failed or blocked one to ``blocked``,
    until nothing changes (so chains are blocked whatever order they are listed in)."""
    changed = True
    while changed:
        changed = False
        for job in list(waiting):
            stopped = [d for d in depends_on.get(job, ()) if d in failed or d in blocked]
            if stopped:
                waiting.remove(job)
                blocked[job] = _why_blocked(stopped[0], failed, blocked)
                changed = True


def _why_blocked(dep: str, failed: Mapping[str, str], blocked: Mapping[str, str]) -> str:
    if dep in failed:
        return f"it depends on {dep!r}, which failed ({failed[dep]})"
    return f"it depends on {dep!r}, which was blocked ({blocked[dep]})"
