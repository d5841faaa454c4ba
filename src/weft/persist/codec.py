"""Versioned records: how events, snapshots and memory values are written to a backend.

Every record is one JSON object with a format version ``"v"``. Values inside go through
the store's codec (``weft.store.to_jsonable``): plain JSON as itself, registered
pydantic models and dataclasses, datetimes and bytes as tagged objects. Nothing is
pickled and nothing named in the data is ever imported: an unknown tag is a
``CodecError`` naming the tag and where it was found.

An event record (one per step; the step is the event's ``seq`` and is stored beside it)::

    {"v": 1, "op": "write", "kind": "state", "path": "messages", "time": 1718000000.1,
     "value": {"role": "user", "content": "hi"}, "reducer": "append", "source": "chat"}

``value``, ``source`` and ``meta`` are left out when ``None`` and ``reducer`` when it is
``"replace"``, so an append logs little more than the appended item. A snapshot record
holds the store's entries at one step (``[kind, path, value, source, created_at,
updated_at, seq, meta]`` each, ``updated_at`` null when it equals ``created_at``) and the
non-default reducers of their fields. A memory record is ``{"v": 1, "value": ...}``.

Reading a record checks its version first: a newer one is a ``FutureFormatError`` that
names the version found and the newest this weft reads; anything that is not a record
is a ``CorruptRecordError`` naming the thread and step (or owner and key). Neither
touches the stored data, so every other record stays readable.
"""

from __future__ import annotations

import dataclasses
import operator
from collections.abc import Callable, Mapping
from typing import Any, Final

from weft.errors import CodecError, CorruptRecordError, FutureFormatError, ValueTypeError
from weft.persist.snapshot import Snapshot
from weft.store import (
    Entry,
    Event,
    StepRecord,
    TypeRegistry,
    from_jsonable,
    registry,
    to_jsonable,
)
from weft.store.codec import json_text, parse
from weft.store.values import BUILTIN_TYPES

FORMAT_VERSION: Final = 1
"""The record format this weft writes, and the newest it reads."""

_OPS: Final = frozenset({"write", "delete", "clear", "note"})


try:  # orjson writes the same JSON in C: 10x faster on a record, more on a large snapshot
    import orjson as _orjson

    _FAST = _orjson.OPT_PASSTHROUGH_DATETIME | _orjson.OPT_PASSTHROUGH_DATACLASS
except ImportError:  # pragma: no cover - orjson is a dependency; stay usable without it
    _orjson = None  # type: ignore[assignment,unused-ignore]
    _FAST = 0

_TAG: Final = b'"__weft__"'


def _dumps(data: Any) -> str:
    """Plain JSON (already tagged where needed) as text; ``ValueTypeError`` for what JSON
    cannot say (the store refuses it when written, so only a value built around that check,
    a ``FrozenDict`` made by hand, say, gets here)."""
    if _orjson is not None:
        try:
            return _orjson.dumps(data).decode("utf-8")
        except TypeError:  # an int past 64 bits, a str subclass as a key: the stdlib takes them
            pass
    return json_text(data)


class _Records:
    """orjson's ``default`` hook on the fast path: weft's own records (``weft.store.
    records``) become their tagged form, counted; anything else makes orjson give up."""

    __slots__ = ("tags",)

    def __init__(self) -> None:
        self.tags = 0

    def __call__(self, value: Any) -> Any:
        cls = type(value)
        name = BUILTIN_TYPES.get(cls)
        if name is None:
            raise TypeError(cls.__name__)
        self.tags += 1
        names, defaults, read = _fields(cls)
        record: dict[str, Any] = {"__weft__": name}
        for field, default, item in zip(names, defaults, read(value), strict=True):
            if item is not default:
                record[field] = item
        return record


_Fields = tuple[tuple[str, ...], tuple[Any, ...], Callable[[Any], tuple[Any, ...]]]
_FIELDS: dict[type, _Fields] = {}


def _fields(cls: type) -> _Fields:
    """A record type's field names, their defaults (a field without one: a sentinel no
    value is) and a reader of all its values at once."""
    found = _FIELDS.get(cls)
    if found is None:
        fields = dataclasses.fields(cls)
        names = tuple(f.name for f in fields)
        defaults = tuple(
            object() if f.default is dataclasses.MISSING else f.default for f in fields
        )
        assert len(names) > 1, "attrgetter of one name gives the value, not a 1-tuple"
        found = _FIELDS[cls] = (names, defaults, operator.attrgetter(*names))
    return found


def _encode(raw: dict[str, Any], tagged: Callable[[], dict[str, Any]]) -> str:
    """The JSON of a record whose values are stored values.

    The fast path hands the stored values to orjson as they are: frozen dicts and lists
    and plain scalars are JSON already, and weft's own records are tagged on the way.
    Anything else (a registered type, a datetime, bytes, ``DELETE``, an int past 64 bits,
    or a dict key ``"__weft__"`` that needs escaping: a tag the hook did not write) makes
    it give up, and ``tagged()`` builds the record through ``weft.store.to_jsonable``
    instead, which tags those. Both write the same JSON.
    """
    if _orjson is not None:
        hook = _Records()
        try:
            out = _orjson.dumps(raw, default=hook, option=_FAST)
        except TypeError:
            pass
        else:
            if out.count(_TAG) == hook.tags:
                return out.decode("utf-8")
    return _dumps(tagged())


def encode_event(event: Event, types: TypeRegistry = registry) -> str:
    """The record of one event (its ``seq`` is stored beside it as the step)."""
    _seq, op, kind, path, value, source, reducer, at, meta = event
    raw: dict[str, Any] = {"v": FORMAT_VERSION, "op": op, "kind": kind, "path": path, "time": at}
    if value is not None:
        raw["value"] = value
    if reducer != "replace":
        raw["reducer"] = reducer
    if source is not None:
        raw["source"] = source
    if meta is not None:
        raw["meta"] = meta
    elif _orjson is not None:
        # The hot path, a node's commit: a scalar value, or one of weft's own records of
        # scalars (its step record). Nothing in it can need a tag but the record itself, so
        # orjson writes it without the hook and the tag count of ``_encode``.
        cls = value.__class__
        if cls in _PLAIN or (cls in BUILTIN_TYPES and _plain_record(raw, value)):
            try:
                return _orjson.dumps(raw).decode("utf-8")
            except TypeError:  # an int past 64 bits, a lone surrogate: the slow path says
                raw["value"] = value
    return _encode_event(raw, value, meta, types)


def _encode_event(raw: dict[str, Any], value: Any, meta: Any, types: TypeRegistry) -> str:
    """``encode_event`` past its hot path: values that may need tags. (A function apart:
    its closure inside ``encode_event`` made four cells at every event.)"""

    def tagged() -> dict[str, Any]:
        record = dict(raw)
        if "value" in record:
            record["value"] = to_jsonable(value, types)
        if "meta" in record:
            record["meta"] = to_jsonable(meta, types)
        return record

    try:
        return _encode(raw, tagged)
    except ValueTypeError as exc:
        raise ValueTypeError(f"{raw['kind']}:{raw['path']}: {exc}") from None


_PLAIN: Final = frozenset({str, int, float, bool, type(None)})


def _plain_record(raw: dict[str, Any], value: Any) -> bool:
    """Put weft's own record ``value`` in ``raw`` tagged, as ``_Records`` would, if every
    field it writes is a scalar; else change nothing and return False."""
    cls = value.__class__
    if cls is StepRecord:
        record = _step_record(value)
    else:
        names, defaults, read = _FIELDS.get(cls) or _fields(cls)
        record = {"__weft__": BUILTIN_TYPES[cls]}
        for field, default, item in zip(names, defaults, read(value), strict=True):
            if item is not default:
                record[field] = item
    if record is None or not _PLAIN.issuperset(map(type, record.values())):
        return False
    raw["value"] = record
    return True


def _step_record(r: StepRecord) -> dict[str, Any] | None:
    """A step record's tagged fields but the default ones, as ``_Records`` writes them;
    None when it holds changes. Written out by hand: a recorded run writes one for every
    node it runs, and this is five times quicker than the loop over the fields (a test
    holds it to ``StepRecord``'s fields)."""
    if r.changes is not None:
        return None
    record: dict[str, Any] = {"__weft__": "weft.StepRecord"}
    if r.kind != "node":
        record["kind"] = r.kind
    if r.label is not None:
        record["label"] = r.label
    if r.result is not None:
        record["result"] = r.result
    if r.flag is not None:
        record["flag"] = r.flag
    if r.tuple_result is not False:
        record["tuple_result"] = r.tuple_result
    if r.committed is not True:
        record["committed"] = r.committed
    if r.writes != 0:
        record["writes"] = r.writes
    if r.began is not None:
        record["began"] = r.began
    if r.started_at is not None:
        record["started_at"] = r.started_at
    if r.duration_ms is not None:
        record["duration_ms"] = r.duration_ms
    return record


def decode_event(
    text: str | bytes, *, thread_id: str, step: int, types: TypeRegistry = registry
) -> Event:
    """The event stored at ``step`` of ``thread_id``; errors name both."""
    where = f"step {step} of thread {thread_id!r}"
    record = _record(text, where)
    try:
        op, kind, path = record["op"], record["kind"], record["path"]
        at = float(record["time"])
    except (KeyError, TypeError, ValueError) as exc:
        raise _corrupt(where, f"it lacks a field or has a wrong one ({exc!r})") from exc
    if op not in _OPS or not isinstance(kind, str) or not isinstance(path, str):
        raise _corrupt(where, f"op={op!r}, kind={kind!r}, path={path!r} is not an event")
    reducer = record.get("reducer", "replace")
    source = record.get("source")
    if not isinstance(reducer, str) or not (source is None or isinstance(source, str)):
        raise _corrupt(where, f"reducer={reducer!r}, source={source!r} are not strings")
    value = _values(record.get("value"), where, types)
    meta = _values(record.get("meta"), where, types)
    return Event(step, op, kind, path, value, source, reducer, at, meta)


def encode_snapshot(snapshot: Snapshot, types: TypeRegistry = registry) -> str:
    """The record of a snapshot: every entry at one step, and the fields' reducers."""

    def record(encode: Callable[[Any], Any]) -> dict[str, Any]:
        entries = [
            [
                e.kind,
                e.path,
                encode(e.value),
                e.source,
                e.created_at,
                None if e.updated_at == e.created_at else e.updated_at,
                e.seq,
                None if e.meta is None else encode(e.meta),
            ]
            for e in snapshot.entries
        ]
        return {
            "v": FORMAT_VERSION,
            "step": snapshot.step,
            "entries": entries,
            "reducers": dict(snapshot.reducers),
        }

    return _encode(record(lambda v: v), lambda: record(lambda v: to_jsonable(v, types)))


def decode_snapshot(
    text: str | bytes, *, thread_id: str, step: int, types: TypeRegistry = registry
) -> Snapshot:
    """The snapshot stored at ``step`` of ``thread_id``; errors name both."""
    where = f"the snapshot at step {step} of thread {thread_id!r}"
    record = _record(text, where)
    rows, reducers = record.get("entries"), record.get("reducers")
    if record.get("step") != step or not isinstance(rows, list) or not isinstance(reducers, dict):
        raise _corrupt(where, "its step, entries or reducers are missing or wrong")
    entries: list[Entry] = []
    for row in rows:
        if not isinstance(row, list) or len(row) != 8:
            raise _corrupt(where, f"an entry is not an 8-item list: {str(row)[:80]}")
        kind, path, value, source, created, updated, seq, meta = row
        if not (isinstance(kind, str) and isinstance(path, str) and isinstance(seq, int)):
            raise _corrupt(where, f"entry {kind!r}:{path!r} has a wrong kind, path or seq")
        try:
            created_at = float(created)
            updated_at = created_at if updated is None else float(updated)
        except (TypeError, ValueError) as exc:
            raise _corrupt(where, f"entry {kind}:{path} has wrong times") from exc
        at = f"{where}, entry {kind}:{path}"
        value, meta = _values(value, at, types), _values(meta, at, types)
        entries.append(Entry(kind, path, value, source, created_at, updated_at, seq, meta))
    if not all(isinstance(k, str) and isinstance(v, str) for k, v in reducers.items()):
        raise _corrupt(where, "its reducers are not names")
    return Snapshot(step=step, entries=tuple(entries), reducers=reducers)


def encode_value(value: Any, types: TypeRegistry = registry) -> str:
    """The record of one long-term memory value."""
    return _encode(
        {"v": FORMAT_VERSION, "value": value},
        lambda: {"v": FORMAT_VERSION, "value": to_jsonable(value, types)},
    )


def decode_value(text: str | bytes, *, where: str, types: TypeRegistry = registry) -> Any:
    """A long-term memory value; ``where`` names the owner, namespace and key in errors."""
    record = _record(text, where)
    if "value" not in record:
        raise _corrupt(where, "it has no value")
    return _values(record["value"], where, types)


def _record(text: str | bytes, where: str) -> Mapping[str, Any]:
    try:
        record = parse(text, "it")  # not orjson: it reads an int past 64 bits as a float
    except CodecError as exc:
        raise _corrupt(where, str(exc)) from None
    if not isinstance(record, dict):
        raise _corrupt(where, f"it is a JSON {type(record).__name__}, not an object")
    version = record.get("v")
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise _corrupt(where, f"its format version is {version!r}, not a positive integer")
    if version > FORMAT_VERSION:
        raise FutureFormatError(
            f"{where} has format version {version}, but this weft reads versions up to "
            f"{FORMAT_VERSION}: it was written by a newer weft. Upgrade weft to read it; "
            "nothing was changed, and the other records stay readable"
        )
    return record


def _values(data: Any, where: str, types: TypeRegistry) -> Any:
    try:
        return from_jsonable(data, types)
    except CodecError as exc:
        raise CodecError(f"{where}: {exc}") from exc


def _corrupt(where: str, why: str) -> CorruptRecordError:
    return CorruptRecordError(
        f"{where} cannot be read: {why}. weft did not write it this way (was the database "
        "edited, or a disk damaged?); nothing was changed, the other records stay readable, "
        "and a time-travel load of an earlier step or a fork from one avoids it"
    )
