"""A team on a DurableRun, SIGKILLed at random points and continued by a new executor in a
fresh process: the board ends with the same tasks completed and the same results in
memory as a team that was never stopped.

What weft records for a team, and so what "nothing that finished runs twice" means:

- Every board move (a task added, claimed, completed) and every message is one commit
  of the store (one backend transaction), made before the tool call that asked for it
  returns to the model; the mirror of a completed task into memory (``task:<id>``) is
  the commit right after the move. A move on record is never made again: in the
  thread's history each task is added once, claimed once and completed once, however
  often the team was killed and continued (the tasks given again to each new executor
  are left as the board holds them), and each completion is mirrored into memory once
  (after a kill between the move and its mirror, by the next executor as it starts).
- Turns, model calls, conversations and caller-tool calls are not recorded: a new
  executor's members start new conversations from the board as recorded. So a member's
  model call that finished may be asked again (the turn it belonged to was not recorded:
  no turn ever is), and a caller tool may run again for a task its member claimed but
  had not completed when the process died (at least once). What a member sees of the
  board is the recorded board: no model call of a new process decides on a task whose
  claim (or completion) was on record when that process started, and no ``work`` runs
  for a task whose completion was on record.

The members here send no messages: a message is a recorded commit like a move, but one
sent in a turn that is then cut short may be sent again in the member's next turn, like any
of its tool calls, so the bus is not expected to end as an uninterrupted team's.
"""

from __future__ import annotations

import random
import uuid
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
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
from weft.plan import TaskBoard

WORKER = Path(__file__).parent / "team_crash_worker.py"
ATTEMPTS = 30
TASKS = ("r1", "r2", "r3", "r4", "r5", "r6", "s1", "s2", "final")


@pytest.fixture
def pg_schema() -> Iterator[str]:
    schema = f"t_{uuid.uuid4().hex[:12]}"
    yield schema
    drop_schema(schema)


@dataclass(frozen=True)
class OnRecord:
    """What a thread held when a worker died: the tasks claimed (or further) and
    completed, every board move in its history and every write of a task result."""

    claimed: frozenset[str]
    completed: frozenset[str]
    moves: Counter[tuple[str, str]]
    mirrors: Counter[str]

    @classmethod
    def read(cls, spec: str, thread: str) -> OnRecord:
        backend = open_backend(spec)
        try:
            board = TaskBoard(load_store(backend, thread))
            history = [logged.event for logged in backend.history(thread)]
        finally:
            backend.close()
        prefix = "team/board/"
        moves = Counter(
            (e.path[len(prefix) :], (e.meta or {})["move"])
            for e in history
            if e.kind == "state" and e.path.startswith(prefix)
        )
        return cls(
            claimed=frozenset(t.id for t in board.list() if t.status != "open"),
            completed=frozenset(t.id for t in board.list("completed")),
            moves=moves,
            mirrors=Counter(e.path for e in history if e.kind == "task" and e.op == "write"),
        )


NOTHING = OnRecord(frozenset(), frozenset(), Counter(), Counter())


def check_nothing_on_record_ran_again(lines: list[tuple[int, str]], held: OnRecord) -> None:
    """``lines``: the effects of one process, which started with ``held`` on record."""
    for _pid, line in lines:
        what, *rest = line.split()
        if what == "work":
            assert rest[0] not in held.completed, f"{line}: its task was completed on record"
        elif what == "ask" and rest[1] != "idle":
            decision, task = rest[1], rest[2]
            assert task not in held.completed, f"{line}: its task was completed on record"
            if decision == "claim":
                assert task not in held.claimed, f"{line}: the task was claimed on record"


def crash_and_resume(workers: Forker, spec: str, attempt: int, total: int) -> Any:
    """Kill a worker once or twice at random points (``kill_point``), then run a new one
    to the end; returns what it ended with and the thread as it then was on record."""
    rng = random.Random(20240702 + attempt)
    thread, counter = f"crash-{attempt}", workers.folder / f"crash-{attempt}.count"
    held = NOTHING
    for _kill in range(rng.randint(1, 2)):
        seen = len(effects(counter))
        worker = workers.start(spec, thread, str(counter))
        left = max(1, total * (len(TASKS) - len(held.completed)) // len(TASKS))  # about
        kill_after(worker, counter, *kill_point(rng, seen, left, 0.004))
        check_nothing_on_record_ran_again(effects(counter)[seen:], held)
        held = OnRecord.read(spec, thread)
    seen = len(effects(counter))
    state = workers.start(spec, thread, str(counter)).finish()
    check_nothing_on_record_ran_again(effects(counter)[seen:], held)
    return state, OnRecord.read(spec, thread)


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
def test_sigkill_at_random_points_then_a_new_executor_ends_as_an_uninterrupted_team(
    kind: str, tmp_path: Path, pg_schema: str
) -> None:
    """Thirty attempts per backend, three at a time, killed once or twice: while the
    executor adds the tasks, between a claim and the work, in the work, between the work
    and the completion, between a completion and its mirror into memory, after the last
    move. Each new executor must end with the board and the task results of a team that
    was never stopped, and the thread's history must hold each move and each mirror once."""
    spec = spec_for(kind, tmp_path, pg_schema)
    moves = Counter({(t, m): 1 for t in TASKS for m in ("task_added", "task_claimed")})
    moves.update({(t, "task_completed"): 1 for t in TASKS})
    mirrors = Counter(TASKS)
    with forker(WORKER, tmp_path) as workers:
        reference = workers.start(spec, "reference", str(tmp_path / "reference.count")).finish()
        total = len(effects(tmp_path / "reference.count"))
        on_record = OnRecord.read(spec, "reference")
        assert (on_record.moves, on_record.mirrors) == (moves, mirrors)
        assert reference["report"] == [list(TASKS), {}, [], "finished", {}]
        with ThreadPoolExecutor(max_workers=3) as pool:
            ends = list(
                pool.map(lambda a: crash_and_resume(workers, spec, a, total), range(ATTEMPTS))
            )
    for attempt, (state, held) in enumerate(ends):
        assert state == reference, f"attempt {attempt}: the team ended differently"
        assert held.moves == moves, f"attempt {attempt}: a move was made twice"
        assert held.mirrors == mirrors, f"attempt {attempt}: a result was mirrored twice"
