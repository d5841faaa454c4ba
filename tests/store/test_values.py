"""What a value may be: JSON, registered models and dataclasses, and their JSON form."""

from __future__ import annotations

import copy
import dataclasses
import enum
from datetime import UTC, date, datetime

import pytest
from pydantic import BaseModel

from weft.errors import CodecError, ValueTypeError
from weft.store import (
    DELETE,
    FrozenDict,
    FrozenList,
    Store,
    TypeRegistry,
    dumps,
    freeze,
    loads,
    thaw,
    value_bytes,
)


class Finding(BaseModel):
    title: str
    score: float


@dataclasses.dataclass
class Source:
    url: str
    tags: list[str]


@dataclasses.dataclass(frozen=True)
class Point:
    x: int
    y: int


class Color(enum.Enum):
    RED = "red"


@pytest.fixture
def types() -> TypeRegistry:
    registry = TypeRegistry()
    registry.register(Finding, name="Finding")
    registry.register(Source, name="Source")
    registry.register(Point, name="Point")
    return registry


def test_unregistered_model_is_refused_with_the_fix(types: TypeRegistry) -> None:
    class Stray(BaseModel):
        x: int

    with pytest.raises(ValueTypeError, match=r"state:s.*Stray.*register_type"):
        Store(types=types).write("state", "s", Stray(x=1))


def test_registered_model_and_dataclass_are_stored_and_round_trip(types: TypeRegistry) -> None:
    store = Store(types=types)
    value = {"finding": Finding(title="t", score=0.5), "src": [Source("u", ["a"])]}
    store.write("state", "v", value)
    text = dumps(store.value("state", "v"), types)
    assert '"__weft__":"Finding"' in text
    assert loads(text, types) == value


def test_mutable_dataclass_is_copied_on_write(types: TypeRegistry) -> None:
    store = Store(types=types)
    source = Source("u", ["a"])
    store.write("state", "src", source)
    source.tags.append("b")
    assert store.value("state", "src").tags == ["a"]


def test_frozen_dataclass_is_kept_as_it_is(types: TypeRegistry) -> None:
    point = Point(1, 2)
    store = Store(types=types)
    store.write("state", "p", point)
    assert store.value("state", "p") is point


def test_unknown_type_tag_is_a_clear_error_and_nothing_is_imported() -> None:
    text = '{"__weft__": "os.system", "data": {"command": "true"}}'
    with pytest.raises(CodecError, match=r"unknown type 'os.system'.*register_type"):
        loads(text, TypeRegistry())


def test_malformed_json_is_a_codec_error() -> None:
    with pytest.raises(CodecError, match="not valid JSON"):
        loads("{not json")


def test_user_dict_with_the_tag_key_cannot_pose_as_a_type() -> None:
    value = {"__weft__": "Finding", "data": {"title": "x"}}
    assert loads(dumps(freeze(value))) == value


def test_datetimes_bytes_and_delete_round_trip() -> None:
    value = {
        "at": datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC),
        "d": date(2026, 1, 2),
        "raw": b"\x00\xff",
        "gone": DELETE,
    }
    assert loads(dumps(freeze(value, allow_delete=True))) == value


def test_enum_members_are_stored_as_their_value() -> None:
    assert freeze({"c": Color.RED}) == {"c": "red"}


def test_tuples_become_lists() -> None:
    assert freeze((1, (2, 3))) == [1, [2, 3]]


def test_value_bytes_counts_utf8_bytes_not_characters() -> None:
    assert value_bytes("é") == len('"é"'.encode())
    assert value_bytes("日本") == 2 + 6


def test_frozen_containers_equal_plain_ones_and_thaw_to_mutable_copies() -> None:
    frozen = freeze({"a": [1, {"b": 2}]})
    assert isinstance(frozen, FrozenDict) and isinstance(frozen["a"], FrozenList)
    assert frozen == {"a": [1, {"b": 2}]}
    thawed = thaw(frozen)
    thawed["a"].append(3)
    assert frozen == {"a": [1, {"b": 2}]}
    assert type(thawed) is dict and type(thawed["a"]) is list


@pytest.mark.parametrize(
    "mutate",
    [
        lambda d: d.update(x=1),
        lambda d: d.pop("a"),
        lambda d: d.setdefault("x", 1),
        lambda d: d.clear(),
        lambda d: d["a"].extend([1]),
        lambda d: d["a"].insert(0, 1),
        lambda d: d["a"].sort(),
    ],
)
def test_every_mutating_method_of_a_stored_value_raises(mutate) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(TypeError, match="read-only"):
        mutate(freeze({"a": [2, 1]}))


def test_copy_and_deepcopy_of_frozen_values_work() -> None:
    frozen = freeze({"a": [1]})
    assert copy.deepcopy(frozen) == frozen
    assert copy.copy(frozen) == frozen


def test_register_refuses_plain_classes() -> None:
    class Plain:
        pass

    with pytest.raises(ValueTypeError, match="only pydantic models and dataclasses"):
        TypeRegistry().register(Plain)


def test_one_name_cannot_register_two_types() -> None:
    registry = TypeRegistry()
    registry.register(Finding, name="X")
    with pytest.raises(ValueTypeError, match="already registered"):
        registry.register(Source, name="X")


@dataclasses.dataclass(frozen=True)
class Tagged:
    tags: tuple[str, ...]


def test_a_registered_object_with_a_tuple_field_encodes() -> None:
    types = TypeRegistry()
    types.register(Tagged, name="Tagged")
    store = Store(types=types)
    store.write("state", "t", Tagged(tags=("a", "b")))
    assert '"tags":["a","b"]' in dumps(store.value("state", "t"), types)
