"""State nodes: the bridge between WorkGraph and the store's typed state.

A state node (``WorkGraphNode(fn, state=True)``) is called as ``fn(view, *args,
**kwargs)``. ``view`` is a read-only ``StateView`` of the node's view of the run's store:
the store as the run began plus the writes of the node's *ancestors*, never a sibling's.
The node returns a delta ``{path: value}`` (or ``None``); the engine writes it to kind
``"state"`` through the store's declared reducers, and it reaches the run's store in graph
order (``weft.graph.stores``). A node that returns ``AbortBranch`` contributes nothing, its
delta included.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from weft.store import MISSING, Store, freeze
from weft.store._log import AppendLog
from weft.store._staging import STATE_KEYS


class StateView:
    """A read-only view of the store as one state node sees it.

    ``view["plan"]`` and ``view.get("plan")`` read kind ``"state"``; ``view.read(kind,
    path)`` reads any kind (``input``, ``shared`` ...). Nothing here writes: a state node
    says what changes by returning a delta.

    >>> store = Store()
    >>> _ = store.write("state", "topic", "tides")
    >>> view = StateView(store)
    >>> view["topic"], view.get("missing", "-"), "topic" in view
    ('tides', '-', True)
    """

    __slots__ = ("_store", "_value")

    def __init__(self, store: Store) -> None:
        self._store = store
        self._value = store.value

    def __getitem__(self, path: str) -> Any:
        # the hot read of every state node: Store.value's lookup, inlined for the one kind
        if path.__class__ is str:
            store = self._store
            key = STATE_KEYS.get(path) or "state:" + path  # a checked key, hashed once
            row = store._recent.get(key)
            if row is None:
                row = store._settled.get(key)
            if row:  # not None, nor GONE
                stored = row[2]
                return stored.materialize() if stored.__class__ is AppendLog else stored
        return self._value("state", path)

    def get(self, path: str, default: Any = None) -> Any:
        return self._value("state", path, default)

    def __contains__(self, path: object) -> bool:
        return isinstance(path, str) and bool(path) and self._store.has("state", path)

    def read(self, kind: str, path: str, default: Any = MISSING) -> Any:
        """The value at ``kind:path``; without a default, a missing key is an error."""
        return self._store.value(kind, path, default)

    def to_dict(self) -> dict[str, Any]:
        """``{path: value}`` of every state entry, in path order."""
        return {e.path: e.value for e in self._store.entries(kind="state", key_prefix="state:")}

    def __iter__(self) -> Iterator[str]:
        return iter(self.to_dict())

    def __repr__(self) -> str:
        return f"StateView({self.to_dict()!r})"


_PLAIN = (str, int, bool, type(None))


def checked_delta(delta: Any, node: str, store: Store) -> dict[str, Any] | None:
    """A state node's delta with its values frozen; ``None`` or ``{}`` mean no change.

    Raises ``TypeError`` (which the engine turns into a ``NodeError`` naming the node) when
    the delta is not a ``{path: value}`` dict, or ``ValueTypeError`` when it holds a value
    the store cannot keep.
    """
    if delta is None:
        return None
    if delta.__class__ is not dict and not isinstance(delta, Mapping):
        raise TypeError(
            f"state node {node} returned a {type(delta).__name__}; a state node returns a "
            "delta {path: value} (or None for no change)"
        )
    out: dict[str, Any] = {}
    for path, value in delta.items():
        if path.__class__ is not str or not path:
            raise TypeError(
                f"state node {node} returned a delta with the path {path!r}; paths are "
                "non-empty strings such as 'plan' or 'notes.draft'"
            )
        if value.__class__ in _PLAIN:
            out[path] = value
            continue
        out[path] = freeze(
            value,
            where=f"state:{path} in the delta of {node}",
            allow_delete=store.reducer_of("state", path) == "merge",
        )
    return out or None
