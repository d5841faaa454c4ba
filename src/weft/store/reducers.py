"""Reducers: plain functions ``(current, update) -> new`` that say how a field takes a write.

A field's reducer is declared once on the store (``Store.declare``). The
built-ins below also accept ``MISSING`` as ``current`` (the first write) and
never mutate their inputs: they build new frozen values, so an earlier value
that someone still holds never changes under them. Any other function works
too (``operator.add`` is the common one); for it, the first write stores the
update as it is, and later writes store ``fn(current, update)``.
"""

from __future__ import annotations

import builtins
import operator
from collections.abc import Callable
from typing import Any, Final

from weft.errors import ReducerError
from weft.store.values import DELETE, MISSING, FrozenDict, FrozenList, freeze

Reducer = Callable[[Any, Any], Any]


def replace(current: Any, update: Any) -> Any:
    """Last write wins (the default). Two forks writing it is a merge conflict."""
    return update


def append(current: Any, update: Any) -> FrozenList:
    """Add one item at the end of a list: ``[*current, update]`` (no flattening)."""
    if current is MISSING:
        return FrozenList([update])
    _need_list(current, "append")
    grown = FrozenList(current)
    list.append(grown, update)  # one copy of current, then an amortised O(1) append
    return grown


def extend(current: Any, update: Any) -> FrozenList:
    """Add every item of a list at the end: ``[*current, *update]``."""
    _need_list(update, "extend", "update")
    if current is MISSING:
        return FrozenList(update)
    _need_list(current, "extend")
    grown = FrozenList(current)
    list.extend(grown, update)
    return grown


def merge(current: Any, update: Any) -> FrozenDict:
    """Shallow dict merge; a key whose update value is ``DELETE`` is removed."""
    if not isinstance(update, dict):
        raise TypeError(f"merge takes a dict update, got a {type(update).__name__}")
    if current is MISSING:
        base: dict[str, Any] = {}
    elif isinstance(current, dict):
        base = dict(current)
    else:
        raise TypeError(f"merge needs a dict to merge into, found a {type(current).__name__}")
    for key, item in update.items():
        if item is DELETE:
            base.pop(key, None)
        else:
            base[key] = item
    return FrozenDict(base)


def union(current: Any, update: Any) -> FrozenList:
    """Items of ``update`` not yet in the list, added in order (a set kept as a JSON list)."""
    items = update if isinstance(update, list) else [update]
    if current is MISSING:
        current = FrozenList()
    _need_list(current, "union")
    out = list(current)
    seen = _Seen(out)
    for item in items:
        if not seen.has(item):
            seen.add(item)
            out.append(item)
    return FrozenList(out)


def add(current: Any, update: Any) -> Any:
    """Numeric sum."""
    _need_number(update, "add")
    if current is MISSING:
        return update
    _need_number(current, "add")
    return freeze(current + update, where="the sum")  # a float may overflow to inf


def max(current: Any, update: Any) -> Any:
    """The larger number."""
    _need_number(update, "max")
    return update if current is MISSING else builtins.max(current, update)


def min(current: Any, update: Any) -> Any:
    """The smaller number."""
    _need_number(update, "min")
    return update if current is MISSING else builtins.min(current, update)


def _operator_add(current: Any, update: Any) -> Any:
    if current is MISSING:
        return update
    if isinstance(current, list) and isinstance(update, list):
        return extend(current, update)
    return operator.add(current, update)


class _Seen:
    """Membership for union: hashing where it can, equality where it must."""

    def __init__(self, items: list[Any]) -> None:
        self._hashed: set[Any] = set()
        self._other: list[Any] = []
        for item in items:
            self.add(item)

    def add(self, item: Any) -> None:
        try:
            self._hashed.add(item)
        except TypeError:
            self._other.append(item)

    def has(self, item: Any) -> bool:
        try:
            return item in self._hashed
        except TypeError:
            return item in self._other


def _need_list(value: Any, reducer: str, role: str = "current value") -> None:
    if not isinstance(value, list):
        raise TypeError(f"{reducer} needs a list as the {role}, got a {type(value).__name__}")


def _need_number(value: Any, reducer: str) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{reducer} needs a number, got a {type(value).__name__}")


BUILTIN: Final[dict[Reducer, str]] = {
    replace: "replace",
    append: "append",
    extend: "extend",
    merge: "merge",
    union: "union",
    add: "add",
    max: "max",
    min: "min",
}
"""Built-in reducers by name: they accept ``MISSING`` and return frozen values."""

_ALIASES: Final[dict[Reducer, tuple[str, Reducer]]] = {
    operator.add: ("operator.add", _operator_add),
}


def reducer_name(fn: Reducer) -> str:
    """The name events record for a reducer (stable across processes)."""
    name = BUILTIN.get(fn)
    if name is None and (alias := _ALIASES.get(fn)) is not None:
        name = alias[0]
    if name is not None:
        return name
    module = getattr(fn, "__module__", None) or "?"
    qualname = getattr(fn, "__qualname__", None) or type(fn).__qualname__
    return f"{module}.{qualname}"


def by_name(name: str) -> Reducer | None:
    """The built-in reducer of that name (``operator.add`` too), if there is one."""
    for fn, known in (*BUILTIN.items(), (operator.add, "operator.add")):
        if known == name:
            return fn
    return None


def prepare(fn: Reducer) -> tuple[str, Reducer, bool]:
    """(name, callable, frozen_output) for a declared reducer; ``frozen_output``: a
    built-in's results need no re-freezing."""
    if not callable(fn):
        raise ReducerError(
            f"a reducer is a function (current, update) -> new, such as reducers.append or "
            f"operator.add, not {fn!r:.60}"
        )
    alias = _ALIASES.get(fn)
    return reducer_name(fn), fn if alias is None else alias[1], fn in BUILTIN
