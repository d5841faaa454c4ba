"""The commands that inspect stored runs (``weft threads``, ``show``, ``events``, ``state``,
``diff``, ``memory``, ``pauses``, ``answer``, ``fork``, ``prune``) through typer's CliRunner,
on threads that real runs made in another process, and through real subprocesses:
``python -m weft.cli`` and ``--follow`` tailing a second process that writes."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from subprocess import PIPE
from typing import Any

import psycopg
import pytest
from typer.testing import CliRunner

from weft import __version__
from weft.cli import app
from weft.graph import Paused
from weft.persist import DurableRun, SQLiteBackend

HERE = Path(__file__).resolve().parent
DATA = HERE.parent / "inspect" / "inspect_data.py"
PG = "postgresql://postgres@127.0.0.1:5432/weft_test"
WIDE = {"COLUMNS": "200"}

runner = CliRunner()


def refund_graph() -> Any:
    """The graph that made the thread ``refund`` (loaded from the inspector's test data)."""
    spec = importlib.util.spec_from_file_location("inspect_data", DATA)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.refund_graph()


def make_data(db: str, *extra: str) -> None:
    """The threads of ``inspect_data``, made by a process of its own."""
    subprocess.run([sys.executable, str(DATA), db, *extra], check=True, timeout=120)


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> str:
    path = tmp_path_factory.mktemp("cli") / "weft.db"
    make_data(str(path))
    return str(path)


@pytest.fixture
def fresh_db(tmp_path: Path) -> str:
    path = tmp_path / "weft.db"
    make_data(str(path))
    return str(path)


def weft(*args: str) -> Any:
    result = runner.invoke(app, list(args), env=WIDE)
    assert result.exit_code == 0, (result.stdout, result.stderr)
    return result


def weft_json(*args: str) -> Any:
    return json.loads(weft(*args, "--json").stdout)


def refused(*args: str) -> str:
    """A command that fails: exit 2, one line on stderr, no traceback."""
    result = runner.invoke(app, list(args), env=WIDE)
    assert result.exit_code == 2, (result.stdout, result.stderr)
    assert result.exception is None or isinstance(result.exception, SystemExit)
    said = result.stderr.strip()
    assert "\n" not in said and "Traceback" not in said, said
    assert said.startswith(f"weft {args[0]}: "), said
    return said


# ------------------------------------------------------------------------ help


def help_line(text: str, option: str) -> str:
    (line,) = [line for line in text.splitlines() if re.search(rf"\s{option}\s", line)]
    return line


def test_flags_show_as_flags_in_help() -> None:
    top = weft("--help").stdout
    assert "<bool>" not in top
    assert "Print the version and exit." in help_line(top, "--version")
    mcp = weft("mcp", "--help").stdout
    assert "<bool>" not in help_line(mcp, "--create")
    assert "PATH|DSN" in help_line(mcp, "--db")  # options with values keep their type
    events = weft("events", "--help").stdout
    assert "<bool>" not in events
    assert "STEP" in help_line(events, "--since")
    assert weft("--version").stdout.strip() == f"weft {__version__}"


def test_the_inspection_commands_are_listed_under_one_panel() -> None:
    top = weft("--help").stdout
    panel = top[top.index("Inspect stored runs") :]
    for name in ("threads", "show", "events", "state", "diff", "memory", "pauses", "answer"):
        assert re.search(rf"│ {name}\s", panel), name


# --------------------------------------------------------------------- reading


def test_threads_lists_threads_and_runs(db: str) -> None:
    table = weft("threads", "--db", db).stdout
    for thread in ("agent", "chat", "confirm", "pipeline", "plan", "refund"):
        assert re.search(rf"│ {thread}\s", table), thread
    refund = next(line for line in table.splitlines() if "│ refund " in line)
    assert "yes" in refund and "refund-1 graph paused (1 waiting)" in refund
    found = {t["thread_id"]: t for t in weft_json("threads", "--db", db)}
    assert found["pipeline"]["runs"][0]["status"] == "completed"
    assert found["refund"]["paused"] is True and found["pipeline"]["paused"] is False


def test_show_prints_the_timeline(db: str) -> None:
    shown = weft("show", "agent", "--db", db).stdout
    lines = [line for line in shown.splitlines() if "│" in line]
    units = [line.split("│")[1].strip() for line in lines]
    assert units == ["job-1", "iter/0 agent", "reply", "0 Search", "iter/1 agent", "reply"]
    assert re.search(r"│ \d+(\.\d+)? (µs|ms|s) │", lines[0])  # how long the run took
    found = weft_json("show", "pipeline", "--db", db)
    assert found["thread"]["thread_id"] == "pipeline"
    assert [i["kind"] for i in found["timeline"]] == ["graph", "node", "node", "node", "call"]
    assert found["timeline"][1]["record"]["result"] == {"topic": "weft", "pages": 3}


def test_events_since_a_step(db: str) -> None:
    found = weft_json("events", "pipeline", "--since", "8", "--db", db)
    assert [(e["step"], e["key"], e["value"]) for e in found] == [
        (9, "state:draft", "v1"),
        (10, "state:draft", "v2"),
    ]
    table = weft("events", "pipeline", "--since", "8", "--db", db).stdout
    assert "state:draft" in table and "editor" in table and "step:pipe-1" not in table


def test_state_at_a_step_under_a_prefix(db: str) -> None:
    found = weft_json("state", "pipeline", "--at", "9", "--prefix", "state:", "--db", db)
    assert (found["step"], [(e["key"], e["value"]) for e in found["entries"]]) == (
        9,
        [("state:draft", "v1")],
    )
    table = weft("state", "pipeline", "--db", db).stdout
    assert "pipeline at step 10" in table and "write a post" in table


def test_diff_between_two_steps(db: str) -> None:
    found = weft_json("diff", "pipeline", "9", "10", "--db", db)
    assert [(c["key"], c["change"], c["before"], c["after"]) for c in found["changes"]] == [
        ("state:draft", "changed", "v1", "v2")
    ]
    table = weft("diff", "pipeline", "9", "10", "--db", db).stdout
    assert "step 9 -> 10 (1 events between)" in table and "changed" in table


def test_memory_lists_entries_as_memory_list_does(db: str) -> None:
    table = weft("memory", "pipeline", "--db", db).stdout
    assert "shared:goal" in table and "Goal" in table and "what the user asked" in table
    found = weft_json("memory", "pipeline", "--db", db)
    assert [(m["key"], m["kind"], m["value_bytes"]) for m in found] == [
        ("input:topic", "input", 6),
        ("shared:goal", "shared", 14),
    ]


def test_pauses_lists_the_questions(db: str) -> None:
    (question,) = weft_json("pauses", "refund", "--db", db)
    assert question["id"] == "refund-1/approve#1/pauses/0" and question["answered"] is False
    table = weft("pauses", "refund", "--db", db).stdout
    assert "refund-1/approve#1/pauses/0" in table and "waiting" in table


# -------------------------------------------------------------------- steering


def test_answer_records_the_answer_and_the_owner_resumes(fresh_db: str) -> None:
    said = weft("answer", "refund", "approve", "--db", fresh_db).stdout
    assert 'answered refund-1/approve#1/pauses/0: "approve"' in said
    assert "run_id='refund-1'" in said
    with SQLiteBackend(fresh_db) as backend:
        owner = DurableRun.open(backend, "refund", run_id="refund-1")
        assert owner.run_graph(refund_graph(), "A-42") == "refunded 120"
        owner.close()
    assert weft_json("threads", "--db", fresh_db)[-1]["runs"][0]["status"] == "completed"
    assert "no question waits for an answer in thread 'refund'" in refused(
        "answer", "refund", "approve", "--db", fresh_db
    )


def test_answer_takes_json_or_text_and_a_question_id(fresh_db: str) -> None:
    qid = "refund-1/approve#1/pauses/0"
    (answered,) = json.loads(
        weft("answer", "refund", '{"ok": 1}', "--id", qid, "--db", fresh_db, "--json").stdout
    )
    assert answered["answer"] == {"ok": 1}
    with SQLiteBackend(fresh_db) as backend:
        run = DurableRun.open(backend, "other")
        paused = run.run_graph(refund_graph(), "B-1", run_id="r2")
        run.close()
    assert isinstance(paused, Paused)
    (answered,) = weft_json("answer", "other", "42", "--text", "--db", fresh_db)
    assert answered["answer"] == "42"
    said = refused("answer", "refund", "yes", "--id", "refund-1/nope", "--db", fresh_db)
    assert "'refund-1/nope' is no question in thread 'refund'" in said


def test_a_paused_turn_is_answered_from_outside(fresh_db: str) -> None:
    (answered,) = weft_json("answer", "confirm", "yes", "--text", "--db", fresh_db)
    assert answered["answer"] == "yes"
    assert weft_json("pauses", "confirm", "--db", fresh_db)[0]["answered"] is True


def test_fork_and_prune(fresh_db: str) -> None:
    said = weft("fork", "pipeline", "9", "--to", "pipeline-b", "--db", fresh_db).stdout
    assert "forked pipeline at step 9 into pipeline-b" in said
    fork = weft_json("state", "pipeline-b", "--prefix", "state:", "--db", fresh_db)
    assert [e["value"] for e in fork["entries"]] == ["v1"]
    made = weft_json("fork", "pipeline", "3", "--db", fresh_db)
    assert made["thread_id"].startswith("pipeline~fork") and made["parent_step"] == 3
    pruned = weft_json("prune", "pipeline", "--keep", "2", "--db", fresh_db)
    assert pruned == {"thread_id": "pipeline", "removed": 8, "first_step": 8}
    assert "has no step 3: its steps go from 8" in refused(
        "state", "pipeline", "--at", "3", "--db", fresh_db
    )
    assert "exists already" in refused(
        "fork", "pipeline", "9", "--to", "pipeline-b", "--db", fresh_db
    )


# ---------------------------------------------------------------------- errors


def test_a_wrong_path_is_one_line_and_creates_nothing(tmp_path: Path) -> None:
    missing = tmp_path / "nope.db"
    for command in (["threads"], ["show", "x"], ["events", "x"], ["memory", "x"]):
        said = refused(*command, "--db", str(missing))
        assert f"database {missing}: no such SQLite file" in said
    assert not missing.exists()
    assert "is a folder" in refused("threads", "--db", str(tmp_path))


def test_the_default_database_is_the_one_runs_write(tmp_path: Path) -> None:
    cwd = Path.cwd()
    os.chdir(tmp_path)
    try:
        said = refused("threads")
        assert "database .weft/weft.db: no such SQLite file" in said
        make_data(str(tmp_path / ".weft" / "weft.db"))
        assert len(json.loads(weft("threads", "--json").stdout)) == 6
    finally:
        os.chdir(cwd)


def test_an_unreachable_server_is_one_line() -> None:
    said = refused("threads", "--db", "postgresql://postgres@127.0.0.1:1/weft_test")
    assert "PostgreSQL 127.0.0.1:1/weft_test: cannot connect" in said


def test_an_unknown_thread_or_step_is_one_line(db: str) -> None:
    said = refused("show", "nope", "--db", db)
    assert "thread 'nope' does not exist" in said and "'pipeline'" in said
    assert "thread 'pipeline' has no step 99" in refused(
        "state", "pipeline", "--at", "99", "--db", db
    )
    assert "has no step 99" in refused("diff", "pipeline", "1", "99", "--db", db)
    assert "has no step 99" in refused("fork", "pipeline", "99", "--db", db)
    assert "since=-1" in refused("events", "pipeline", "--since", "-1", "--db", db)


def test_a_file_that_is_not_a_database_is_one_line(tmp_path: Path) -> None:
    junk = tmp_path / "junk.db"
    junk.write_bytes(b"this is not sqlite" * 100)
    assert "not a database" in refused("threads", "--db", str(junk))
    assert junk.read_bytes() == b"this is not sqlite" * 100


# ------------------------------------------------------------------ processes


def test_python_dash_m_runs_the_command(db: str) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "weft.cli", "threads", "--db", db, "--json"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert sorted(t["thread_id"] for t in json.loads(done.stdout))[0] == "agent"
    failed = subprocess.run(
        [sys.executable, "-m", "weft.cli", "show", "nope", "--db", db],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert failed.returncode == 2 and failed.stdout == ""
    assert failed.stderr.startswith("weft show: thread 'nope' does not exist")
    assert failed.stderr.count("\n") == 1


def test_follow_tails_what_another_process_writes(tmp_path: Path) -> None:
    db = str(tmp_path / "weft.db")
    with SQLiteBackend(db) as backend:
        run = DurableRun.open(backend, "live", run_id="starter")
        run.store.write("state", "tick", 0)
        run.close()
    follow = [sys.executable, "-m", "weft.cli", "events", "live", "--db", db, "--follow", "--json"]
    write = [sys.executable, str(HERE / "follow_writer.py"), db, "live", "5"]
    with (
        subprocess.Popen(follow, stdout=PIPE, stderr=PIPE, text=True) as follower,
        subprocess.Popen(write, stdin=PIPE, text=True) as writer,
    ):
        try:
            assert follower.stdout is not None and writer.stdin is not None
            first = json.loads(follower.stdout.readline())  # what was there before
            assert (first["step"], first["value"], first["run_id"]) == (1, 0, "starter")
            writer.stdin.write("go\n")
            writer.stdin.flush()
            seen = [json.loads(follower.stdout.readline()) for _ in range(5)]
            assert [(e["value"], e["run_id"], e["source"]) for e in seen] == [
                (n, "writer", "writer") for n in range(1, 6)
            ]
            assert writer.wait(timeout=60) == 0
            follower.send_signal(signal.SIGINT)  # Ctrl-C
            assert follower.wait(timeout=30) == 0
            assert follower.stderr is not None and "Traceback" not in follower.stderr.read()
        finally:
            for process in (follower, writer):
                if process.poll() is None:
                    process.kill()


@pytest.fixture
def pg_schema() -> Iterator[str]:
    schema = f"t_{uuid.uuid4().hex[:12]}"
    yield schema
    with psycopg.connect(PG, autocommit=True) as conn:
        conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


def test_the_commands_read_postgres(pg_schema: str) -> None:
    make_data(PG, pg_schema)
    found = weft_json("threads", "--db", PG, "--schema", pg_schema)
    assert [t["thread_id"] for t in found] == [
        "agent",
        "chat",
        "confirm",
        "pipeline",
        "plan",
        "refund",
    ]
    timeline = weft_json("show", "refund", "--db", PG, "--schema", pg_schema)["timeline"]
    assert [i["status"] for i in timeline] == ["paused", "finished", "waiting"]
    weft("answer", "refund", "approve", "--db", PG, "--schema", pg_schema)
    (question,) = weft_json("pauses", "refund", "--db", PG, "--schema", pg_schema)
    assert question["answer"] == "approve"
    started = time.time()
    said = refused("show", "nope", "--db", PG, "--schema", pg_schema)
    assert "thread 'nope' does not exist" in said and time.time() - started < 30


def test_replaying_a_long_thread_shows_progress_on_a_terminal(tmp_path: Path) -> None:
    db = str(tmp_path / "weft.db")
    with SQLiteBackend(db) as backend:
        run = DurableRun.open(backend, "long", snapshot_every=0)
        with run.store.transaction() as tx:
            for n in range(3000):
                tx.write("state", f"k{n % 50}", n)
        run.close()
    shown = subprocess.run(
        [sys.executable, "-m", "weft.cli", "state", "long", "--db", db, "--at", "2500"],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "FORCE_COLOR": "1", "COLUMNS": "120"},  # a terminal, to rich
    )
    assert shown.returncode == 0, shown.stderr
    assert "replaying" in shown.stderr and "2500/2500" in shown.stderr
    assert "long at step 2500" in shown.stdout
    quiet = subprocess.run(
        [sys.executable, "-m", "weft.cli", "state", "long", "--db", db, "--at", "2500"],
        capture_output=True,
        text=True,
        timeout=60,
        env={k: v for k, v in os.environ.items() if k not in ("FORCE_COLOR", "TTY_COMPATIBLE")},
    )
    assert quiet.returncode == 0 and quiet.stderr == ""  # a pipe gets no bar


def test_answer_asks_which_question_when_several_wait(tmp_path: Path) -> None:
    from weft.graph import WorkGraph, WorkGraphNode, interrupt

    def ask_a() -> str:
        return str(interrupt("a?"))

    def ask_b() -> str:
        return str(interrupt("b?"))

    def graph() -> WorkGraph:
        return WorkGraph(start_nodes=[WorkGraphNode(ask_a, id="a"), WorkGraphNode(ask_b, id="b")])

    db = str(tmp_path / "weft.db")
    with SQLiteBackend(db) as backend:
        run = DurableRun.open(backend, "two")
        paused = run.run_graph(graph(), run_id="both")
        run.close()
    assert isinstance(paused, Paused) and len(paused.questions) == 2
    said = refused("answer", "two", "yes", "--db", db)
    assert "2 questions wait in thread 'two' (" in said
    assert "both/a#0/pauses/0" in said and "both/b#1/pauses/0" in said
    assert "say which with --id" in said
    weft("answer", "two", "yes", "--id", "both/a#0/pauses/0", "--db", db)
    weft("answer", "two", "no", "--db", db)  # one left: no --id needed
    with SQLiteBackend(db) as backend:
        run = DurableRun.open(backend, "two")
        assert run.run_graph(graph(), run_id="both") == ["yes", "no"]
        run.close()
    found = weft_json("diff", "two", str(run.step), "1", "--db", db)
    assert all(c["change"] == "removed" for c in found["changes"])  # back in time


def test_hostile_ids_and_prefixes_are_one_line(db: str) -> None:
    assert "thread_id='': expected a non-empty string" in refused("show", "", "--db", db)
    assert "no NUL" in refused("state", "a\x00b", "--db", db)
    empty = weft_json("state", "pipeline", "--prefix", "\x00nothing", "--db", db)
    assert empty["entries"] == []
    assert "thread '../../etc' does not exist" in refused("pauses", "../../etc", "--db", db)


TOOL_AGENT_RUN = """
import sys
from weft.agent import ToolAgent
from weft.llm import ScriptedChatModel
from weft.persist import DurableRun, SQLiteBackend

def population(city: str) -> int:
    return {"Paris": 2_102_650, "Lyon": 522_250}[city]

model = ScriptedChatModel([
    ScriptedChatModel.tool_call("population", {"city": "Paris"}),
    ScriptedChatModel.tool_call("memory_write", {"key": "ratio", "value": 4.0}),
    "done",
])
with SQLiteBackend(sys.argv[1]) as backend, DurableRun.open(backend, "cities") as run:
    ToolAgent(model, tools=[population], store=run.store).run("go", run_id="c-1")
"""


def test_a_thread_of_chat_messages_reads_in_a_process_that_never_imported_a_model(
    tmp_path: Path,
) -> None:
    db = str(tmp_path / "weft.db")
    subprocess.run([sys.executable, "-c", TOOL_AGENT_RUN, db], check=True, timeout=120)
    done = subprocess.run(
        [sys.executable, "-m", "weft.cli", "threads", "--db", db, "--json"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    (thread,) = json.loads(done.stdout)
    assert thread["thread_id"] == "cities" and thread["error"] is None
    shown = subprocess.run(
        [sys.executable, "-m", "weft.cli", "memory", "cities", "--db", db, "--json"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert shown.returncode == 0, shown.stderr
    assert "shared:ratio" in shown.stdout
