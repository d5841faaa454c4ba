"""JSON encoding of stored values, with a registry of known types and no pickle.

Plain JSON values encode as themselves. Everything else that the store
accepts is written as a tagged object ``{"__weft__": TAG, "data": ...}``:
registered pydantic models and dataclasses (TAG is the registered name; weft's own
records in ``weft.store.records`` put their fields beside the tag instead of in "data"),
``datetime``/``date`` (ISO 8601), ``bytes`` (base64), the ``DELETE`` marker,
and a user dict that itself has a ``"__weft__"`` key (TAG ``"dict"``), so no
user data can be mistaken for a tag. Decoding looks a TAG up in the registry
and never imports anything named in the data.

What the store holds is checked when written (``weft.store.values.freeze``), so it always
encodes. The codec still refuses on its own, with a ``ValueTypeError`` or ``CodecError``
rather than a crash: JSON nested deeper than ``JSON_DEPTH`` levels (a value can grow past
``MAX_DEPTH`` only by nesting frozen values already stored, one write at a time), and, when
reading, what it would not write (``NaN``, a lone surrogate, an int past Python's limit).
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
    MAX_DEPTH,
    FrozenDict,
    FrozenList,
    TypeRegistry,
    registry,
    thaw,
)

TAG: Final = "__weft__"
JSON_DEPTH: Final = 240
"""The deepest JSON of one value the codec writes or reads: past ``2 * MAX_DEPTH`` (a tagged
object takes two levels), below orjson's 254 with the few levels of the record around it,
and a recursion Python takes from deep inside a run."""


def to_jsonable(value: Any, types: TypeRegistry = registry, depth: int = 0) -> Any:
    """The JSON-ready form of a stored value (tagged where plain JSON cannot say it).
    ``depth``: the JSON levels around ``value`` (past ``JSON_DEPTH``: ``ValueTypeError``)."""
    cls = type(value)
    if cls in (str, int, float, bool) or value is None:
        return value
    if depth >= JSON_DEPTH:
        raise ValueTypeError(
            f"the value nests deeper than {JSON_DEPTH} levels of JSON, which weft does not "
            f"write (values are checked against weft.store.MAX_DEPTH = {MAX_DEPTH} when "
            "written; this one grew by nesting stored values); flatten it"
        )
    depth += 1
    if isinstance(value, dict):
        if TAG in value:
            depth += 1
        body = {key: to_jsonable(item, types, depth) for key, item in value.items()}
        return {TAG: "dict", "data": body} if TAG in value else body
    if isinstance(value, (list, tuple)):  # tuples inside registered objects: JSON arrays
        return [to_jsonable(item, types, depth) for item in value]
    if value is DELETE:
        return {TAG: "delete"}
    if cls is datetime or cls is date:
        return {TAG: cls.__name__, "data": value.isoformat()}
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
            fields = {key: to_jsonable(item, types, depth) for key, item in data.items()}
            return {TAG: name, **fields}
        return {TAG: name, "data": to_jsonable(data, types, depth)}
    raise ValueTypeError(
        f"a {cls.__qualname__} cannot be encoded as JSON; register it with "
        "weft.store.register_type(cls) or convert it to plain data"
    )


def from_jsonable(data: Any, types: TypeRegistry = registry, depth: int = 0) -> Any:
    """Turn the JSON-ready form back into frozen stored values (``CodecError`` past
    ``JSON_DEPTH`` levels: weft never writes that)."""
    # JSON's scalars are taken as they are, without a call each, and a container of
    # scalars only is copied whole: a loaded thread's history is mostly small dicts of
    # strings (a snapshot of 2,000 messages: its values decoded in ~1/2 of the time)
    if isinstance(data, list):
        if depth >= JSON_DEPTH:
            raise CodecError(_TOO_DEEP)
        for item in data:
            if item.__class__ not in _SCALARS:
                return FrozenList(_items(data, types, depth + 1))
        return FrozenList(data)
    if not isinstance(data, dict):
        return data
    if depth >= JSON_DEPTH:
        raise CodecError(_TOO_DEEP)
    depth += 1
    tag = data.get(TAG)
    if tag is None:
        for item in data.values():
            if item.__class__ not in _SCALARS:
                return FrozenDict(_fields(data, types, depth))
        return FrozenDict(data)
    body: Any = data.get("data")
    try:
        if tag == "dict":
            return FrozenDict(_fields(body, types, depth + 1))
        if tag == "delete":
            return DELETE
        if tag == "datetime":
            return datetime.fromisoformat(body)
        if tag == "date":
            return date.fromisoformat(body)
        if tag == "bytes":
            return base64.b64decode(body.encode("ascii"), validate=True)
    except (AttributeError, TypeError, ValueError) as exc:
        raise CodecError(f"malformed {tag!r} record {str(data)[:200]}: {exc}") from exc
    cls = types.type_named(tag) if isinstance(tag, str) else None
    if cls is not None and cls in BUILTIN_TYPES and "data" not in data:
        body = {key: item for key, item in data.items() if key != TAG}
        depth -= 1  # the fields are beside the tag
    if cls is None:
        raise CodecError(
            f"unknown type {tag!r} in stored data; register the class under that name with "
            "weft.store.register_type(cls, name=...) before loading"
        )
    fields = thaw(from_jsonable(body, types, depth))  # the object owns plain, mutable fields
    try:
        if dataclasses.is_dataclass(cls):
            return cls(**fields)
        return cls.model_validate(fields)  # type: ignore[attr-defined]
    except Exception as exc:
        raise CodecError(f"stored {tag!r} record does not fit the class: {exc}") from exc


_SCALARS: Final = frozenset({str, int, float, bool, type(None)})
_TOO_DEEP: Final = f"the stored value nests deeper than {JSON_DEPTH} levels of JSON"


def _items(data: list[Any], types: TypeRegistry, depth: int) -> list[Any]:
    """``from_jsonable`` of a list's items (a function apart: a comprehension inside
    ``from_jsonable`` would make every call of it set up cells for ``types`` and ``depth``)."""
    return [
        item if item.__class__ in _SCALARS else from_jsonable(item, types, depth) for item in data
    ]


def _fields(data: dict[str, Any], types: TypeRegistry, depth: int) -> dict[str, Any]:
    """``from_jsonable`` of a dict's values (see ``_items``)."""
    return {
        key: item if item.__class__ in _SCALARS else from_jsonable(item, types, depth)
        for key, item in data.items()
    }


def dumps(value: Any, types: TypeRegistry = registry) -> str:
    """Compact JSON text of a stored value (``ValueTypeError`` for what JSON cannot say)."""
    return json_text(to_jsonable(value, types))


def json_text(data: Any) -> str:
    """Compact JSON text of plain (already tagged) data, or ``ValueTypeError`` for what
    JSON, or UTF-8, cannot say: every backend can save what this returns."""
    try:
        text = json.dumps(data, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
        if not text.isascii():
            text.encode("utf-8")  # a lone surrogate: no backend could save the text
    except (ValueError, RecursionError) as exc:  # UnicodeEncodeError is a ValueError
        raise ValueTypeError(f"the value cannot be written as JSON: {exc}") from None
    return text


def loads(text: str | bytes, types: TypeRegistry = registry) -> Any:
    """Stored value from JSON text written by ``dumps`` (``CodecError`` for anything else)."""
    return from_jsonable(parse(text, "the stored value"), types)


def parse(text: str | bytes, what: str = "the text") -> Any:
    """The JSON value of ``text``, as strict as weft writes it, or ``CodecError`` saying why
    ``what`` is not: ``NaN`` and ``Infinity`` (not JSON), a lone surrogate, an int past
    Python's limit, or nesting past what the parser takes."""
    try:
        if not isinstance(text, str):
            text = bytes(text).decode("utf-8")
        data = _DECODER.decode(text)
        if "\\ud" in text or "\\uD" in text:  # a surrogate escape: a pair, or a lone one?
            json.dumps(data, ensure_ascii=False).encode("utf-8")
    except RecursionError:
        raise CodecError(f"{what} nests too deeply to be read as JSON") from None
    except (ValueError, TypeError) as exc:
        raise CodecError(f"{what} is not valid JSON: {exc}") from None
    return data


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


_DECODER: Final = json.JSONDecoder(parse_constant=_no_constant)


def value_bytes(value: Any, types: TypeRegistry = registry) -> int:
    """Size of the value's JSON in UTF-8 bytes (what a model budgets reads by)."""
    return len(dumps(value, types).encode("utf-8"))
