"""The store: entries by kind and path, reducers, O(1) forks, and the event log."""

from weft.store import reducers
from weft.store.codec import dumps, from_jsonable, loads, to_jsonable, value_bytes
from weft.store.events import KINDS, Entry, Event, Kind, Op, make_key
from weft.store.store import Store, Subscriber
from weft.store.values import (
    DELETE,
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
    "MISSING",
    "Entry",
    "Event",
    "FrozenDict",
    "FrozenList",
    "Kind",
    "Op",
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
    "thaw",
    "to_jsonable",
    "value_bytes",
]
