"""The executors' jobs as a WorkGraph: outcomes passed down, blocking, errors."""

from __future__ import annotations

import pytest

from weft._sync import run_sync
from weft.errors import ExecutorError
from weft.plan.jobs import find_cycle, run_jobs


async def ok_unless_named_bad(job: str) -> str | None:
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


def test_done_jobs_are_skipped_and_count_as_completed() -> None:
    ran: list[str] = []

    async def run(job: str) -> None:
        ran.append(job)

    report = run_sync(run_jobs(["a", "b"], {"b": ["a"]}, run, what="the jobs", done={"a"}))
    assert ran == ["b"] and report.skipped == ("a",) and report.completed == ("b",)


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
    assert find_cycle({"a": ["b"], "b": ["a"], "c": []}) is not None
    assert find_cycle({"a": [], "b": ["a", "a"]}) is None
