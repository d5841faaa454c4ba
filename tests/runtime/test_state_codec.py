"""The versioned state codec, on fixture records written straight into the SQLite tables:
current, legacy (migrated), malformed (refused, earlier turns kept), future (refused)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from codec_schemas import (
    CODEC,
    FIXTURES,
    THREAD,
    CurrentState,
    current_reply,
    current_runtime,
    install,
)

from weft.errors import MalformedStateError, SchemaError, StateVersionError
from weft.persist import DurableRun, SQLiteBackend, load_store
from weft.runtime import StateCodec, TurnRuntime
from weft.runtime.codec import MIGRATE_SOURCE, RUN_ID, TURN_PATH
from weft.store import Event, RunLog, RunRecord, StepRecord


@pytest.fixture
def database(tmp_path: Path) -> Path:
    path = tmp_path / "weft.db"
    SQLiteBackend(path).close()  # create weft's tables
    return path


@pytest.fixture
def backend(database: Path) -> Iterator[SQLiteBackend]:
    backend = SQLiteBackend(database)
    yield backend
    backend.close()


def turn(runtime: TurnRuntime, text: str = "next") -> Any:
    return runtime.run_turn({"message": text, "session_id": THREAD})


def migrations_stored(backend: SQLiteBackend) -> int:
    return sum(1 for e in backend.history(THREAD) if e.event.source == MIGRATE_SOURCE)


def records(backend: SQLiteBackend) -> tuple[int, int]:
    """(schema version, turn) that the thread's typed records say now."""
    log = RunLog(load_store(backend, THREAD), RUN_ID)
    schema, last = log.get("schema"), log.get("turn")
    assert schema is not None and last is not None
    return schema.result, last.result


def damaged_step(name: str) -> int:
    """The step of the fixture's row that is not JSON any more."""
    for line in (FIXTURES / f"{name}.jsonl").read_text().splitlines():
        row = json.loads(line)
        try:
            json.loads(row["record"])
        except ValueError:
            return int(row["step"])
    raise AssertionError(f"{name}.jsonl has no damaged row")


def test_a_thread_of_the_current_version_loads_as_it_is(database: Path) -> None:
    install(database, "current")
    with SQLiteBackend(database) as backend, current_runtime(backend) as runtime:
        assert turn(runtime)["response_text"] == "v2 reply 4"
        state = runtime.thread_state(THREAD)
        assert len(state["history"]) == 8
        assert state["session_progress"] == {"turn_count": 4}
        assert runtime.turns(THREAD) == 4
        assert migrations_stored(backend) == 0
        assert records(backend) == (2, 4)


def test_a_legacy_thread_loads_through_its_migration(database: Path) -> None:
    install(database, "legacy")
    with SQLiteBackend(database) as backend, current_runtime(backend) as runtime:
        assert turn(runtime)["response_text"] == "v2 reply 3"
        state = runtime.thread_state(THREAD)
    assert [e["content"] for e in state["history"]] == [
        "message 1",
        "v1 reply 1",
        "message 2",
        "v1 reply 2",
        "next",
        "v2 reply 3",
    ]
    assert state["session_progress"] == {"turn_count": 3}
    assert "messages" not in state and "turns_seen" not in state


def test_a_thread_migrates_once(database: Path) -> None:
    install(database, "legacy")
    with SQLiteBackend(database) as backend:
        with current_runtime(backend) as runtime:
            turn(runtime)
        stored = migrations_stored(backend)
        assert stored > 0
        with current_runtime(backend) as again:
            turn(again)
        assert migrations_stored(backend) == stored
        assert records(backend) == (2, 4)


def test_a_thread_of_a_future_version_is_refused_naming_both_versions(database: Path) -> None:
    install(database, "future")
    with SQLiteBackend(database) as backend, current_runtime(backend) as runtime:
        before = backend.last_step(THREAD)
        with pytest.raises(StateVersionError, match=r"schema version 3.*version 2") as caught:
            turn(runtime)
        assert (caught.value.found, caught.value.current, caught.value.thread_id) == (3, 2, THREAD)
        assert backend.last_step(THREAD) == before


def test_a_malformed_record_names_the_thread_and_the_turn(database: Path) -> None:
    install(database, "malformed")
    with SQLiteBackend(database) as backend, current_runtime(backend) as runtime:
        with pytest.raises(MalformedStateError, match=f"thread '{THREAD}'.*turn 3") as caught:
            turn(runtime)
        step = damaged_step("malformed")
        assert (caught.value.thread_id, caught.value.turn, caught.value.step) == (THREAD, 3, step)
        assert "thread_state('fixture-thread', turn=2)" in str(caught.value)


def test_the_turns_before_a_malformed_record_stay_loadable(database: Path) -> None:
    install(database, "malformed")
    with SQLiteBackend(database) as backend, current_runtime(backend) as runtime:
        with pytest.raises(MalformedStateError):
            runtime.thread_state(THREAD)
        second = runtime.thread_state(THREAD, turn=2)
        assert len(second["history"]) == 4
        assert second["session_progress"] == {"turn_count": 2}
        assert len(runtime.thread_state(THREAD, turn=1)["history"]) == 2


def test_a_turn_record_that_is_not_one_is_malformed(backend: SQLiteBackend) -> None:
    with current_runtime(backend) as runtime:
        turn(runtime)
    last = backend.last_step(THREAD)
    bad = Event(last + 1, "write", "step", TURN_PATH, {"turns": "two"}, "x", "replace", 0.0)
    backend.append(THREAD, "vandal", last, [bad])
    with current_runtime(backend) as runtime, pytest.raises(MalformedStateError) as caught:
        turn(runtime)
    assert (caught.value.turn, caught.value.step) == (2, last + 1)


def test_a_missing_migration_is_refused_naming_the_versions(database: Path) -> None:
    install(database, "legacy")
    codec = StateCodec(version=2)
    with SQLiteBackend(database) as backend, current_runtime(backend, codec) as runtime:
        with pytest.raises(StateVersionError, match="no migration from version 1 to 2"):
            turn(runtime)
        assert migrations_stored(backend) == 0


def test_a_migration_leaving_a_field_the_schema_lacks_is_refused(database: Path) -> None:
    install(database, "legacy")
    codec = StateCodec(version=2, migrations={1: lambda state: state})
    with (
        SQLiteBackend(database) as backend,
        current_runtime(backend, codec) as runtime,
        pytest.raises(StateVersionError, match="'messages', which is not a field"),
    ):
        turn(runtime)


def test_a_thread_stored_before_versioning_is_version_one(backend: SQLiteBackend) -> None:
    with DurableRun.open(backend, THREAD) as run:
        run.store.write("state", "messages", [{"role": "user", "content": "old"}])
    with current_runtime(backend) as runtime:
        turn(runtime)
        history = runtime.thread_state(THREAD)["history"]
    assert [e["content"] for e in history] == ["old", "next", "v2 reply 1"]


def test_migrations_run_in_order_from_the_threads_version(database: Path) -> None:
    install(database, "legacy")
    seen: list[int] = []

    def two_to_three(state: dict[str, Any]) -> dict[str, Any]:
        seen.append(len(state["history"]))
        return state

    codec = StateCodec(version=3, migrations={**CODEC.migrations, 2: two_to_three})
    with SQLiteBackend(database) as backend:
        runtime = TurnRuntime(CurrentState, [current_reply], backend, codec=codec)
        turn(runtime)
        runtime.close()
    assert seen == [4]


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"version": 0}, "a version is an int >= 1"),
        ({"version": 2, "migrations": {2: lambda s: s}}, r"migrations\[2\]"),
        ({"version": 2, "migrations": {1: "rename"}}, "is not a function"),
    ],
)
def test_a_wrong_codec_is_refused_when_made(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(SchemaError, match=message):
        StateCodec(**kwargs)


def test_fixture_records_are_what_the_runtime_writes_today(tmp_path: Path) -> None:
    """If this fails, the stored format changed: add a codec version and a migration."""
    from weft.persist.codec import decode_event

    def shape(event: Event) -> tuple[Any, ...]:  # steps may skip fields the log never sees
        value = event.value
        if isinstance(value, RunRecord | StepRecord):  # the times of a run are its own
            value = replace(value, began=0, started_at=0.0, duration_ms=None)
        return (event.op, event.kind, event.path, value, event.reducer)

    with SQLiteBackend(tmp_path / "new.db") as backend, current_runtime(backend) as runtime:
        for n in (1, 2, 3):
            turn(runtime, f"message {n}")
        fresh = [shape(logged.event) for logged in backend.history(THREAD)]
    rows = [json.loads(line) for line in (FIXTURES / "current.jsonl").read_text().splitlines()]
    pinned = [shape(decode_event(r["record"], thread_id=THREAD, step=r["step"])) for r in rows]
    assert fresh == pinned


def test_a_threads_records_are_typed_run_records(backend: SQLiteBackend) -> None:
    with current_runtime(backend) as runtime:
        turn(runtime, "one")
        turn(runtime, "two")
    log = RunLog(load_store(backend, THREAD), RUN_ID)
    run = log.run()
    assert run is not None and run.kind == "turns"
    ends = [e.event for e in backend.history(THREAD) if e.event.path == TURN_PATH]
    assert [e.value.result for e in ends] == [1, 2]
    assert [e.value.began for e in ends] == [0, ends[0].seq]  # a turn is (began, its record]
    assert all(e.value.kind == "turn" and e.value.duration_ms >= 0 for e in ends)
    assert ends[-1].seq == backend.last_step(THREAD)
    assert log.get("turn") == ends[-1].value
