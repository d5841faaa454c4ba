"""The executors' jobs as a WorkGraph: outcomes passed down, blocking, errors."""

from __future__ import annotations

import asyncio

import pytest

from weft._sync import run_sync
from weft.errors import ExecutorError
from weft.plan.jobs import run_jobs
from weft.store import Store


async def ok_unless_named_bad(job: str, store: Store | None = None) -> str | None:
    if job == "bad":
        return "it went wrong"
    if job == "bug":
        raise ZeroDivisionError("division by zero")
    return None


def test_a_failure_blocks_every_job_downstream_and_nothing_else() -> None:
    report = run_sync(
        run_jobs(
            ["bad", "x", "y", "free"],
            {"x": ["bad"], "y": ["x", "free"]},
            ok_unless_named_bad,
            what="the jobs",
        )
    )
    assert report.completed == ("free",)
    assert report.failed == {"bad": "it went wrong"}
    assert report.blocked == {
        "x": "it depends on 'bad', which failed (it went wrong)",
        "y": "it depends on 'x', which was blocked (it depends on 'bad', which failed "
        "(it went wrong))",
    }
    assert "bad failed: it went wrong" in report.summary()


def test_a_job_that_raises_fails_and_the_others_run() -> None:
    report = run_sync(run_jobs(["bug", "other"], {}, ok_unless_named_bad, what="the jobs"))
    assert report.failed == {"bug": "ZeroDivisionError: division by zero"}
    assert report.completed == ("other",)


def test_a_run_id_records_each_job_and_a_rerun_skips_the_completed_ones() -> None:
    ran: list[str] = []
    bad = {"b"}

    async def run(job: str, fork: Store | None) -> str | None:
        ran.append(job)
        return "down" if job in bad else None

    store = Store()
    jobs = (["a", "b", "c"], {"c": ["b"]})
    first = run_sync(run_jobs(*jobs, run, what="the jobs", store=store, run_id="r"))
    assert (first.completed, list(first.blocked)) == (("a",), ["c"])
    bad.clear()
    again = run_sync(run_jobs(*jobs, run, what="the jobs", store=store, run_id="r"))
    assert ran == ["a", "b", "b", "c"]  # the failed job ran again, then the one it blocked
    assert again.skipped == ("a",) and again.completed == ("b", "c") and again.ok
    with pytest.raises(ExecutorError, match=r"not for this job graph \(units \[x\]\)"):
        run_sync(run_jobs(["x"], {}, run, what="the jobs", store=store, run_id="r"))


def test_a_job_on_a_fork_commits_its_writes_with_its_record() -> None:
    async def run(job: str, fork: Store | None) -> None:
        assert fork is not None
        fork.write("shared", job, f"by {job}")

    store = Store()
    commits: list[list[str]] = []
    store.subscribe(lambda events: commits.append([e.path for e in events]), batches=True)
    run_sync(run_jobs(["a", "b"], {}, run, what="the jobs", store=store, run_id="r"))
    assert ["a", "r/a"] in commits and ["b", "r/b"] in commits  # each with its record
    assert store.value("shared", "b") == "by b"
    assert store.value("step", "r/a").result.status == "completed"


def test_two_jobs_replacing_one_field_the_second_fails_and_names_it() -> None:
    async def run(job: str, fork: Store | None) -> None:
        assert fork is not None
        fork.write("shared", "same", job, replace=True)
        await asyncio.sleep(0.01)  # both are running on their forks

    store = Store()
    report = run_sync(run_jobs(["a", "b"], {}, run, what="the jobs", store=store))
    assert len(report.completed) == 1 and len(report.failed) == 1
    assert "MergeConflictError: shared:same" in next(iter(report.failed.values()))


def test_a_cycle_is_an_executor_error_naming_the_jobs() -> None:
    with pytest.raises(ExecutorError, match=r"the steps of task 't' cannot run: .*a -> b -> a"):
        run_sync(
            run_jobs(
                ["a", "b"],
                {"a": ["b"], "b": ["a"]},
                ok_unless_named_bad,
                what="the steps of task 't'",
            )
        )
