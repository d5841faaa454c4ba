"""A thread of twenty turns, its runtime SIGKILLed at random points and restarted in a
fresh process on the same database: the thread ends with the stored state and transcript
of a thread that was never stopped, every turn stored once and whole (a turn is one
transaction: its inputs, its stored fields, its transcript pair and the thread's record),
and no turn on record runs again (a turn that ran but was not stored runs again)."""

from __future__ import annotations

import random
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
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
from weft.runtime.codec import TURN_PATH
from weft.store import RunRecord, StepRecord, to_jsonable
from weft.store.records import KIND

WORKER = Path(__file__).parent / "turn_crash_worker.py"
ATTEMPTS = 30
TURNS = 20
EFFECTS_PER_TURN = 3  # load, triage, reply


@pytest.fixture
def pg_schema() -> Iterator[str]:
    schema = f"t_{uuid.uuid4().hex[:12]}"
    yield schema
    drop_schema(schema)


Turn = list[tuple[str, str, str, Any, str | None, str]]


def stored_turns(spec: str, thread: str) -> tuple[list[Turn], Turn]:
    """The thread's history cut into turns, each ending with the write of the thread's
    record, as ``(op, kind, path, value, source, reducer)`` (the thread's id, an input of
    every turn, as ``<thread>``; a record's times and steps, which a restart renumbers, left
    out once checked: a turn begins where the turn before it ended); and what follows the
    last record (nothing, if every turn was stored whole)."""
    backend = open_backend(spec)
    try:
        history = [logged.event for logged in backend.history(thread)]
    finally:
        backend.close()
    turns: list[Turn] = []
    current: Turn = []
    ended = 0  # the step of the last turn record
    for e in history:
        value = e.value
        if e.op == "write" and e.kind == KIND and e.path == TURN_PATH:
            assert value.began == ended, f"turn {value.result} began at {value.began}"
        if isinstance(value, RunRecord | StepRecord):
            value = replace(value, began=0, started_at=0.0, duration_ms=None)
        value = "<thread>" if value == thread else to_jsonable(value)
        current.append((e.op, e.kind, e.path, value, e.source, e.reducer))
        if e.op == "write" and e.kind == KIND and e.path == TURN_PATH:
            turns.append(current)
            current, ended = [], e.seq
    return turns, current


def check_no_stored_turn_ran_again(lines: list[tuple[int, str]], stored: int) -> None:
    again = sorted({line for _pid, line in lines if int(line.split()[1]) <= stored})
    assert not again, f"turns on record ran again: {again} (turns stored: {stored})"


def crash_and_resume(workers: Forker, spec: str, attempt: int) -> Any:
    """Kill the runtime once or twice at random points (``kill_point``), then run a new
    one to the end; returns the thread's state and its turns as stored."""
    rng = random.Random(20240703 + attempt)
    thread, counter = f"crash-{attempt}", workers.folder / f"crash-{attempt}.count"
    stored = 0
    for _kill in range(rng.randint(1, 2)):
        seen = len(effects(counter))
        worker = workers.start(spec, thread, str(counter))
        left = (TURNS - stored) * EFFECTS_PER_TURN
        kill_after(worker, counter, *kill_point(rng, seen, left, 0.003))
        check_no_stored_turn_ran_again(effects(counter)[seen:], stored)
        turns, rest = stored_turns(spec, thread)
        assert not rest, f"attempt {attempt}: half a turn is stored: {rest}"
        stored = len(turns)
    seen = len(effects(counter))
    state = workers.start(spec, thread, str(counter)).finish()
    check_no_stored_turn_ran_again(effects(counter)[seen:], stored)
    return state, stored_turns(spec, thread)


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
def test_sigkill_at_random_points_then_a_restarted_runtime_ends_the_thread_the_same(
    kind: str, tmp_path: Path, pg_schema: str
) -> None:
    """Thirty attempts per backend, three at a time, killed once or twice: in a loader, in
    a node, between the graph and the turn's append, in an append that also stores a
    snapshot, after the last turn. Each thread must end with the stored state and
    transcript of a thread that was never stopped, and its history must hold the same
    twenty turns, each whole and once, as that thread's."""
    spec = spec_for(kind, tmp_path, pg_schema)
    with forker(WORKER, tmp_path) as workers:
        reference = workers.start(spec, "reference", str(tmp_path / "reference.count")).finish()
        turns, rest = stored_turns(spec, "reference")
        assert len(turns) == TURNS and not rest
        assert len(reference["transcript"]) == 2 * TURNS
        assert len(effects(tmp_path / "reference.count")) == TURNS * EFFECTS_PER_TURN
        with ThreadPoolExecutor(max_workers=3) as pool:
            ends = list(pool.map(lambda a: crash_and_resume(workers, spec, a), range(ATTEMPTS)))
    for attempt, (state, (stored, rest)) in enumerate(ends):
        assert state == reference, f"attempt {attempt}: the thread ended differently"
        assert not rest, f"attempt {attempt}: half a turn is stored: {rest}"
        for number, (mine, theirs) in enumerate(zip(stored, turns, strict=True), start=1):
            assert mine == theirs, f"attempt {attempt}: turn {number} is stored differently"
