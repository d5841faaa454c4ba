"""Hostile values: whatever the store accepts, every backend can save, and what it refuses is
refused when written, with a ``ValueTypeError`` (or ``InvalidKeyError``) naming the key."""

from __future__ import annotations

import dataclasses
import enum
import json
import operator
import sys
from typing import Any

import pydantic
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from weft.errors import (
    CodecError,
    InvalidKeyError,
    ReducerError,
    StoreError,
    ValueTypeError,
    WeftError,
)
from weft.persist.codec import decode_event, encode_event
from weft.store import (
    MAX_DEPTH,
    Event,
    FrozenDict,
    Store,
    TypeRegistry,
    dumps,
    freeze,
    from_jsonable,
    loads,
    reducers,
    to_jsonable,
)
from weft.store.codec import JSON_DEPTH

LONE = "\ud800"
"""A lone surrogate: what JSON's "\\ud800" decodes to, and what UTF-8 cannot hold."""


@dataclasses.dataclass
class Reading:
    label: str
    value: float


class Measure(pydantic.BaseModel):
    value: float
    notes: list[str] = []


class Colour(enum.StrEnum):
    RED = "red"


@dataclasses.dataclass
class Painted:
    colour: Any


TYPES = TypeRegistry()
TYPES.register(Reading, "hostile.Reading")
TYPES.register(Measure, "hostile.Measure")
TYPES.register(Painted, "hostile.Painted")


def nested(depth: int) -> Any:
    """A list nested ``depth`` deep (``nested(1) == []``)."""
    value: Any = []
    for _ in range(depth - 1):
        value = [value]
    return value


# ------------------------------------------------- non-finite floats, everywhere the same


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), float("-inf")])
@pytest.mark.parametrize(
    "make", [lambda x: Reading("t", x), lambda x: Measure(value=x), lambda x: {"r": [x]}]
)
def test_a_non_finite_float_is_refused_inside_registered_types_as_in_plain_values(
    bad: float, make: Any
) -> None:
    store = Store(types=TYPES)
    with pytest.raises(ValueTypeError, match=r"state:r\.(value|r\[0\]): .* is not a JSON number"):
        store.write("state", "r", make(bad))
    assert store.get("state", "r") is None


def test_a_registered_object_that_json_cannot_say_is_refused_when_written() -> None:
    store = Store(types=TYPES)
    with pytest.raises(ValueTypeError, match=r"state:p\.colour: .*Colour inside a registered"):
        store.write("state", "p", Painted(Colour.RED))
    with pytest.raises(ValueTypeError, match=r"state:p\.colour: .*set is not JSON"):
        store.write("state", "p", Painted({1, 2}))
    with pytest.raises(ValueTypeError, match=r"state:p\.colour: dict key 1 is a int"):
        store.write("state", "p", Painted({1: "a"}))
    store.write("state", "p", Painted({"ok": [1, "two"]}))  # what JSON can say is kept
    assert store.value("state", "p") == Painted({"ok": [1, "two"]})


def test_a_sum_that_overflows_to_infinity_is_refused_and_nothing_is_written() -> None:
    store = Store(reducers={"state:total": reducers.add})
    store.write("state", "total", 1e308)
    with pytest.raises(ReducerError, match=r"state:total .*the sum: inf is not a JSON number"):
        store.write("state", "total", 1e308)
    assert store.value("state", "total") == 1e308


def test_a_stored_record_holding_nan_is_refused_on_load_never_changed() -> None:
    record = '{"v":1,"op":"write","kind":"state","path":"x","time":1.0,"value":[1,NaN]}'
    with pytest.raises(WeftError, match="NaN is not a JSON number"):
        decode_event(record, thread_id="t", step=1)
    with pytest.raises(CodecError, match="Infinity is not a JSON number"):
        loads('{"a": Infinity}')


# ------------------------------------------------------ text that UTF-8 cannot hold


@pytest.mark.parametrize(
    ("write", "message"),
    [
        (lambda s: s.write("shared", f"note{LONE}", 1), "lone surrogate"),
        (lambda s: s.write("shared", "k", {"a": [f"x{LONE}"]}), r"shared:k\.a\[0\]: .*lone"),
        (lambda s: s.write("shared", "k", {f"k{LONE}": 1}), "dict key 'k\\\\ud800': .*lone"),
        (lambda s: s.write("shared", "k", 1, source=LONE), "source=.*lone surrogate"),
        (lambda s: s.write("shared", "k", 1, meta={"t": LONE}), r"shared:k meta\.t"),
        (lambda s: s.write_many("shared", {f"a{LONE}": 1}), "lone surrogate"),
        (lambda s: s.write_many("shared", [("a", 1, LONE), ("b", 2, None)]), "source="),
        (lambda s: s.note("shared", "n", {"raw": LONE}), r"note shared:n\.raw"),
        (lambda s: s.note_many("shared", [(f"n{LONE}", 1, None)]), "lone surrogate"),
        (lambda s: s.delta({f"a{LONE}": 1}), "lone surrogate"),
        (lambda s: s.clear(key_prefix=f"shared:{LONE}"), "key_prefix=.*lone"),
        (lambda s: s.declare("state", f"a{LONE}", reducers.append), "lone surrogate"),
    ],
)
def test_text_with_a_lone_surrogate_is_refused_wherever_it_would_be_logged(
    write: Any, message: str
) -> None:
    store = Store()
    with pytest.raises(StoreError, match=message):
        write(store)
    assert store.last_seq == 0


def test_a_source_that_is_not_a_string_is_refused_when_written() -> None:
    store = Store()
    with pytest.raises(StoreError, match="source=5: a source names who wrote"):
        store.write("state", "a", 1, source=5)  # type: ignore[arg-type]
    with pytest.raises(StoreError, match="source=b'x'"):
        Store(name=b"x")  # type: ignore[arg-type]
    assert store.last_seq == 0


@pytest.mark.parametrize("kind", [["state"], None, 5, "State"])
def test_a_kind_that_is_no_kind_is_an_invalid_key_error(kind: Any) -> None:
    store = Store()
    for write in (
        lambda: store.write(kind, "a", 1),
        lambda: store.write_many(kind, {"a": 1}),
        lambda: store.delta({"a": 1}, kind=kind),
        lambda: store.note(kind, "a"),
    ):
        with pytest.raises(InvalidKeyError, match="unknown kind"):
            write()


def test_non_ascii_text_that_utf8_holds_is_kept() -> None:
    store = Store()
    store.write("shared", "café ☕ 😀", {"naïve": ["ü", "😀"]}, source="agent é")
    assert store.value("shared", "café ☕ 😀") == {"naïve": ["ü", "😀"]}


# ------------------------------------------------------------------ huge integers


def test_an_int_past_pythons_digit_limit_is_refused_when_written() -> None:
    store = Store()
    limit = 10**4300
    store.write("state", "big", limit - 1)  # 4,300 nines: JSON text and back
    assert loads(dumps(store.value("state", "big"))) == limit - 1
    for value in (limit, -limit, {"n": [limit]}):
        with pytest.raises(ValueTypeError, match="int of more than 4300 digits"):
            store.write("state", "big", value)
    assert store.value("state", "big") == limit - 1


# -------------------------------------------------------------------------- nesting


def test_values_nested_to_the_limit_are_kept_and_one_deeper_is_refused_naming_the_key() -> None:
    store = Store()
    store.write("state", "deep", nested(MAX_DEPTH))
    with pytest.raises(ValueTypeError, match=r"state:deep\[0\]\[0\].*nested more than 100 deep"):
        store.write("state", "deep", nested(MAX_DEPTH + 1))
    value: Any = {}
    for _ in range(MAX_DEPTH + 1):
        value = {"a": value}
    with pytest.raises(ValueTypeError, match=r"state:deep\.a\.a.*nested more than 100 deep"):
        store.write("state", "deep", value)


def test_a_value_deeper_than_the_recursion_limit_is_a_store_error_not_a_recursion_error() -> None:
    deep = nested(sys.getrecursionlimit() * 5)
    store = Store()
    for write in (
        lambda: store.write("shared", "deep", deep),
        lambda: store.write_many("shared", [("deep", deep, None), ("b", 1, None)]),
        lambda: store.note("shared", "deep", deep),
        lambda: store.delta({"deep": deep}),
        lambda: freeze(deep),
    ):
        with pytest.raises(ValueTypeError, match="nested more than 100 deep"):
            write()


def test_registered_objects_count_as_a_level_of_nesting() -> None:
    store = Store(types=TYPES)
    store.write("state", "p", Painted(nested(MAX_DEPTH - 1)))
    with pytest.raises(ValueTypeError, match=r"state:p\.colour\[0\]"):
        store.write("state", "p", Painted(nested(MAX_DEPTH)))


def test_the_decoders_refuse_json_nested_past_their_limit_with_a_codec_error() -> None:
    deep_json = "[" * 100_000 + "]" * 100_000  # past the JSON parser
    with pytest.raises(CodecError, match="nests too deeply"):
        loads(deep_json)
    with pytest.raises(CodecError, match=f"deeper than {JSON_DEPTH} levels"):
        from_jsonable(nested(JSON_DEPTH + 5))
    with pytest.raises(CodecError, match=f"deeper than {JSON_DEPTH} levels"):
        loads(json.dumps(nested(JSON_DEPTH + 5)))
    record = '{"v":1,"op":"write","kind":"state","path":"x","time":1.0,"value":' + deep_json + "}"
    with pytest.raises(WeftError, match="nests too deeply"):
        decode_event(record, thread_id="t", step=1)


def test_a_value_grown_past_the_codec_by_nesting_stored_values_is_refused_when_encoded() -> None:
    store = Store()
    store.write("state", "v", nested(MAX_DEPTH))
    for _ in range(3):  # each write wraps the stored (frozen, checked) value once more
        store.write("state", "v", [store.value("state", "v")] * 1)
        store.write("state", "v", [[store.value("state", "v")]])
    value = store.value("state", "v")
    for _ in range(JSON_DEPTH):
        value = freeze([value])
    event = Event(1, "write", "state", "v", value, None, "replace", 1.0, None)
    with pytest.raises(ValueTypeError, match=r"state:v: .*deeper than 240 levels of JSON"):
        encode_event(event)
    with pytest.raises(ValueTypeError, match="deeper than 240 levels"):
        to_jsonable(value)


# ------------------------------------------------------- events applied from outside


def test_events_applied_from_outside_are_checked_as_writes_are() -> None:
    store = Store()
    for event in (
        Event(1, "write", "state", "x", float("nan"), None, "replace", 1.0, None),
        Event(1, "write", "state", f"x{LONE}", 1, None, "replace", 1.0, None),
        Event(1, "write", "state", "x", 1, 7, "replace", 1.0, None),
        Event(1, "note", "state", "x", {"a": nested(MAX_DEPTH + 1)}, None, "replace", 1.0, None),
    ):
        with pytest.raises(StoreError):
            store.apply([event])
    store.apply([Event(1, "write", "state", "x", {"a": [1]}, None, "replace", 1.0, None)])
    assert isinstance(store.value("state", "x"), FrozenDict)


# ---------------------------------------------- the property: accepted means savable

_leaf = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.integers(min_value=10**4299, max_value=10**4301),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(st.characters(codec=None, blacklist_categories=())),
    st.sampled_from([LONE, "\udfff", "a\x00b", "😀", "\ud83d\ude00"]),
    st.binary(max_size=8),
    st.sets(st.integers(), max_size=2),
    st.builds(object),
)
_values = st.recursive(
    _leaf,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.tuples(inner, inner),
        st.dictionaries(st.one_of(st.text(), st.integers(), st.just(LONE)), inner, max_size=4),
        st.builds(Reading, st.text(), st.floats()),
        st.builds(Painted, inner),
    ),
    max_leaves=12,
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    path=st.one_of(st.text(max_size=6), st.sampled_from([f"a{LONE}", ""])),
    value=_values,
    source=st.one_of(st.none(), st.text(max_size=4), st.just(LONE)),
)
def test_what_the_store_accepts_every_encoder_saves_and_reads_back_unchanged(
    path: str, value: Any, source: str | None
) -> None:
    store = Store(types=TYPES)
    try:
        entry = store.write("shared", path, value, source=source)
    except WeftError:
        assert store.last_seq == 0
        return
    event = store.events()[-1]
    text = encode_event(event, types=TYPES)
    text.encode("utf-8")  # what SQLite and PostgreSQL are handed
    back = decode_event(text, thread_id="t", step=event.seq, types=TYPES)
    assert encode_event(back, types=TYPES) == text
    assert loads(dumps(entry.value, TYPES), TYPES) == back.value
    if "hostile." not in text:  # a registered dataclass keeps a tuple field as a JSON list
        assert back == event
        assert back.value == entry.value


def test_the_write_path_takes_plain_values_as_before() -> None:
    store = Store(reducers={"state:log": operator.add})
    store.write("state", "log", [1])
    store.write("state", "log", [2.5, "é", None, True, {"k": -(10**30)}])
    assert store.value("state", "log") == [1, 2.5, "é", None, True, {"k": -(10**30)}]
