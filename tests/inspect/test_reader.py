"""``Reader`` on threads made by real runs, on SQLite and PostgreSQL."""

from __future__ import annotations

import json
import threading
import time
import uuid
from contextlib import closing
from pathlib import Path

import pytest
from inspect_data import (
    ChatState,
    confirm,
    mail_executor,
    make_paused_task,
    make_paused_turn,
    make_pipeline,
    make_refund,
    refund_graph,
)
from inspect_db import PG, Opener

from weft.errors import (
    ConflictError,
    PauseError,
    PersistError,
    StepError,
    StorageError,
    TurnError,
    WeftError,
)
from weft.graph import Paused
from weft.inspect import Reader, to_json
from weft.persist import DurableRun, PostgresBackend, SQLiteBackend
from weft.runtime import TurnRuntime
from weft.store import Pause, RunRecord, StepRecord


def test_threads_lists_every_thread_with_its_runs(made: Opener) -> None:
    threads = {t.thread_id: t for t in Reader(made()).threads()}
    assert sorted(threads) == ["agent", "chat", "confirm", "pipeline", "plan", "refund"]
    runs = {t: [(r.run_id, r.kind, r.status) for r in s.runs] for t, s in threads.items()}
    assert runs["pipeline"] == [("pipe-1", "graph", "completed")]
    assert runs["agent"] == [("job-1", "agent", "completed")]
    assert runs["plan"] == [("plan-1", "graph", "completed")]
    assert runs["refund"] == [("refund-1", "graph", "paused")]
    assert runs["confirm"] == [("turn-1", "turn", "paused")]
    assert [t for t, s in threads.items() if s.paused] == ["confirm", "refund"]
    pipeline = threads["pipeline"]
    assert (pipeline.first_step, pipeline.steps) == (0, pipeline.last_step)
    assert pipeline.runs[0].units == 3  # fetch, summarize, publish
    assert threads["refund"].runs[0].waiting == 1
    assert pipeline.size_bytes > 0 and pipeline.entries >= 5
    assert pipeline.updated_at >= pipeline.created_at > 0


def test_the_timeline_of_a_graph_run_shows_its_nodes_and_calls_with_durations(
    made: Opener,
) -> None:
    lines = Reader(made()).timeline("pipeline")
    shown = [(i.run_id, i.unit, i.kind, i.status) for i in lines]
    assert shown == [
        ("pipe-1", "", "graph", "completed"),
        ("pipe-1", "fetch#0", "node", "finished"),
        ("pipe-1", "summarize#1", "node", "finished"),
        ("pipe-1", "publish#2", "node", "finished"),
        ("", "calls/notify", "call", "finished"),
    ]
    assert all(i.duration_ms is not None and i.duration_ms >= 0 for i in lines)
    assert [i.source for i in lines[1:]] == ["fetch#0", "summarize#1", "publish#2", "call:notify"]
    assert isinstance(lines[0].record, RunRecord)
    assert lines[0].record.units == ("fetch#0", "summarize#1", "publish#2")
    assert isinstance(lines[1].record, StepRecord)
    assert lines[1].record.result == {"topic": "weft", "pages": 3}
    assert [i.path for i in lines] == [
        "pipe-1",
        "pipe-1/fetch#0",
        "pipe-1/summarize#1",
        "pipe-1/publish#2",
        "calls/notify",
    ]


def test_the_timeline_of_an_agent_nests_replies_and_actions_under_iterations(
    made: Opener,
) -> None:
    lines = Reader(made()).timeline("agent")
    assert [(i.unit, i.kind, i.depth, i.label) for i in lines] == [
        ("", "agent", 0, None),
        ("iter/0", "iteration", 1, "agent"),
        ("iter/0/reply", "reply", 2, None),
        ("iter/0/action/0", "action", 2, "Search"),
        ("iter/1", "iteration", 1, "agent"),
        ("iter/1/reply", "reply", 2, None),
    ]


def test_the_timeline_of_a_plan_turns_and_a_pause(made: Opener) -> None:
    reader = Reader(made())
    plan = [(i.unit, i.kind) for i in reader.timeline("plan")]
    assert plan == [("", "graph"), ("0.fetchUserProfile#0", "node"), ("1.greet#1", "node")]
    turns = [i for i in reader.timeline("chat") if i.kind == "turn"]
    assert [(i.unit, i.record.result) for i in turns] == [("turn", 1), ("turn", 2)]  # each turn
    assert all(i.duration_ms is not None and i.source == "turn" for i in turns)
    assert turns[0].step < turns[1].step
    refund = reader.timeline("refund")
    assert [(i.unit, i.kind, i.status, i.label) for i in refund] == [
        ("", "graph", "paused", None),
        ("lookup#0", "node", "finished", None),
        ("approve#1/pauses/0", "pause", "waiting", "approve"),
    ]
    assert [i.depth for i in refund] == [0, 1, 1]


def test_the_timeline_at_an_earlier_step_shows_what_had_run(made: Opener) -> None:
    reader = Reader(made())
    summarize = next(i for i in reader.timeline("pipeline") if i.unit == "summarize#1")
    early = reader.timeline("pipeline", at=summarize.step)
    assert [i.unit for i in early] == ["fetch#0", "summarize#1"]  # a graph records itself last
    assert [i.depth for i in early] == [1, 1]


def test_events_are_the_stored_log_with_their_writers(made: Opener) -> None:
    reader = Reader(made())
    events = reader.events("pipeline")
    last = reader.thread("pipeline").last_step
    assert [e.step for e in events] == list(range(1, last + 1))
    assert {e.run_id for e in events} == {"pipe-1"}
    drafts = [(e.key, e.value, e.source) for e in events if e.key == "state:draft"]
    assert drafts == [("state:draft", "v1", "editor"), ("state:draft", "v2", "editor")]
    assert [e.step for e in reader.events("pipeline", since=last - 2)] == [last - 1, last]
    assert [e.step for e in reader.events("pipeline", since=2, until=4)] == [3, 4]
    with pytest.raises(PersistError, match="since=-1: expected a whole number >= 0"):
        reader.events("pipeline", since=-1)


def test_state_at_a_step_and_under_a_prefix(made: Opener) -> None:
    reader = Reader(made())
    events = reader.events("pipeline")
    v1 = next(e.step for e in events if e.value == "v1")
    now = reader.state("pipeline", prefix="state:")
    assert [(e.key, e.value, e.source) for e in now.entries] == [("state:draft", "v2", "editor")]
    then = reader.state("pipeline", at=v1, prefix="state:draft")
    assert (then.step, [e.value for e in then.entries]) == (v1, ["v1"])
    everything = {e.key for e in reader.state("pipeline").entries}
    assert {"shared:goal", "input:topic", "state:draft"} <= everything
    assert not any(k.startswith("step:pipe-1") for k in everything)  # records: the timeline's


def test_diff_says_what_was_added_changed_and_removed(open_backend: Opener) -> None:
    backend = open_backend()
    run = DurableRun.open(backend, "d")
    run.store.write("state", "a", 1)
    run.store.write("state", "b", "x", source="bob")
    run.store.write("state", "a", 2, source="ann")
    run.store.delete("state", "b")
    run.store.write("state", "c", [1], source="cy")
    run.close()
    diff = Reader(open_backend()).diff("d", 2, 5)
    assert (diff.a, diff.b, diff.events) == (2, 5, 3)
    assert [(c.key, c.change, c.before, c.after, c.source) for c in diff.changes] == [
        ("state:a", "changed", 1, 2, "ann"),
        ("state:b", "removed", "x", None, None),
        ("state:c", "added", None, [1], "cy"),
    ]
    assert Reader(open_backend()).diff("d", 5, 5).changes == ()


def test_memory_lists_entries_as_memory_list_shows_them(made: Opener) -> None:
    items = Reader(made()).memory("pipeline")
    assert [(m.key, m.kind, m.title, m.description) for m in items] == [
        ("input:topic", "input", None, None),
        ("shared:goal", "shared", "Goal", "what the user asked"),
    ]
    goal = items[1]
    assert goal.value == "write a post" and goal.value_bytes == len('"write a post"')
    assert goal.updated_at >= goal.created_at > 0


def test_pauses_lists_the_questions_asked(made: Opener) -> None:
    reader = Reader(made())
    (question,) = reader.pauses("refund")
    assert isinstance(question, Pause)
    assert question.id == "refund-1/approve#1/pauses/0"
    assert question.question == {"refund": 120, "order": "A-42"}
    assert reader.pauses("pipeline") == []


def test_an_answer_is_recorded_and_the_owner_resumes_without_passing_it(
    open_backend: Opener,
) -> None:
    paused = make_refund(open_backend())
    reader = Reader(open_backend())  # another process, say
    (answered,) = reader.answer("refund", paused.answer("approve"))
    assert (answered.answered, answered.answer) == (True, "approve")
    assert reader.pauses("refund", waiting=True) == []
    assert reader.thread("refund").runs[0].status == "running"
    owner = DurableRun.open(open_backend(), "refund", run_id="refund-1")
    assert owner.run_graph(refund_graph(), "A-42") == "refunded 120"
    owner.close()
    assert reader.thread("refund").runs[0].status == "completed"
    with pytest.raises(PauseError, match=r"was answered already.*waiting for an answer are: none"):
        reader.answer("refund", paused.answer("approve"))


def test_answers_to_no_question_are_refused_and_nothing_is_written(
    open_backend: Opener,
) -> None:
    paused = make_refund(open_backend())
    reader = Reader(open_backend())
    before = reader.thread("refund").last_step
    with pytest.raises(PauseError, match=r"'nope' is no question.*'refund-1/approve#1/pauses/0'"):
        reader.answer("refund", {paused.questions[0].id: "approve", "nope": 1})
    with pytest.raises(PauseError, match="non-empty dict"):
        reader.answer("refund", {})
    with pytest.raises(PauseError, match="cannot be stored"):
        reader.answer("refund", paused.answer(object()))
    assert reader.thread("refund").last_step == before


def test_a_paused_turn_answered_from_outside_runs_again_with_its_answer(
    open_backend: Opener,
) -> None:
    paused = make_paused_turn(open_backend())
    (answered,) = Reader(open_backend()).answer("confirm", paused.answer("yes"))
    assert answered.answer == "yes"
    with TurnRuntime(ChatState, [confirm], open_backend()) as runtime:
        with pytest.raises(TurnError, match=r"was answered and waits to run again"):
            runtime.run_turn({"message": "something else", "session_id": "confirm"})
        output = runtime.run_turn(thread_id="confirm")  # no input: the answered turn runs
        assert output["response_text"] == "yes"
        assert runtime.thread_state("confirm")["history"][0] == "delete it: yes"
        assert runtime.turns("confirm") == 1
        with pytest.raises(TurnError, match="no paused turn to answer"):
            runtime.run_turn(thread_id="confirm", answers=paused.answer("again"))
        nxt = runtime.run_turn({"message": "next", "session_id": "confirm"})
        assert isinstance(nxt, Paused)  # the next turn asks again, as its node always does


def test_an_answer_that_races_the_owner_is_made_again_on_the_new_thread(
    open_backend: Opener, monkeypatch: pytest.MonkeyPatch
) -> None:
    paused = make_refund(open_backend())
    reader = Reader(open_backend())
    opened = DurableRun.open
    raced = []

    def racing(*args: object, **kwargs: object) -> DurableRun:
        run = opened(*args, **kwargs)  # type: ignore[arg-type]
        if not raced:  # the owner writes after the reader loaded the thread
            raced.append(True)
            other = opened(open_backend(), "refund")
            other.store.write("state", "owner", "was here")
            other.close()
        return run

    monkeypatch.setattr(DurableRun, "open", racing)
    (answered,) = reader.answer("refund", paused.answer("approve"))
    assert answered.answered
    assert reader.state("refund", prefix="state:owner").entries[0].value == "was here"


def test_fork_starts_a_thread_at_a_step(open_backend: Opener) -> None:
    make_pipeline(open_backend())
    reader = Reader(open_backend())
    v1 = next(e.step for e in reader.events("pipeline") if e.value == "v1")
    fork = reader.fork("pipeline", v1, to="pipeline-b")
    assert (fork.thread_id, fork.parent_thread, fork.parent_step) == ("pipeline-b", "pipeline", v1)
    summary = reader.thread("pipeline-b")
    assert (summary.parent_thread, summary.first_step, summary.last_step) == ("pipeline", v1, v1)
    assert reader.state("pipeline-b", prefix="state:").entries[0].value == "v1"
    assert reader.state("pipeline", prefix="state:").entries[0].value == "v2"
    with pytest.raises(ConflictError, match="exists already"):
        reader.fork("pipeline", v1, to="pipeline-b")
    with pytest.raises(StepError, match=r"steps go from 0 to \d+"):
        reader.fork("pipeline", 999)
    assert reader.fork("pipeline", 1).thread_id.startswith("pipeline~fork")


def test_prune_keeps_the_last_steps_loadable(open_backend: Opener) -> None:
    make_pipeline(open_backend())
    reader = Reader(open_backend())
    last = reader.thread("pipeline").last_step
    assert reader.prune("pipeline", keep_last=2) == last - 2
    assert [e.step for e in reader.events("pipeline")] == [last - 1, last]
    assert reader.state("pipeline", prefix="state:").entries[0].value == "v2"
    assert [i.unit for i in reader.timeline("pipeline")][:2] == ["", "fetch#0"]
    with pytest.raises(StepError, match=r"pruned or forked there\) to"):
        reader.state("pipeline", at=1)


def test_unknown_threads_and_steps_are_named(made: Opener) -> None:
    reader = Reader(made())
    with pytest.raises(PersistError, match=r"thread 'nope' does not exist .*'agent', 'chat'"):
        reader.timeline("nope")
    with pytest.raises(StepError, match="has no step 9999"):
        reader.state("pipeline", at=9999)
    with pytest.raises(StepError, match="has no step -1"):
        reader.diff("pipeline", -1, 2)
    with pytest.raises(StepError, match="expected a whole number"):
        reader.state("pipeline", at="3")  # type: ignore[arg-type]


def test_open_refuses_a_missing_file_without_creating_it(tmp_path: Path) -> None:
    missing = tmp_path / "nope.db"
    with pytest.raises(PersistError, match="no such SQLite file"):
        Reader.open(missing)
    assert not missing.exists()
    with pytest.raises(PersistError, match="is a folder"):
        Reader.open(tmp_path)


def test_open_says_when_a_server_cannot_be_reached() -> None:
    with pytest.raises(StorageError, match="cannot connect"):
        Reader.open("postgresql://postgres@127.0.0.1:1/weft_test")


def test_every_record_is_json(made: Opener) -> None:
    reader = Reader(made())
    answers = [
        reader.threads(),
        reader.timeline("agent"),
        reader.events("plan"),
        reader.state("pipeline"),
        reader.diff("pipeline", 1, 3),
        reader.memory("pipeline"),
        reader.pauses("refund"),
    ]
    for answer in answers:
        text = json.dumps(to_json(answer))
        assert json.loads(text) == to_json(answer)
    (question,) = to_json(reader.pauses("refund"))
    assert question["id"] == "refund-1/approve#1/pauses/0"
    (thread,) = [t for t in to_json(reader.threads()) if t["thread_id"] == "refund"]
    assert thread["paused"] is True and thread["runs"][0]["record"]["status"] == "paused"


def test_long_work_reports_progress(made: Opener) -> None:
    reader = Reader(made())
    seen: list[tuple[int, int]] = []
    reader.threads(progress=lambda done, total: seen.append((done, total)))
    assert seen == [(n, 6) for n in range(1, 7)]
    ticks: list[tuple[int, int]] = []
    reader.state("pipeline", progress=lambda done, total: ticks.append((done, total)))
    assert ticks[0][0] == 0 and ticks[-1][0] == ticks[-1][1] > 0


def test_follow_yields_events_as_another_writer_appends(open_backend: Opener) -> None:
    writer = DurableRun.open(open_backend(), "live")
    writer.store.write("state", "n", 0)
    reader = Reader(open_backend())
    done = threading.Event()

    def write() -> None:
        for n in range(1, 4):
            time.sleep(0.05)
            writer.store.write("state", "n", n)
        done.set()

    seen: list[int] = []
    worker = threading.Thread(target=write)
    worker.start()
    for event in reader.follow("live", interval=0.02, stop=done.is_set):
        seen.append(event.value)
    worker.join()
    tail = list(reader.follow("live", since=4, interval=0.02, stop=lambda: True))
    writer.close()
    assert seen == [0, 1, 2, 3]
    assert tail == []


def test_a_reader_needs_a_backend(tmp_path: Path) -> None:
    with pytest.raises(PersistError, match=r"expected a weft\.persist backend"):
        Reader(str(tmp_path))  # type: ignore[arg-type]
    with SQLiteBackend(tmp_path / "x.db") as backend:
        assert Reader(backend).threads() == []


def test_a_thread_that_cannot_be_replayed_hides_no_other(open_backend: Opener) -> None:
    def mine(total: object, more: int) -> int:
        return (total if isinstance(total, int) else 0) + more

    make_pipeline(open_backend())
    run = DurableRun.open(open_backend(), "custom", reducers={"state:n": mine})
    run.store.write("state", "n", 1)
    run.store.write("state", "n", 2)
    run.close()
    found = {t.thread_id: t for t in Reader(open_backend()).threads()}
    assert found["pipeline"].error is None and found["pipeline"].runs
    custom = found["custom"]
    assert custom.error is not None and "pass reducers={'state:n': mine}" in custom.error
    assert (custom.last_step, custom.entries, custom.runs) == (2, 0, ())
    with pytest.raises(WeftError, match="not a built-in"):
        Reader(open_backend()).state("custom")
    given = Reader(open_backend(), reducers={"state:n": mine})
    assert given.state("custom").entries[0].value == 3


def test_threads_name_the_processes_that_wrote_them(open_backend: Opener) -> None:
    make_pipeline(open_backend())
    (thread,) = Reader(open_backend()).threads()
    (writer,) = thread.writers
    assert (writer.run_id, writer.first_step, writer.last_step) == ("pipe-1", 1, thread.last_step)


def test_open_refuses_a_database_without_weft_tables_and_adds_none(tmp_path: Path) -> None:
    import sqlite3

    empty = tmp_path / "empty.db"
    empty.touch()
    other = tmp_path / "other.db"
    with closing(sqlite3.connect(other)) as conn:
        conn.execute("CREATE TABLE notes (text)")
        conn.commit()
    for path in (empty, other):
        with pytest.raises(PersistError, match="holds no weft event log"):
            Reader.open(path)
    assert empty.stat().st_size == 0
    with closing(sqlite3.connect(other)) as conn:
        tables = conn.execute("SELECT name FROM sqlite_master").fetchall()
    assert tables == [("notes",)]


def test_open_refuses_a_schema_without_weft_tables_and_creates_none() -> None:
    import psycopg

    schema = f"t_{uuid.uuid4().hex[:12]}"
    with pytest.raises(PersistError, match=f"schema '{schema}': it holds no weft event log"):
        Reader.open(PG, schema=schema)
    with psycopg.connect(PG) as conn:
        found = conn.execute("SELECT 1 FROM pg_namespace WHERE nspname = %s", (schema,))
        assert found.fetchone() is None


def test_open_reads_a_schema_runs_wrote(open_backend: Opener) -> None:
    make_pipeline(open_backend())
    db = open_backend()
    target = PG if isinstance(db, PostgresBackend) else str(db.location)
    schema = db.schema if isinstance(db, PostgresBackend) else "weft"
    with Reader.open(target, schema=schema) as reader:
        assert [t.thread_id for t in reader.threads()] == ["pipeline"]


async def test_afollow_tails_a_writer_without_blocking_the_loop(open_backend: Opener) -> None:
    import asyncio

    writer = DurableRun.open(open_backend(), "live")
    writer.store.write("state", "n", 0)
    reader = Reader(open_backend())
    done = threading.Event()
    ticks = 0

    async def write() -> None:
        nonlocal ticks
        for n in range(1, 4):
            await asyncio.sleep(0.05)
            writer.store.write("state", "n", n)
            ticks += 1
        done.set()

    task = asyncio.create_task(write())
    seen = [e.value async for e in reader.afollow("live", interval=0.02, stop=done.is_set)]
    await task
    writer.close()
    assert seen == [0, 1, 2, 3] and ticks == 3
    with pytest.raises(PersistError, match="interval=0"):
        async for _ in reader.afollow("live", interval=0):
            pass


def test_a_question_of_a_nested_run_is_answered_and_the_outer_run_resumes(
    open_backend: Opener,
) -> None:
    paused = make_paused_task(open_backend())
    reader = Reader(open_backend())
    (question,) = reader.pauses("mail", waiting=True)
    assert (question.run_id, question.unit, paused.run_id) == ("job.mail", "send", "job")
    lines = [(i.run_id, i.unit, i.kind, i.status) for i in reader.timeline("mail")]
    assert lines[:2] == [
        ("job", "", "job graph", "paused"),
        ("job.mail", "", "job graph", "paused"),
    ]
    assert ("job.mail", "send/pauses/0", "pause", "waiting") in lines
    assert reader.thread("mail").paused
    reader.answer("mail", paused.answer("yes"))
    assert not reader.thread("mail").paused  # nothing waits for a person: for the owner
    assert [(r.run_id, r.status) for r in reader.thread("mail").runs] == [
        ("job", "running"),  # the nested run's pause had paused it too
        ("job.mail", "running"),
    ]
    owner = DurableRun.open(open_backend(), "mail", run_id="executor")
    done = mail_executor(owner).execute(run_id="job")
    owner.close()
    assert not isinstance(done, Paused) and done.ok
    assert done.final_result == '{"sent": "yes"}'  # the tool's result, as the model read it
    assert [r.status for r in reader.thread("mail").runs] == ["completed", "completed"]
