"""Workers killed with SIGKILL at random points, shared by the crash tests of every layer
(a module of its own: ``conftest`` is ambiguous across test folders).

A crash test runs a worker (a module with ``main(argv)``) in real processes. The worker
opens a backend named by a spec (``sqlite:<file>`` or ``postgres:<schema>``, database
``weft_test`` on 127.0.0.1), prints ``ready`` once its thread is loaded, appends one line
per side effect to a counter file (``O_APPEND``: lines of processes that overlap never
mix), and when its work is done prints ``done`` and what it ended with, as JSON. The test
kills it with SIGKILL after a random number of effects plus a random pause, and runs it
again in a fresh process.

Processes come from a ``Forker``: a server process that imports the worker's module (and
the modules weft would import on first use, psycopg and the worker's ``PRELOAD``) and runs
nothing, then forks one process per worker. A forked worker is a fresh process (no run,
no connection, no thread of the server exists to survive in it; it only skips the
imports), and it starts in milliseconds instead of the half second that importing weft,
jsonschema and psycopg takes, so a test can afford dozens of kills per backend.
"""

from __future__ import annotations

import contextlib
import importlib
import json
import os
import random
import signal
import subprocess
import sys
import threading
import time
import traceback
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import Any

from weft.errors import StorageError
from weft.persist import Backend, PostgresBackend, SQLiteBackend

PG = "postgresql://postgres@127.0.0.1:5432/weft_test"
TESTS = Path(__file__).parent


def open_backend(spec: str) -> Backend:
    """The backend a spec names (in a worker, or in the test that reads its thread)."""
    kind, _, where = spec.partition(":")
    if kind == "sqlite":
        return SQLiteBackend(where)
    try:
        return PostgresBackend(PG, schema=where, max_size=2, timeout=5)
    except StorageError as exc:
        raise AssertionError(
            "the crash tests on PostgreSQL need a server on 127.0.0.1:5432 with a database "
            "weft_test (trust auth, user postgres); .ci/run starts one. Locally: "
            "`pg_ctlcluster 15 main start && createdb -h 127.0.0.1 -U postgres weft_test`. "
            f"The error: {exc}"
        ) from exc


def drop_schema(schema: str) -> None:
    import psycopg

    with psycopg.connect(PG, autocommit=True) as conn:
        conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


def spec_for(kind: str, folder: Path, pg_schema: str) -> str:
    return f"sqlite:{folder / 'weft.db'}" if kind == "sqlite" else f"postgres:{pg_schema}"


def append_line(path: str | Path, line: str) -> None:
    """Append one line in one ``write`` (``O_APPEND``): atomic across processes."""
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, f"{line}\n".encode())
    finally:
        os.close(fd)


def effects(counter: Path) -> list[tuple[int, str]]:
    """The counter's lines as ``(pid, what)``."""
    if not counter.exists():
        return []
    out = []
    for line in counter.read_text().splitlines():
        pid, _, what = line.partition(" ")
        out.append((int(pid), what))
    return out


def die_now() -> None:
    """SIGKILL this process (a crash at exactly this point of the worker)."""
    os.kill(os.getpid(), signal.SIGKILL)


def dump(value: Any) -> str:
    """What a worker prints after ``done``."""
    return json.dumps(value, sort_keys=True)


# ------------------------------------------------------------------ processes


@dataclass
class Worker:
    """One forked worker: its token (unique in its forker), its pid, and the files its
    stdout and stderr go to."""

    forker: Forker
    token: str
    pid: int
    out: Path
    err: Path

    def output(self) -> str:
        return self.out.read_text() if self.out.exists() else ""

    def ended(self) -> int | None:
        """Its exit code (minus the signal's number if one killed it), once it ended."""
        return self.forker.exit_code(self.token)

    def wait_ready(self, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        while not self.output().startswith("ready\n"):
            code = self.ended()
            if code is not None:
                # it may have printed "ready" and finished between the two reads
                assert self.output().startswith("ready\n"), (
                    f"the worker ended ({code}) before it was ready: {self}"
                )
                return
            assert time.monotonic() < deadline, f"the worker is not ready: {self}"
            time.sleep(0.0005)

    def kill(self) -> bool:
        """SIGKILL it and wait until it is gone; whether it was still running."""
        if self.ended() is not None:
            return False  # reaped already: its pid may be another process's by now
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.pid, signal.SIGKILL)
        self.forker.wait(self.token)
        _wait_sessions_gone(app_name(self.forker.proc.pid, self.token))
        return True

    def finish(self, timeout: float = 120) -> Any:
        """Wait for it to end on its own; what it printed after ``done``."""
        code = self.forker.wait(self.token, timeout)
        assert code == 0, f"the worker failed ({code}): {self}"
        done = [line for line in self.output().splitlines() if line.startswith("done ")]
        assert done, str(self)
        return json.loads(done[0][5:])

    def __str__(self) -> str:
        err = self.err.read_text() if self.err.exists() else ""
        return f"{self.token} (pid {self.pid})\n--- stdout\n{self.output()}\n--- stderr\n{err}"


@dataclass
class Forker:
    """A server that has imported the worker ``script`` and forks a process per ``start``
    (from any thread); the workers' output files go to ``folder``."""

    script: Path
    folder: Path
    proc: subprocess.Popen[str] = field(init=False)
    listener: threading.Thread = field(init=False)
    pids: dict[str, int] = field(default_factory=dict)
    exits: dict[str, int] = field(default_factory=dict)
    changed: threading.Condition = field(default_factory=threading.Condition)
    count: int = 0

    def __post_init__(self) -> None:
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(TESTS), *sys.path])}
        self.proc = subprocess.Popen(
            [sys.executable, __file__, str(self.script)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env=env,
        )
        self.listener = threading.Thread(target=self._listen, daemon=True)
        self.listener.start()

    def _listen(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            what, token, number = line.split()
            with self.changed:
                (self.pids if what == "started" else self.exits)[token] = int(number)
                self.changed.notify_all()
        with self.changed:
            self.changed.notify_all()

    def start(self, *argv: str) -> Worker:
        """Fork a worker running the script's ``main(argv)``; returns once it is ready."""
        assert self.proc.stdin is not None
        with self.changed:
            self.count += 1
            token = f"w{self.count}"
            out, err = self.folder / f"{token}.out", self.folder / f"{token}.err"
            self.proc.stdin.write(json.dumps([token, str(out), str(err), *argv]) + "\n")
            self.proc.stdin.flush()
            started = self.changed.wait_for(
                lambda: token in self.pids or self.proc.poll() is not None, 60
            )
            assert started and token in self.pids, "the fork server died"
            worker = Worker(self, token, self.pids[token], out, err)
        worker.wait_ready()
        return worker

    def exit_code(self, token: str) -> int | None:
        with self.changed:
            return self.exits.get(token)

    def wait(self, token: str, timeout: float = 60) -> int:
        with self.changed:
            ended = self.changed.wait_for(lambda: token in self.exits, timeout)
            assert ended, f"worker {token} did not end within {timeout}s"
            return self.exits[token]

    def close(self) -> None:
        """Stop the server once its last workers ended (killed, if it takes a minute)."""
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.close()
        try:
            self.proc.wait(60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.listener.join(10)
        self.proc.stdout.close()


@contextlib.contextmanager
def forker(script: Path, folder: Path) -> Iterator[Forker]:
    server = Forker(script, folder)
    try:
        yield server
    finally:
        server.close()


def kill_point(rng: random.Random, seen: int, left: int, pause: float) -> tuple[int, float]:
    """Where to kill a worker that will make ``left`` more effects after the ``seen`` ones
    of the counter: after which line of it, and how long after. Mostly anywhere (after a
    random effect, then up to ``pause``, about one effect's time); sometimes early (up to
    three times ``pause`` after it started, or just after its first effect: before or
    around its first record); sometimes at the end (after its last effect, then up to five
    times ``pause``: in the last commits, after the run completed, or after it ended)."""
    roll = rng.random()
    if roll < 0.1:
        return seen, rng.uniform(0, 3 * pause)
    if roll < 0.2:
        return seen + 1, rng.uniform(0, pause / 4)
    if roll < 0.4:
        return seen + left, rng.uniform(0, 5 * pause)
    return seen + rng.randint(1, max(1, left)), rng.uniform(0, pause)


def kill_after(worker: Worker, counter: Path, target: int, delay: float) -> bool:
    """SIGKILL ``worker`` ``delay`` seconds after the counter holds ``target`` lines (or
    at once if it ended); whether it was killed while running."""
    while len(effects(counter)) < target and worker.ended() is None:
        time.sleep(0.0005)
    time.sleep(delay)
    return worker.kill()


def serve(script: str) -> None:
    """The fork server (``python crash_helpers.py SCRIPT``): imports the worker script,
    then reads ``[token, out, err, *argv]`` lines, forks a worker running its
    ``main(argv)`` for each and answers ``started <token> <pid>``; tells ``exit <token>
    <code>`` as each worker ends (killed by a signal: minus the signal's number)."""
    path = Path(script)
    sys.path.insert(0, str(path.parent))
    module = importlib.import_module(path.stem)
    # what weft imports on first use (psycopg when a PostgresBackend opens, jsonschema when
    # a tool is checked ...): imported once here, not in every worker
    for name in ("psycopg", "psycopg_pool", *getattr(module, "PRELOAD", ())):
        importlib.import_module(name)
    tokens: dict[int, str] = {}

    def reap(_signum: int, _frame: FrameType | None) -> None:
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            code = os.waitstatus_to_exitcode(status)
            os.write(1, f"exit {tokens.pop(pid)} {code}\n".encode())

    signal.signal(signal.SIGCHLD, reap)
    for line in sys.stdin:
        token, out, err, *argv = json.loads(line)
        # no reaping between the fork and knowing the child's token
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGCHLD})
        pid = os.fork()
        if pid == 0:
            signal.signal(signal.SIGCHLD, signal.SIG_DFL)
            signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGCHLD})
            _worker(module.main, out, err, argv, token)
        tokens[pid] = token
        os.write(1, f"started {token} {pid}\n".encode())
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGCHLD})
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    reap(signal.SIGCHLD, None)  # stdin closed: report the workers that ended meanwhile
    while tokens:  # and wait for the last ones
        pid, status = os.wait()
        code = os.waitstatus_to_exitcode(status)
        os.write(1, f"exit {tokens.pop(pid)} {code}\n".encode())


def app_name(server: int, token: str) -> str:
    """The ``application_name`` of the PostgreSQL sessions of worker ``token`` of the fork
    server ``server`` (a pid); libpq reads it from PGAPPNAME."""
    return f"weft-crash-{server}-{token}"


def _wait_sessions_gone(name: str, timeout: float = 30) -> None:
    """Wait until PostgreSQL has ended the sessions of a killed worker. The server goes on
    with a statement the worker sent before it died, a COMMIT included, so a worker that
    resumes at once could read the thread before that commit lands and then conflict
    with it (a ConflictError, nothing lost: what a real second process would see)."""
    try:
        import psycopg
    except ImportError:  # no PostgreSQL tests without psycopg
        return
    try:
        conn = psycopg.connect(PG, autocommit=True, connect_timeout=5)
    except psycopg.Error:
        return  # no server: the worker had no session either
    with conn:
        deadline = time.monotonic() + timeout
        sql = "SELECT count(*) FROM pg_stat_activity WHERE application_name = %s"
        while conn.execute(sql, (name,)).fetchone()[0]:  # type: ignore[index]
            assert time.monotonic() < deadline, f"PostgreSQL kept {name}'s session {timeout}s"
            time.sleep(0.005)


def _worker(main: Any, out: str, err: str, argv: list[str], token: str) -> None:
    """In the forked child: stdout and stderr to files, run ``main``, never return."""
    os.environ["PGAPPNAME"] = app_name(os.getppid(), token)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.dup2(os.open(out, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644), 1)
    os.dup2(os.open(err, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644), 2)
    code = 1
    try:
        main(argv)
        code = 0
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    except BaseException:
        traceback.print_exc()
    finally:
        with contextlib.suppress(Exception):
            sys.stdout.flush()
            sys.stderr.flush()
        os._exit(code)


if __name__ == "__main__":
    serve(sys.argv[1])
