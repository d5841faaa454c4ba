"""The web inspector's test harness (its fixtures are in conftest.py): a SQLite file
written by real weft runs (in processes of their own), the real server (uvicorn in a
thread, on a free port) and a real headless browser (Debian's chromium, driven by Selenium
through /usr/bin/chromedriver).

Everything waits with a deadline: a server that does not start, a page that does not load
or a run that does not finish fails the test, never hangs it. Screenshots go to
``test-artifacts/inspect_web/`` (gitignored).
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from weft.inspect import Reader
from weft.inspect.web import Binding, server
from weft.inspect.web.server import free_port
from weft.persist import SQLiteBackend

HERE = Path(__file__).resolve().parent
RUNS = HERE / "web_runs.py"
ARTIFACTS = HERE.parents[1] / "test-artifacts" / "inspect_web"
CHROMIUM = os.environ.get("WEFT_CHROMIUM", "/usr/bin/chromium")
CHROMEDRIVER = os.environ.get("WEFT_CHROMEDRIVER", "/usr/bin/chromedriver")
STARTUP = 15.0
"""Seconds a server or a browser may take to start on a loaded machine."""


def run_scene(*args: str, timeout: float = 60.0) -> str:
    """Run a scene of ``web_runs.py`` to its end in a process of its own; its output."""
    done = subprocess.run(
        [sys.executable, str(RUNS), *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    assert done.returncode == 0, f"web_runs.py {args} failed:\n{done.stdout}\n{done.stderr}"
    return done.stdout


def start_scene(*args: str) -> subprocess.Popen[str]:
    """Start a scene of ``web_runs.py`` in a process of its own (read its stdout line by line)."""
    return subprocess.Popen(
        [sys.executable, "-u", str(RUNS), *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def read_line(process: subprocess.Popen[str], timeout: float) -> str:
    """The next line the process prints, within ``timeout`` seconds."""
    assert process.stdout is not None
    found: list[str] = []
    reader = threading.Thread(target=lambda: found.append(process.stdout.readline()), daemon=True)  # type: ignore[union-attr]
    reader.start()
    reader.join(timeout)
    if not found or not found[0]:
        process.kill()
        _, err = process.communicate(timeout=10)
        raise AssertionError(f"no line from {process.args!r} within {timeout}s; stderr:\n{err}")
    return found[0].strip()


def stop(process: subprocess.Popen[str]) -> None:
    if process.poll() is None:
        process.kill()
    process.communicate(timeout=10)


@contextmanager
def serving(
    db: Path, *, allow_writes: bool = False, host: str = "127.0.0.1", token: str | None = None
) -> Iterator[Binding]:
    """The real server (uvicorn) over ``db`` in a thread, until the block ends."""
    where = Binding(host=host, port=free_port(host), token=token)
    reader = Reader(SQLiteBackend(db), owns_backend=True)
    instance = server(reader, where, allow_writes=allow_writes)
    thread = threading.Thread(target=instance.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + STARTUP
    while not instance.started:
        assert thread.is_alive(), "the inspector's server stopped while starting"
        assert time.monotonic() < deadline, f"the inspector did not start in {STARTUP}s"
        time.sleep(0.02)
    try:
        yield where
    finally:
        instance.should_exit = True
        thread.join(10)
        reader.close()
        assert not thread.is_alive(), "the inspector's server did not stop within 10s"


def wait_for(
    what: str, check: Callable[[], Any], timeout: float = 15.0, every: float = 0.05
) -> Any:
    """``check()``'s first truthy value within ``timeout`` seconds, else a failure saying
    what was awaited (an exception of ``check`` counts as not yet)."""
    deadline = time.monotonic() + timeout
    last: BaseException | None = None
    while True:
        try:
            found = check()
        except Exception as exc:
            found, last = None, exc
        if found:
            return found
        if time.monotonic() >= deadline:
            raise AssertionError(f"{what}: not within {timeout}s (last error: {last!r})")
        time.sleep(every)


PG = "postgresql://postgres@127.0.0.1:5432/weft_test"


@contextmanager
def postgres_schema() -> Iterator[str]:
    """A schema of its own on the real PostgreSQL server (dropped afterwards); a server that
    cannot be reached fails the test with how to start it."""
    import uuid

    import psycopg

    schema = f"web_{uuid.uuid4().hex[:12]}"
    try:
        psycopg.connect(PG, connect_timeout=5).close()
    except psycopg.OperationalError as exc:
        raise AssertionError(
            "the inspector's PostgreSQL test needs a server on 127.0.0.1:5432 with a database "
            "weft_test (trust auth, user postgres); .ci/run starts one. Locally: "
            "`pg_ctlcluster 15 main start && createdb -h 127.0.0.1 -U postgres weft_test`. "
            f"The error: {exc}"
        ) from None
    try:
        yield schema
    finally:
        with psycopg.connect(PG, autocommit=True, connect_timeout=5) as conn:
            conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
