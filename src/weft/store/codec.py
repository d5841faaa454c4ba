"""JSON encoding of stored values, with a registry of known types and no pickle.

Plain JSON values encode as themselves. Everything else that the store
accepts is written as a tagged object ``{"__weft__": TAG, "data": ...}``:
registered pydantic models and dataclasses (TAG is the registered name; weft's own
records in ``weft.store.records`` put their fields beside the tag instead of in "data"),
``datetime``/``date`` (ISO 8601), ``bytes`` (base64), the ``DELETE`` marker,
and a user dict that itself has a ``"__weft__"`` key (TAG ``"dict"``), so no
user data can be mistaken for a tag. Decoding looks a TAG up in the registry
and never imports anything named in the data.
"""

from __future__ import annotations

import base64
import dataclasses
import json
from datetime import date, datetime
from typing import Any, Final

from weft.errors import CodecError, ValueTypeError
from weft.store.values import (
    BUILTIN_TYPES,
    DELETE,
    FrozenDict,
    FrozenList,
    TypeRegistry,
    registry,
    thaw,
)

TAG: Final = "__weft__"


def to_jsonable(value: Any, types: TypeRegistry = registry) -> Any:
    """The JSON-ready form of a stored value (tagged where plain JSON cannot say it)."""
    cls = type(value)
    if cls in (str, int, float, bool) or value is None:
        return value
    if isinstance(value, dict):
        body = {key: to_jsonable(item, types) for key, item in value.items()}
        return {TAG: "dict", "data": body} if TAG in value else body
    if isinstance(value, (list, tuple)):  # tuples inside registered objects: JSON arrays
        return [to_jsonable(item, types) for item in value]
    if value is DELETE:
        return {TAG: "delete"}
    if cls is datetime:
        return {TAG: "datetime", "data": value.isoformat()}
    if cls is date:
        return {TAG: "date", "data": value.isoformat()}
    if cls is bytes:
        return {TAG: "bytes", "data": base64.b64encode(value).decode("ascii")}
    name = types.name_of(cls)
    if name is not None:
        if dataclasses.is_dataclass(value):
            # a field still at its plain default is left out: the class fills it in on load
            data = {}
            for f in dataclasses.fields(value):
                item = getattr(value, f.name)
                if item is not f.default or f.default is dataclasses.MISSING:
                    data[f.name] = item
        else:
            data = value.model_dump(mode="python")
        if cls in BUILTIN_TYPES:  # weft's own records: their fields beside the tag
            return {TAG: name, **{key: to_jsonable(item, types) for key, item in data.items()}}
        return {TAG: name, "data": to_jsonable(data, types)}
    raise ValueTypeError(
        f"a {cls.__qualname__} cannot be encoded as JSON; register it with "
        "weft.store.register_type(cls) or convert it to plain data"
    )


def from_jsonable(data: Any, types: TypeRegistry = registry) -> Any:
    """Turn the JSON-ready form back into frozen stored values."""
    if isinstance(data, list):
        return FrozenList([from_jsonable(item, types) for item in data])
    if not isinstance(data, dict):
        return data
    tag = data.get(TAG)
    if tag is None:
        return FrozenDict({key: from_jsonable(item, types) for key, item in data.items()})
    body: Any = data.get("data")
    try:
        if tag == "dict":
            return FrozenDict({k: from_jsonable(v, types) for k, v in body.items()})
        if tag == "delete":
            return DELETE
        if tag == "datetime":
            return datetime.fromisoformat(body)
        if tag == "date":
            return date.fromisoformat(body)
        if tag == "bytes":
            return base64.b64decode(body.encode("ascii"), validate=True)
    except (AttributeError, TypeError, ValueError) as exc:
        raise CodecError(f"malformed {tag!r} record {data!r}: {exc}") from exc
    cls = types.type_named(tag) if isinstance(tag, str) else None
    if cls is not None and cls in BUILTIN_TYPES and "data" not in data:
        body = {key: item for key, item in data.items() if key != TAG}
    if cls is None:
        raise CodecError(
            f"unknown type {tag!r} in stored data; register the class under that name with "
            "weft.store.register_type(cls, name=...) before loading"
        )
    fields = thaw(from_jsonable(body, types))  # the object owns plain, mutable fields
    try:
        if dataclasses.is_dataclass(cls):
            return cls(**fields)
        return cls.model_validate(fields)  # type: ignore[attr-defined]
    except Exception as exc:
        raise CodecError(f"stored {tag!r} record does not fit the class: {exc}") from exc


def dumps(value: Any, types: TypeRegistry = registry) -> str:
    """Compact JSON text of a stored value."""
    return json.dumps(
        to_jsonable(value, types), ensure_ascii=False, separators=(",", ":"), allow_nan=False
    )


def loads(text: str | bytes, types: TypeRegistry = registry) -> Any:
    """Stored value from JSON text written by ``dumps``."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise CodecError(f"stored value is not valid JSON: {exc}") from exc
    return from_jsonable(data, types)


def value_bytes(value: Any, types: TypeRegistry = registry) -> int:
    """Size of the value's JSON in UTF-8 bytes (what a model budgets reads by)."""
    return len(dumps(value, types).encode("utf-8"))
