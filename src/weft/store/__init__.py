"""The store: entries by kind and path, reducers, O(1) forks, transactions, the event log,
and the typed records of the one run model."""

from weft.store import reducers
from weft.store.codec import dumps, from_jsonable, loads, to_jsonable, value_bytes
from weft.store.events import KINDS, Entry, Event, Kind, Op, make_key
from weft.store.merge import Delta
from weft.store.notes import CallNote, RunNote, tap
from weft.store.records import CallIntent, Note, Pause, RunRecord, StepRecord
from weft.store.runlog import NOT_DONE, RunLog
from weft.store.store import BatchSubscriber, Journal, Store, Subscriber
from weft.store.values import (
    DELETE,
    MAX_DEPTH,
    MISSING,
    FrozenDict,
    FrozenList,
    TypeRegistry,
    freeze,
    register_type,
    registry,
    thaw,
)

__all__ = [
    "DELETE",
    "KINDS",
    "MAX_DEPTH",
    "MISSING",
    "NOT_DONE",
    "BatchSubscriber",
    "CallIntent",
    "CallNote",
    "Delta",
    "Entry",
    "Event",
    "FrozenDict",
    "FrozenList",
    "Journal",
    "Kind",
    "Note",
    "Op",
    "Pause",
    "RunLog",
    "RunNote",
    "RunRecord",
    "StepRecord",
    "Store",
    "Subscriber",
    "TypeRegistry",
    "dumps",
    "freeze",
    "from_jsonable",
    "loads",
    "make_key",
    "reducers",
    "register_type",
    "registry",
    "tap",
    "thaw",
    "to_jsonable",
    "value_bytes",
]
