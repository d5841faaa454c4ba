"""A plan of tool calls on a DurableRun, SIGKILLed at random points and resumed in a fresh
process: it ends exactly as an uninterrupted run, and no call whose record was stored
runs again (a call that ran but whose record was not stored runs again: at least once)."""

from __future__ import annotations

import random
import uuid
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from crash_helpers import (
    Forker,
    drop_schema,
    effects,
    forker,
    kill_after,
    kill_point,
    open_backend,
    spec_for,
)
from weft.persist import load_store
from weft.store import StepRecord

WORKER = Path(__file__).parent / "plan_crash_worker.py"
ATTEMPTS = 30


@pytest.fixture
def pg_schema() -> Iterator[str]:
    schema = f"t_{uuid.uuid4().hex[:12]}"
    yield schema
    drop_schema(schema)


def recorded_calls(spec: str, thread: str) -> set[str]:
    """The ids of the calls whose record the thread holds (``step:plan/<id>#<n>``)."""
    backend = open_backend(spec)
    try:
        store = load_store(backend, thread)
    finally:
        backend.close()
    return {
        entry.path.split("/", 1)[1].rsplit("#", 1)[0]
        for entry in store.entries(kind="step", key_prefix="step:plan/")
        if isinstance(entry.value, StepRecord)
    }


def check_nothing_recorded_ran_again(ran: list[tuple[int, str]], held: set[str]) -> None:
    again = sorted({call for _pid, call in ran if call in held})
    assert not again, f"calls whose record was stored ran again: {again}"


def crash_and_resume(workers: Forker, spec: str, attempt: int, calls: int) -> Any:
    """Kill a worker once or twice, each time at a random point (``kill_point``), then
    run it to the end in a fresh process; no process may run a call that was on record
    when it started. Returns what the last one ended with."""
    rng = random.Random(20240701 + attempt)
    thread, counter = f"crash-{attempt}", workers.folder / f"crash-{attempt}.count"
    held: set[str] = set()
    for _kill in range(rng.randint(1, 2)):
        seen = len(effects(counter))
        worker = workers.start(spec, thread, str(counter))
        kill_after(worker, counter, *kill_point(rng, seen, calls - len(held), 0.004))
        check_nothing_recorded_ran_again(effects(counter)[seen:], held)
        held = recorded_calls(spec, thread)
    seen = len(effects(counter))
    state = workers.start(spec, thread, str(counter)).finish()
    check_nothing_recorded_ran_again(effects(counter)[seen:], held)
    ran = Counter(call for _pid, call in effects(counter))
    assert set(ran) == recorded_calls(spec, thread), f"attempt {attempt}"
    return state


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
def test_sigkill_at_random_points_then_resume_ends_as_an_uninterrupted_run(
    kind: str, tmp_path: Path, pg_schema: str
) -> None:
    """Thirty attempts per backend, three at a time on threads of their own, killed once
    or twice: before the first record, inside a call, between a call's effect and its
    record, between an out-of-order finisher's record and the frontier's commit, in the
    run's last commit and after it. Each resumed run must end with the state (global and
    instance fields), the call records and the results of an uninterrupted run."""
    spec = spec_for(kind, tmp_path, pg_schema)
    with forker(WORKER, tmp_path) as workers:
        reference = workers.start(spec, "reference", str(tmp_path / "reference.count")).finish()
        ran = Counter(call for _pid, call in effects(tmp_path / "reference.count"))
        assert len(ran) == 39 and set(ran.values()) == {1}
        assert reference["state:@b/log"][1]["by"] == "bonus"  # an instance's push, in order
        assert reference["state:parts"] == [f"7-{i}" for i in range(12)]  # in plan order
        with ThreadPoolExecutor(max_workers=3) as pool:
            ends = list(
                pool.map(lambda a: crash_and_resume(workers, spec, a, len(ran)), range(ATTEMPTS))
            )
    for attempt, state in enumerate(ends):
        assert state == reference, f"attempt {attempt}: the resumed run ended differently"
