"""What every benchmark script shares: interleaved sampling, the machine line, table blocks.

Sampling: each column of a table is one *cell*, a callable that takes one sample and
returns its microseconds. ``interleaved`` warms every cell up, then samples the cells in
turn, round after round, and reports medians: a shared machine whose speed drifts during
the run slows every column alike, so the ratios stay meaningful. Each sample starts after
``gc.collect()``, with what the warm-up built frozen out of later collections
(``gc.freeze()``), so a full pass over one framework's heap never lands inside another's
sample.

SQLite: ``connect`` opens the peers' connections at the settings weft's backend runs at.
PostgreSQL: ``postgres_dsn`` gives the address of the database the benchmarks use (the test
suite's), creating it on a server where nothing else was set up.

Blocks: a script prints each table between ``<!-- bench:NAME -->`` and
``<!-- /bench:NAME -->`` lines; ``run_all.py`` collects them into ``bench/RESULTS.md``
and, with ``--docs``, into ``docs/performance.md``.
"""

from __future__ import annotations

import contextlib
import functools
import gc
import os
import platform
import sqlite3
import statistics
import time
from collections.abc import Callable, Mapping
from importlib import metadata
from pathlib import Path
from typing import Any, TypeVar

T = TypeVar("T")
Cell = Callable[[], float]  # takes one sample, returns its microseconds

PEERS = {  # distribution name -> how tables call it
    "langgraph": "LangGraph",
    "langgraph-checkpoint-sqlite": "langgraph-checkpoint-sqlite",
    "apache-burr": "Burr",
    "pydantic-graph": "pydantic-graph",
}


def timed(fn: Callable[[], Any], inner: int = 1) -> Cell:
    """A cell that times ``inner`` back-to-back calls of ``fn`` and returns us per call."""

    def sample() -> float:
        start = time.perf_counter_ns()
        for _ in range(inner):
            fn()
        return (time.perf_counter_ns() - start) / inner / 1000

    return sample


def prepared(prepare: Callable[[], Callable[[], Any]], inner: int = 1) -> Cell:
    """A cell whose setup is not timed: ``prepare()`` returns a call to time; ``inner``
    such calls are timed one after the other, each prepared just before it runs, and the
    cell returns us per call. Preparing them all first would change what is timed when
    preparing writes: a weft run's preparation opens a thread, and the runs of the
    threads opened before newer ones would all insert into the middle of the events
    table, not at its end (about 2 WAL pages a commit instead of 1.3)."""

    def sample() -> float:
        taken = 0
        for _ in range(inner):
            run = prepare()
            start = time.perf_counter_ns()
            run()
            taken += time.perf_counter_ns() - start
        return taken / inner / 1000

    return sample


def samples(cells: dict[str, Cell], rounds: int) -> dict[str, list[float]]:
    """``rounds`` samples of each cell in microseconds, taken in turn: one of each per
    round, the order rotated by one every round, so no cell always follows the same one."""
    for cell in cells.values():
        cell()  # warm-up
    gc.collect()
    gc.freeze()
    names = list(cells)
    taken: dict[str, list[float]] = {name: [] for name in names}
    try:
        for round_ in range(rounds):
            shift = round_ % len(names)
            for name in names[shift:] + names[:shift]:
                gc.collect()
                taken[name].append(cells[name]())
    finally:
        gc.unfreeze()
    return taken


def rotated(runs: Mapping[str, Callable[[int], T]], repetitions: int) -> dict[str, list[T]]:
    """Every run ``repetitions`` times, one at a time (never overlapping, so one system's
    I/O never lands inside another's timings), the order rotated every repetition; each
    run gets the repetition's number (for fresh file names) and returns its measurement."""
    names = list(runs)
    out: dict[str, list[T]] = {name: [] for name in names}
    for rep in range(repetitions):
        shift = rep % len(names)
        for name in names[shift:] + names[:shift]:
            gc.collect()
            out[name].append(runs[name](rep))
    return out


def interleaved(cells: dict[str, Cell], rounds: int) -> dict[str, float]:
    """Median microseconds of ``rounds`` samples of each cell, taken in turn."""
    return {name: statistics.median(values) for name, values in samples(cells, rounds).items()}


def paired(taken: dict[str, list[float]], name: str, base: str) -> float:
    """The median over rounds of ``name``'s sample divided by ``base``'s sample of the same
    round: a drift slower than one round (a shared disk's fsync time) cancels out."""
    return statistics.median(a / b for a, b in zip(taken[name], taken[base], strict=True))


def connect(path: Path, synchronous: str) -> sqlite3.Connection:
    """A SQLite connection in WAL mode at ``synchronous`` (NORMAL or FULL), both checked:
    what Burr's persister and LangGraph's saver get here, to match weft's backend."""
    conn = sqlite3.connect(path, check_same_thread=False)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute(f"PRAGMA synchronous={synchronous}")
    mode = conn.execute("PRAGMA journal_mode").fetchone()[0]
    level = conn.execute("PRAGMA synchronous").fetchone()[0]
    assert (mode, level) == ("wal", {"NORMAL": 1, "FULL": 2}[synchronous]), (mode, level)
    return conn


POSTGRES_ADMIN = "postgresql://postgres@127.0.0.1:5432/postgres"
POSTGRES_DATABASE = "weft_test"


@functools.cache
def postgres_dsn() -> str:
    """The address of the benchmarks' PostgreSQL database on 127.0.0.1, made if the server
    has none by that name yet (as the test suite does), so that ``run_all.py`` measures the
    PostgreSQL rows on a fresh machine. An unreachable server is left to the caller's
    connection, whose error says how to start one."""
    import psycopg

    with (
        contextlib.suppress(psycopg.OperationalError),
        psycopg.connect(POSTGRES_ADMIN, autocommit=True, connect_timeout=3) as conn,
    ):
        query = "SELECT 1 FROM pg_database WHERE datname = %s"
        if conn.execute(query, (POSTGRES_DATABASE,)).fetchone() is None:
            conn.execute(f'CREATE DATABASE "{POSTGRES_DATABASE}"')
    return f"postgresql://postgres@127.0.0.1:5432/{POSTGRES_DATABASE}"


def db_bytes(path: Path) -> int:
    """A database file and its WAL, if any (read after every connection closed)."""
    return sum(os.path.getsize(p) for p in (path, Path(f"{path}-wal")) if p.exists())


def version(distribution: str) -> str | None:
    try:
        return metadata.version(distribution)
    except metadata.PackageNotFoundError:
        return None


def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as info:
            for line in info:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def machine() -> str:
    """CPU, CPUs, Python, OS and the peers' versions, on one line."""
    peers = ", ".join(
        f"{label} {version(dist) or 'not installed'}" for dist, label in PEERS.items()
    )
    return (
        f"{cpu_model()}, {os.cpu_count()} CPUs, Python {platform.python_version()}, "
        f"{platform.system()} {platform.release()}; {peers}"
    )


def block(name: str, text: str) -> None:
    """Print ``text`` (a table and its notes) between the markers ``run_all.py`` reads."""
    print(f"<!-- bench:{name} -->")
    print(text.strip("\n"))
    print(f"<!-- /bench:{name} -->")
    print()


def us(value: float) -> str:
    """Microseconds for a table cell: 0.35 us, 78.9 us, 1,363 us, 60.1 ms."""
    if value >= 10_000:
        return f"{value / 1000:,.1f} ms"
    if value >= 1000:
        return f"{value:,.0f} us"
    if value >= 10:
        return f"{value:.1f} us"
    return f"{value:.2f} us"


def fraction(ours: float, theirs: float) -> str:
    """Ours as a fraction of theirs: ``1/868`` or ``1/3.4`` when ours is smaller, ``2.1x``
    when it is larger."""
    if ours <= 0:
        return "n/a"
    ratio = theirs / ours
    if ratio >= 10:
        return f"1/{ratio:,.0f}"
    if ratio >= 1:
        return f"1/{ratio:.1f}"
    return f"{1 / ratio:.2f}x"


def verdict(ok: bool) -> str:
    return "met" if ok else "**not met**"
