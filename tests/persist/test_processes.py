"""Real processes: two writers on one thread, and SIGKILL at random points then resume."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from persist_helpers import postgres

from weft.persist import Backend, SQLiteBackend, load_store

HERE = Path(__file__).parent
ENV = {**os.environ, "PYTHONPATH": os.pathsep.join([str(HERE), *sys.path])}


def spec_for(kind: str, tmp_path: Path, pg_schema: str) -> str:
    return f"sqlite:{tmp_path / 'weft.db'}" if kind == "sqlite" else f"postgres:{pg_schema}"


def reader(spec: str) -> Backend:
    kind, _, where = spec.partition(":")
    return SQLiteBackend(where) if kind == "sqlite" else postgres(where)


def worker(script: str, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, str(HERE / script), *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=ENV,
    )


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
@pytest.mark.parametrize("mode", ["live", "tx"])
def test_two_processes_appending_to_one_thread_lose_nothing(
    kind: str, mode: str, tmp_path: Path, pg_schema: str
) -> None:
    spec = spec_for(kind, tmp_path, pg_schema)
    reader(spec).close()  # create the schema before the race
    sync = tmp_path / "sync"
    sync.mkdir()
    procs = [worker("append_worker.py", spec, "t", name, "10", mode, str(sync)) for name in "ab"]
    deadline = time.monotonic() + 60
    while not all((sync / f"ready-{n}").exists() for n in "ab"):
        assert time.monotonic() < deadline, [p.communicate() for p in procs]
        time.sleep(0.005)
    (sync / "go").touch()
    outputs = [p.communicate(timeout=60) for p in procs]
    assert all(p.returncode == 0 for p in procs), outputs
    conflicts = [int(out.split()[1]) for out, _err in outputs]
    assert sum(conflicts) >= 1  # both started from step 0: the second first append lost
    backend = reader(spec)
    try:
        log = load_store(backend, "t").value("state", "log")
    finally:
        backend.close()
    assert sorted(log) == sorted(f"{n}-{i}" for n in "ab" for i in range(10))
    for name in "ab":
        mine = [item for item in log if item.startswith(name)]
        assert mine == [f"{name}-{i}" for i in range(10)]


def run_worker(spec: str, thread: str, counter: Path) -> dict[str, object]:
    proc = worker("crash_worker.py", spec, thread, str(counter))
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    done = [line for line in out.splitlines() if line.startswith("done ")]
    assert done, out + err
    state: dict[str, object] = json.loads(done[0][5:])
    return state


def recorded_nodes(spec: str, thread: str) -> set[str]:
    backend = reader(spec)
    try:
        store = load_store(backend, thread)
    finally:
        backend.close()
    return {e.path.split("/", 1)[1] for e in store.entries(kind="step", key_prefix="step:job/")}


def lines(counter: Path) -> list[str]:
    return counter.read_text().splitlines() if counter.exists() else []


def crash_and_resume(spec: str, attempt: int, folder: Path) -> dict[str, object]:
    """Kill a worker after a random number of nodes have started (1 to 50) plus a random
    fraction of a node's time, resume it in a fresh process, and check no recorded node
    ran again. Returns the resumed run's final store."""
    rng = random.Random(20240501 + attempt)
    thread, counter = f"crash-{attempt}", folder / f"crash-{attempt}.count"
    proc = worker("crash_worker.py", spec, thread, str(counter))
    assert proc.stdout is not None
    assert proc.stdout.readline().strip() == "ready"
    started = rng.randint(1, 50)
    while len(lines(counter)) < started and proc.poll() is None:
        time.sleep(0.0005)
    time.sleep(rng.uniform(0, 0.004))
    proc.send_signal(signal.SIGKILL)
    proc.communicate()
    before = recorded_nodes(spec, thread)
    ran_before = Counter(line.split()[1] for line in lines(counter))
    state = run_worker(spec, thread, counter)
    ran = Counter(line.split()[1] for line in lines(counter))
    again = sorted(n for n in before if ran[n.split("#")[0]] > ran_before[n.split("#")[0]])
    assert not again, f"attempt {attempt}: recorded nodes ran again: {again}"
    assert set(ran) == {n.split("#")[0] for n in recorded_nodes(spec, thread)}
    return state


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
def test_sigkill_at_random_points_then_resume_ends_as_an_uninterrupted_run(
    kind: str, tmp_path: Path, pg_schema: str
) -> None:
    """30 kills per backend, landing before, inside and after node records and in the
    final state commit; each run is resumed in a fresh process and must end exactly as
    an uninterrupted run did. Three attempts run at a time, on threads of their own."""
    spec = spec_for(kind, tmp_path, pg_schema)
    reference = run_worker(spec, "reference", tmp_path / "reference.count")
    with ThreadPoolExecutor(max_workers=3) as pool:
        states = list(pool.map(lambda a: crash_and_resume(spec, a, tmp_path), range(30)))
    for attempt, state in enumerate(states):
        assert state == reference, f"attempt {attempt}: the resumed run ended differently"
