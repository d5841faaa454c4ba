"""State nodes: the bridge between WorkGraph and the store's typed state.

A state node (``WorkGraphNode(fn, state=True)``) is called as ``fn(view, *args,
**kwargs)``. ``view`` is a read-only ``StateView`` of the node's view of the run's store:
the store as the run began plus the writes of the node's *ancestors*, never a sibling's.
The node returns a delta ``{path: value}`` (or ``None``); the engine writes it to kind
``"state"`` through the store's declared reducers, and it reaches the run's store in graph
order (``weft.graph.stores``). A node whose changes are more than that (other kinds, a
whole value past a reducer) returns ``Writes``, which also carry its result. A node that
returns ``AbortBranch`` contributes nothing, its delta included.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any, Final

from weft.store import MISSING, Store, freeze
from weft.store._log import AppendLog
from weft.store._staging import _KEYS, remembered_key
from weft.store.values import _AS_IS, _INT_HIGH, _INT_LOW, kept

_STATE_KEYS: Final = _KEYS["state"]  # the state keys remembered_key made, by path


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

    @property
    def store(self) -> Store:
        """The store this view reads, for code that reads it through ``Store``'s API (a
        scope of references, say). A state node does not write to it: its changes are what
        it returns."""
        return self._store

    def __getitem__(self, path: str) -> Any:
        # the hot read of every state node: Store.value's lookup, inlined for the one kind
        try:
            key = _STATE_KEYS[path]
        except (KeyError, TypeError):  # a name not remembered yet, or no name at all
            key = None  # read below, out of the except block: no KeyError as its context
        if key is None and (key := remembered_key("state", path, None)) is None:
            return self._value("state", path)  # not a plain name: the store's read says
        store = self._store
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


class Writes:
    """What a state node returns when its changes are more than a delta of ``state``:
    ``writes`` are ``(kind, path, value, replace)`` writes of any kind, each through the
    field's reducer (``replace=True``: the value replaces the field, past its reducer),
    and ``result`` is the node's result (what it hands down and what a run records);
    ``source`` names the writer in the log (the node's key if omitted). The engine
    commits them as it does a delta, in graph order, as one commit.

    >>> store = Store()
    >>> Writes((("state", "plan", "p", False), ("shared", "seen", 1, False))).write_to(store, "n")
    >>> store.value("shared", "seen")
    1
    """

    __slots__ = ("result", "source", "writes")

    def __init__(
        self,
        writes: Sequence[tuple[str, str, Any, bool]],
        result: Any = None,
        *,
        source: str | None = None,
    ) -> None:
        self.writes = writes
        self.result = result
        self.source = source

    def items(self, source: str) -> list[tuple[str, str, Any, str, bool]]:
        """The writes as ``Store.delta`` takes them (by ``source`` if they name nobody)."""
        source = self.source or source
        return [(kind, path, value, source, whole) for kind, path, value, whole in self.writes]

    def write_to(self, store: Store, source: str) -> None:
        """Make the writes in ``store`` (by ``source`` if they name nobody), all or none,
        as one commit."""
        source = self.source or source
        writes = self.writes
        if len(writes) == 1:
            kind, path, value, whole = writes[0]
            if not whole or store.reducer_of(kind, path) == "replace":
                store.write_many(kind, [(path, value, source)])
                return
        if writes:
            store.merge([store.delta(self.items(source))])

    def __repr__(self) -> str:
        return f"Writes({self.writes!r}, result={self.result!r})"


def kept_delta(delta: dict[str, Any]) -> bool:
    """Whether a state node's non-empty dict ``delta`` goes into the store as the node
    returned it: every path a ``plain_key`` of ``state`` and every value one the store
    ``kept`` (a scalar, a frozen container). The engine then hands it on and commits it with
    no copy; any other delta goes through ``checked_delta``. A path seen before is found
    in the store's memo of plain keys, and ``kept`` is inlined: a fan-out's branches ask
    this once each (W2: two calls a branch less)."""
    for path, value in delta.items():
        if path not in _STATE_KEYS and remembered_key("state", path, None) is None:
            return False
        cls = value.__class__
        if not (
            (cls is int and _INT_LOW < value < _INT_HIGH)
            or cls in _AS_IS
            or (cls is str and value.isascii())
        ):
            return False
    return True


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
        if kept(value):
            out[path] = value
            continue
        out[path] = freeze(
            value,
            where=f"state:{path} in the delta of {node}",
            allow_delete=store.reducer_of("state", path) == "merge",
        )
    return out or None
