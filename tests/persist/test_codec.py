"""Versioned records: every type the store keeps round-trips; anything else is a clear error."""

from __future__ import annotations

import dataclasses
import json
from datetime import UTC, date, datetime

import pydantic
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from persist_helpers import PG

from weft.errors import CodecError, CorruptRecordError, FutureFormatError
from weft.persist import Backend, DurableRun, SQLiteBackend, codec
from weft.persist.codec import (
    FORMAT_VERSION,
    decode_event,
    decode_snapshot,
    decode_value,
    encode_event,
    encode_snapshot,
    encode_value,
)
from weft.persist.snapshot import capture
from weft.store import DELETE, Event, StepRecord, Store, TypeRegistry, freeze


@dataclasses.dataclass
class Point:
    x: int
    y: int


class Note(pydantic.BaseModel):
    title: str
    tags: list[str]


@pytest.fixture
def types() -> TypeRegistry:
    registry = TypeRegistry()
    registry.register(Point, name="test.Point")
    registry.register(Note, name="test.Note")
    return registry


def test_every_known_type_round_trips(types: TypeRegistry) -> None:
    value = {
        "point": Point(1, 2),
        "note": Note(title="t", tags=["a"]),
        "when": datetime(2024, 5, 1, 12, 0, tzinfo=UTC),
        "day": date(2024, 5, 1),
        "blob": b"\x00\xff",
        "big": 2**80,
        "text": "naïve ☃",
        "__weft__": "not a tag",
    }
    event = Event(7, "write", "state", "x", value, "me", "merge", 12.5, {"title": "T"})
    text = encode_event(event, types)
    assert json.loads(text)["v"] == FORMAT_VERSION
    back = decode_event(text, thread_id="t", step=7, types=types)
    assert back == event
    assert isinstance(back.value["point"], Point)


def test_an_event_record_holds_only_the_delta(types: TypeRegistry) -> None:
    record = json.loads(encode_event(Event(1, "write", "state", "m", "hi", None, "append", 1.0)))
    assert record == {"v": 1, "op": "write", "kind": "state", "path": "m", "time": 1.0,
                      "value": "hi", "reducer": "append"}  # fmt: skip


def test_delete_marker_round_trips() -> None:
    event = Event(1, "write", "state", "cfg", {"gone": DELETE}, None, "merge", 1.0)
    assert decode_event(encode_event(event), thread_id="t", step=1).value["gone"] is DELETE


def test_an_unknown_type_names_the_tag_the_step_and_how_to_register() -> None:
    evil = {"__weft__": "os.system", "data": {"cmd": "rm -rf /"}}
    text = json.dumps(
        {"v": 1, "op": "write", "kind": "state", "path": "x", "time": 1.0, "value": evil}
    )
    with pytest.raises(CodecError, match=r"step 4 of thread 't'.*'os\.system'.*register_type"):
        decode_event(text, thread_id="t", step=4)


def test_a_future_version_names_the_version_found_and_supported() -> None:
    text = json.dumps({"v": 2, "op": "write", "kind": "state", "path": "x", "time": 1.0})
    with pytest.raises(
        FutureFormatError, match=r"step 3 of thread 't' has format version 2.*up to 1"
    ):
        decode_event(text, thread_id="t", step=3)


@pytest.mark.parametrize(
    "text",
    [
        "{not json",
        "[1, 2]",
        '{"op": "write"}',
        '{"v": "1", "op": "write", "kind": "state", "path": "x", "time": 1}',
        '{"v": 1, "op": "explode", "kind": "state", "path": "x", "time": 1}',
        '{"v": 1, "op": "write", "kind": "state", "path": "x"}',
    ],
)
def test_a_malformed_record_is_corrupt_naming_thread_and_step(text: str) -> None:
    with pytest.raises(CorruptRecordError, match=r"step 9 of thread 'chat'"):
        decode_event(text, thread_id="chat", step=9)


def test_snapshots_round_trip_entries_and_reducers(types: TypeRegistry) -> None:
    store = Store(types=types, reducers={"state:log": __import__("operator").add})
    store.write("state", "log", [Point(0, 0)], meta={"title": "pts"})
    store.write("state", "log", [Point(1, 1)])
    store.write("shared", "n", 3, source="agent")
    snapshot = capture(store)
    back = decode_snapshot(encode_snapshot(snapshot, types), thread_id="t", step=3, types=types)
    assert back == snapshot
    assert back.reducers == {"state:log": "operator.add"}


def test_a_future_snapshot_is_refused() -> None:
    with pytest.raises(FutureFormatError, match="snapshot at step 5 of thread 't'"):
        decode_snapshot('{"v": 9, "step": 5}', thread_id="t", step=5)


def test_memory_values_are_versioned_records(types: TypeRegistry) -> None:
    text = encode_value(Point(3, 4), types)
    assert json.loads(text)["v"] == 1
    assert decode_value(text, where="x", types=types) == Point(3, 4)
    with pytest.raises(FutureFormatError, match="entry k"):
        decode_value('{"v": 5, "value": 1}', where="entry k")


# ----------------------------------------------------- bad records inside a database


def _poke(backend: Backend, thread: str, step: int, record: str) -> None:
    """Overwrite one stored event record, as a damaged disk or a hand edit would."""
    if isinstance(backend, SQLiteBackend):
        with backend._guard("test") as conn:
            conn.execute(
                "UPDATE weft_events SET record = ? WHERE seq = "
                "(SELECT (num << 32) + ? FROM weft_threads WHERE thread_id = ?)",
                (record, step, thread),
            )
        return
    import psycopg

    with psycopg.connect(PG, autocommit=True) as conn:
        conn.execute(
            f'UPDATE "{backend.schema}".events SET record = %s WHERE thread_id = %s AND step = %s',  # type: ignore[attr-defined]
            (record, thread, step),
        )


@pytest.mark.parametrize("backend_kind", ["sqlite", "postgres"], indirect=True)
@pytest.mark.parametrize(
    ("record", "error"),
    [
        ("garbage", CorruptRecordError),
        ('{"v": 3, "op": "write", "kind": "state", "path": "x", "time": 1}', FutureFormatError),
        ('{"v": 1, "op": "write", "kind": "state", "path": "x", "time": 1, '
         '"value": {"__weft__": "evil.Type", "data": {}}}', CodecError),
    ],
)  # fmt: skip
def test_a_bad_record_fails_its_thread_alone(
    backend: Backend, record: str, error: type[Exception]
) -> None:
    for thread in ("good", "bad"):
        backend.append(thread, "r1", 0, [
            Event(i, "write", "state", f"k{i}", i, None, "replace", 1.0) for i in (1, 2, 3)
        ])  # fmt: skip
    _poke(backend, "bad", 2, record)
    with pytest.raises(error, match=r"step 2 of thread 'bad'"):
        backend.load("bad")
    assert backend.load("bad", step=1).to_store().value("state", "k1") == 1  # before it: fine
    assert backend.load("good").to_store().to_dict() == {
        "state:k1": 1,
        "state:k2": 2,
        "state:k3": 3,
    }
    assert len(backend.history("bad", upto=1)) == 1


# ------------------------------------------------- the fast path writes the same JSON

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=8),
    st.binary(max_size=6),
    st.datetimes(timezones=st.just(UTC)),
    st.sampled_from(["__weft__", '"__weft__"']),
)
values = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.dictionaries(st.sampled_from(["a", "b", "__weft__", "data"]), inner, max_size=3),
    ),
    max_leaves=12,
)


@given(values)
@settings(max_examples=300, deadline=None)
def test_any_stored_value_round_trips_and_both_encoders_agree(value: object) -> None:
    frozen = freeze(value)
    event = Event(3, "write", "state", "x", frozen, "s", "replace", 1.5, None)
    fast = encode_event(event)
    assert decode_event(fast, thread_id="t", step=3) == event
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(codec, "_orjson", None)
        slow = encode_event(event)
    assert json.loads(fast) == json.loads(slow)


def _poke_snapshot(backend: Backend, thread: str, record: str) -> None:
    if isinstance(backend, SQLiteBackend):
        with backend._guard("test") as conn:
            conn.execute(
                "UPDATE weft_snapshots SET record = ? WHERE thread_id = ?", (record, thread)
            )
        return
    import psycopg

    with psycopg.connect(PG, autocommit=True) as conn:
        schema = backend.schema  # type: ignore[attr-defined]
        conn.execute(
            f'UPDATE "{schema}".snapshots SET record = %s WHERE thread_id = %s', (record, thread)
        )


@pytest.mark.parametrize("backend_kind", ["sqlite", "postgres"], indirect=True)
def test_a_corrupt_snapshot_is_rebuilt_from_the_log(
    backend: Backend, caplog: pytest.LogCaptureFixture
) -> None:
    with DurableRun.open(backend, "t", snapshot_every=5) as run:
        for i in range(12):
            run.store.write("state", f"k{i}", i)
        whole = run.store.to_dict()
    assert backend.load("t").snapshot is not None
    _poke_snapshot(backend, "t", "{torn")
    checkpoint = backend.load("t")
    assert checkpoint.snapshot is None and len(checkpoint.events) == 12
    assert checkpoint.to_store().to_dict() == whole
    assert "loading thread 't' from its events instead" in caplog.text
    backend.prune("t", keep_last=2)  # now the snapshot is the only base: no way around it
    _poke_snapshot(backend, "t", "{torn")
    with pytest.raises(CorruptRecordError, match="snapshot at step 10 of thread 't'"):
        backend.load("t")


def test_a_record_holding_a_user_dict_with_the_tag_key_round_trips() -> None:
    from weft.persist.codec import decode_event, encode_event
    from weft.store import Event, StepRecord

    tricky = StepRecord(kind="node", result={"__weft__": "weft.StepRecord", "x": 1})
    text = encode_event(Event(3, "write", "step", "r/n#0", tricky, "n#0", "replace", 1.0))
    back = decode_event(text, thread_id="t", step=3)
    assert back.value == tricky and back.value.result == {"__weft__": "weft.StepRecord", "x": 1}
    plain = StepRecord(kind="node", result={"x": 1})
    text = encode_event(Event(4, "write", "step", "r/n#1", plain, "n#1", "replace", 1.0))
    assert '"__weft__":"weft.StepRecord","result"' in text  # the default kind left out
    assert decode_event(text, thread_id="t", step=4).value == plain


@given(scalars, st.sampled_from([None, "why"]), st.integers(min_value=0, max_value=2**70))
@settings(max_examples=200, deadline=None)
def test_a_step_record_round_trips_and_both_encoders_agree(
    result: object, flag: str | None, writes: int
) -> None:
    """A node's commit ends with its step record: its fast path writes what the tagged
    path writes, and falls back to it for anything that is no scalar."""
    record = StepRecord(result=freeze(result), flag=flag, writes=writes, started_at=2.5)
    event = Event(7, "write", "step", "run-1/n0#0", record, "n0#0", "replace", 1.5, None)
    fast = encode_event(event)
    assert decode_event(fast, thread_id="t", step=7) == event
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(codec, "_orjson", None)
        slow = encode_event(event)
    assert json.loads(fast) == json.loads(slow)


def test_the_step_record_writer_knows_every_field() -> None:
    """A step record is written by hand on the hot path: each field, set alone, is written
    as the tagged path writes it, and a new field of ``StepRecord`` fails here first."""
    samples: dict[str, object] = {
        "kind": "task",
        "label": "n0",
        "result": 5,
        "flag": "Terminate",
        "tuple_result": True,
        "committed": False,
        "writes": 3,
        "began": 4,
        "started_at": 1.5,
        "duration_ms": 0.25,
    }
    changes = (Event(1, "write", "state", "x", 1, "n0", "replace", 1.0, None),)
    assert {*samples, "changes"} == {f.name for f in dataclasses.fields(StepRecord)}
    for record in [
        *(StepRecord(**{name: value}) for name, value in samples.items()),  # type: ignore[arg-type]
        StepRecord(changes=changes, committed=False),
    ]:
        event = Event(2, "write", "step", "run-1/n0#0", record, "n0#0", "replace", 1.5, None)
        fast = encode_event(event)
        assert decode_event(fast, thread_id="t", step=2) == event
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(codec, "_orjson", None)
            assert json.loads(fast) == json.loads(encode_event(event))
