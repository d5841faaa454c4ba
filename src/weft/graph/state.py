"""State nodes: the bridge between WorkGraph and the store's typed state.

A state node (``WorkGraphNode(fn, state=True)``) is called as ``fn(view, *args,
**kwargs)``. ``view`` is a read-only ``StateView`` of the store as the run began plus the
deltas of the node's *ancestors*, never a sibling's. The node returns a delta
``{path: value}`` (or ``None``); the engine writes it to kind ``"state"`` through the
store's declared reducers.

Ordering. Deltas are applied in canonical order (a topological order fixed by the graph,
see ``weft.graph.build``), in the views and in the store at the end of the run, so
neither depends on which node finished first. A view is built from a predecessor's view
by an O(1) ``Store.fork`` and the missing deltas: at a join, the plan picks (once, at
build time) the predecessor whose view is the longest canonical prefix of the join's
ancestors, and writes only the rest. Views are private (never merged, their logs never
read), so the updates one path receives there are folded by the store's built-in reducer
and written once; the caller's store gets one write per delta, so its log keeps deltas.

Commit. The deltas reach the caller's store when the run ends (completed or terminated),
all in canonical order and in one batch (``Store.write_many``: one event per path of each
delta, and all of them or, if a reducer refuses one, none); a run that fails writes no
state (its deltas are in the step records, so a resumed run commits them once). A node
that returns ``AbortBranch`` contributes nothing, its delta included.

Conflicts. Two state nodes with no path between them that write one last-write-wins
(``replace``) field is a ``MergeConflictError`` naming the field and both nodes' keys,
raised at the first join that sees both, or at commit. A node may overwrite what an
ancestor wrote.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from weft.errors import MergeConflictError, ReducerError
from weft.store import MISSING, Entry, FrozenList, Store, freeze, reducers


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

    __slots__ = ("_store",)

    def __init__(self, store: Store) -> None:
        self._store = store

    def __getitem__(self, path: str) -> Any:
        return self._store.value("state", path)

    def get(self, path: str, default: Any = None) -> Any:
        entry = self._store.get("state", path)
        return default if entry is None else entry.value

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


@dataclass(frozen=True, slots=True)
class StatePlan:
    """What the plan knows about state nodes, computed once per graph.

    ``ancestors[i]`` is a bitset of the state nodes among ``i``'s ancestors (bit = canonical
    position). ``joins[i]`` is ``(base, extras)`` for a node with several predecessors: the
    predecessor whose view to start from (``-1``: the run's initial state) and the state
    nodes whose deltas to add, in canonical order. ``by_key`` maps node keys to positions.
    """

    ancestors: tuple[int, ...]
    joins: Mapping[int, tuple[int, tuple[int, ...]]]
    by_key: Mapping[str, int]

    @classmethod
    def build(
        cls, preds: Sequence[Sequence[int]], states: Sequence[bool], keys: Sequence[str]
    ) -> StatePlan:
        ancestors: list[int] = []
        for i, ps in enumerate(preds):
            bits = 0
            for p in ps:
                bits |= ancestors[p] | (states[p] << p)
            ancestors.append(bits)
            assert not bits >> i, "canonical order is topological"
        joins: dict[int, tuple[int, tuple[int, ...]]] = {}
        for i, ps in enumerate(preds):
            if len(ps) < 2 or not ancestors[i]:
                continue
            best: tuple[int, int] | None = None  # (extra count, pred)
            for p in ps:
                seen = ancestors[p] | (states[p] << p)
                extras = ancestors[i] & ~seen
                if seen and extras and _lowest(extras) < seen.bit_length() - 1:
                    continue  # its view plus the extras would not be in canonical order
                if best is None or extras.bit_count() < best[0]:
                    best = (extras.bit_count(), p)
            if best is None:
                joins[i] = (-1, _bits(ancestors[i]))
            else:
                p = best[1]
                joins[i] = (p, _bits(ancestors[i] & ~(ancestors[p] | (states[p] << p))))
        return cls(tuple(ancestors), joins, {key: i for i, key in enumerate(keys)})


def _lowest(bits: int) -> int:
    return (bits & -bits).bit_length() - 1


def _bits(bits: int) -> tuple[int, ...]:
    out = []
    while bits:
        low = bits & -bits
        out.append(low.bit_length() - 1)
        bits ^= low
    return tuple(out)


class StateTracker:
    """The views and deltas of one run."""

    __slots__ = (
        "_ancestors",
        "_base_seq",
        "_by_key",
        "_joins",
        "_keys",
        "_post",
        "_preds",
        "_reducers",
        "deltas",
        "root",
        "root_view",
        "views",
    )

    def __init__(
        self, plan: StatePlan, preds: Sequence[Sequence[int]], keys: Sequence[str], store: Store
    ) -> None:
        self._ancestors = plan.ancestors
        self._joins = plan.joins
        self._preds = preds
        self._keys = keys
        self._by_key = plan.by_key
        self.root = store.fork(name="weft.graph")
        self._base_seq = self.root.last_seq
        self.root_view = StateView(self.root)
        n = len(keys)
        self.deltas: list[Mapping[str, Any] | None] = [None] * n
        self.views: list[Store | None] = [None] * n
        self._post: list[Store | None] = [None] * n
        self._reducers: dict[str, str] = {}

    def reducer(self, store: Store, path: str) -> str:
        """The reducer name of ``state:path`` (looked up once per run)."""
        name = self._reducers.get(path)
        if name is None:
            name = self._reducers[path] = store.reducer_of("state", path)
        return name

    def enter(self, i: int) -> StateView:
        """Build node ``i``'s view; call once its predecessors are settled."""
        if not self._ancestors[i]:
            self.views[i] = self.root
            return self.root_view
        preds = self._preds[i]
        if len(preds) == 1:
            store = self._post_of(preds[0])
        else:
            base, extras = self._joins[i]
            store = self.root if base < 0 else self._post_of(base)
            pending = [u for u in extras if self.deltas[u]]
            if pending:
                store = store.fork()
                self._apply(store, pending)
        self.views[i] = store
        return self.root_view if store is self.root else StateView(store)

    def _post_of(self, p: int) -> Store:
        post = self._post[p]
        if post is None:
            view = self.views[p]
            assert view is not None, "a predecessor is entered before its successors"
            post = view
            if self.deltas[p]:
                post = view.fork()
                self._apply(post, [p])
            self._post[p] = post
        return post

    def _apply(self, store: Store, writers: list[int]) -> None:
        """Write the deltas of ``writers`` (canonical order) into a private view ``store``.

        A view is never merged and its log is never read, so the updates to one path are
        folded in memory by the store's own built-in reducer and written once; a path with
        a user reducer gets one write per update, through the store.
        """
        updates: dict[str, list[tuple[int, Any]]] = {}
        for u in writers:
            delta = self.deltas[u]
            assert delta is not None
            for path, value in delta.items():
                updates.setdefault(path, []).append((u, value))
        keys = self._keys
        for path, items in updates.items():
            name = self.reducer(store, path)
            last = keys[items[-1][0]]
            if name == "replace":
                entry = store.get("state", path)
                writer = None
                if entry is not None and entry.seq > self._base_seq:
                    writer = self._by_key.get(entry.source or "")
                for u, _ in items:
                    self._check_pair(path, writer, u)
                    writer = u
                store.write("state", path, items[-1][1], source=last, replace=True)
                continue
            folded = _fold(name, store.get("state", path), [v for _, v in items])
            if folded is _NO_FOLD:
                for u, value in items:
                    try:
                        store.write("state", path, value, source=keys[u])
                    except ReducerError as exc:
                        raise ReducerError(
                            f"{exc} (applying the delta of {keys[u]} for the nodes after it; "
                            "the run's store is unchanged)"
                        ) from exc.__cause__
            else:
                store.write("state", path, folded, source=last, replace=True)

    def _check_pair(self, path: str, writer: int | None, u: int) -> None:
        if writer is not None and not (self._ancestors[u] >> writer) & 1:
            raise MergeConflictError(
                f"state:{path} is written by {self._keys[writer]} and {self._keys[u]}, which "
                "run in parallel (no path joins them), and it keeps only the last write; "
                f"declare a reducer for it (store.declare('state', {path!r}, reducers.append)) "
                "or let one of the two nodes write it"
            )

    def commit(self, store: Store) -> None:
        """Write every delta to ``store`` in canonical order, all or (on conflict) none."""
        keys, reducer, check = self._keys, self.reducer, self._check_pair
        last: dict[str, int] = {}  # the last writer of each replace field
        writes: list[tuple[str, Any, str]] = []
        for u, delta in enumerate(self.deltas):
            if delta:
                key = keys[u]
                for path, value in delta.items():
                    if reducer(store, path) == "replace":
                        check(path, last.get(path), u)
                        last[path] = u
                    writes.append((path, value, key))
        store.write_many("state", writes)


_PLAIN = (str, int, bool, type(None))
_NO_FOLD: Any = object()


def _fold(name: str, entry: Entry | None, values: list[Any]) -> Any:
    """The value after ``values`` went through the built-in reducer ``name``, or
    ``_NO_FOLD`` (a user reducer, or input the reducer refuses: the store then applies
    the updates one by one and raises its own error)."""
    fn = reducers.by_name(name)
    if fn is None:
        return _NO_FOLD
    current: Any = MISSING if entry is None else entry.value
    try:
        if fn is reducers.append or (
            fn is reducers.extend and all(isinstance(v, list) for v in values)
        ):
            if current is MISSING:
                current = ()
            elif not isinstance(current, list):
                return _NO_FOLD
            added = values if fn is reducers.append else itertools.chain.from_iterable(values)
            return FrozenList([*current, *added])
        for value in values:
            current = fn(current, value)
    except (TypeError, ValueError):
        return _NO_FOLD
    return current


def checked_delta(
    delta: Any, node: str, tracker: StateTracker, store: Store
) -> dict[str, Any] | None:
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
            allow_delete=tracker.reducer(store, path) == "merge",
        )
    return out or None
