"""Writing a value to the targets of one output-path alternative, all or none.

``set`` replaces; ``merge``, ``push`` and ``concat`` are the store's ``merge``, ``append``
and ``extend`` reducers. On a whole field a method goes through the store when the field
declares that very reducer (the event log holds the pushed item, not the list), is applied
here and written whole when it declares none, and is refused when it declares another: the
declaration is the field's contract. A path inside a field is read, changed, written back.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final, Literal, TypeAlias

from weft.errors import OutputPathError, ReducerError, ValueTypeError
from weft.refs.parse import SIGIL, Reference, Step, format_steps
from weft.refs.scopes import Scope
from weft.store import MISSING, FrozenDict, FrozenList, Store, freeze, reducers

Method: TypeAlias = Literal["set", "merge", "push", "concat"]
METHODS: Final[tuple[str, ...]] = ("set", "merge", "push", "concat")
WRITABLE_KINDS: Final = ("state", "shared")
_FROZEN: Final = frozenset({str, int, float, bool, type(None), FrozenDict, FrozenList})

_REDUCER_OF: Final[Mapping[str, tuple[str, Callable[[Any, Any], Any]]]] = {
    "merge": ("merge", reducers.merge),
    "push": ("append", reducers.append),
    "concat": ("extend", reducers.extend),
}


@dataclass(frozen=True, slots=True)
class Target:
    """One path of an output: the field ``kind:field``, the steps inside it, the method."""

    kind: str
    field: str
    path: tuple[Step, ...] = ()
    method: Method = "set"

    @property
    def reference(self) -> Reference:
        """The place written, as a reference (what a later call reads)."""
        return Reference(self.kind, self.field, self.path)

    @property
    def text(self) -> str:
        suffix = "" if self.method == "set" else f":{self.method}"
        return SIGIL + self.kind + format_steps((self.field, *self.path)) + suffix

    def __str__(self) -> str:
        return self.text


@dataclass(frozen=True, slots=True)
class WriteOp:
    """One store write an output path decided on: through the field's reducer, or whole."""

    kind: str
    field: str
    value: Any
    replace: bool


def plan_writes(
    fanout: tuple[Target, ...], value: Any, store: Store, scope: Scope
) -> list[WriteOp]:
    """The store writes for ``value`` to every target, all checked before any is made."""
    if value.__class__ in _FROZEN:
        frozen = value
    else:
        try:
            merging = all(t.method == "merge" for t in fanout)  # DELETE: "remove the key"
            frozen = freeze(value, where=f"the value for {fanout[0].text}", allow_delete=merging)
        except ValueTypeError as exc:
            raise OutputPathError(f"{exc}; nothing was written") from exc
    if len(fanout) == 1:  # one write is atomic in the store: nothing to check ahead
        target = fanout[0]
        return [_plan_one(target, frozen, _current(target, scope), store, check=False)]
    pending: dict[tuple[str, str], Any] = {}  # fields already changed by earlier targets
    ops: list[WriteOp] = []
    for target in fanout:
        key = (target.kind, target.field)
        changed = key in pending
        current = pending[key] if changed else scope.lookup(target.kind, target.field)
        # a field an earlier target changed is folded here and written whole
        op = _plan_one(target, frozen, current, store, check=True, changed=changed)
        pending[key] = op.value if op.replace else _reduce(target, current, frozen)
        ops.append(op)
    return ops


def _current(target: Target, scope: Scope) -> Any:
    if not target.path and target.method == "set":
        return MISSING  # a whole replacement does not read what is there
    return scope.lookup(target.kind, target.field)


def apply_writes(ops: list[WriteOp], store: Store, source: str | None) -> None:
    """Make the writes ``plan_writes`` decided on (checked already: they do not fail)."""
    for op in ops:
        try:
            store.write(op.kind, op.field, op.value, source=source, replace=op.replace)
        except ReducerError as exc:  # a lone reduced write is checked by the store itself
            raise OutputPathError(f"{op.kind}:{op.field}: {exc}") from exc


def _plan_one(
    target: Target, value: Any, current: Any, store: Store, *, check: bool, changed: bool = False
) -> WriteOp:
    if not target.path:
        if target.method == "set":
            return WriteOp(target.kind, target.field, value, True)
        declared = store.reducer_of(target.kind, target.field)
        wanted, _ = _REDUCER_OF[target.method]
        if declared == wanted and not changed:
            if check:
                _reduce(target, current, value)  # refuse now: all or nothing
            return WriteOp(target.kind, target.field, value, False)
        if declared != "replace" and declared != wanted:
            raise OutputPathError(
                f"{target.text}: {target.kind}:{target.field} declares the reducer "
                f"{declared!r}, and :{target.method} means {wanted!r}; write it with the "
                f"method of its reducer ({_method_for(declared)}) or :set, or use another "
                "field; nothing was written"
            )
        return WriteOp(target.kind, target.field, _reduce(target, current, value), True)
    base = current
    if base is MISSING:
        if type(target.path[0]) is int:
            raise OutputPathError(
                f"{target.text}: {target.kind}:{target.field} holds nothing, so it has no "
                f"item [{target.path[0]}]; write the whole list first; nothing was written"
            )
        base = FrozenDict()
    new = _set_in(target, base, 0, value)
    return WriteOp(target.kind, target.field, new, True)


def method_reducer(method: str) -> Callable[[Any, Any], Any] | None:
    """The built-in reducer an output path's method writes through (None for ``set``)."""
    return _REDUCER_OF[method][1] if method in _REDUCER_OF else None


def _method_for(reducer: str) -> str:
    found = [f":{method}" for method, (name, _) in _REDUCER_OF.items() if name == reducer]
    return found[0] if found else "no method: write it from code"


def _reduce(target: Target, current: Any, value: Any) -> Any:
    if target.method == "set":
        return value
    _, fn = _REDUCER_OF[target.method]
    try:
        return fn(current, value)
    except TypeError as exc:
        raise OutputPathError(f"{target.text}: {exc}; nothing was written") from None


def _set_in(target: Target, node: Any, depth: int, value: Any) -> Any:
    """A copy of ``node`` with the target's path from ``depth`` on changed."""
    step = target.path[depth]
    last = depth == len(target.path) - 1
    where = Reference(target.kind, target.field, target.path[:depth]).text
    if type(step) is int:
        if not isinstance(node, list):
            raise OutputPathError(
                f"{target.text}: {where} is not a list, so it has no item [{step}]; "
                "nothing was written"
            )
        if not -len(node) <= step < len(node):
            raise OutputPathError(
                f"{target.text}: {where} has {len(node)} items, so [{step}] is out of range "
                "(an output path changes items, it does not add them: use :push); nothing "
                "was written"
            )
        items = list(node)
        old = items[step]
        items[step] = _leaf(target, old, value) if last else _set_in(target, old, depth + 1, value)
        return FrozenList(items)
    if not isinstance(node, dict):
        raise OutputPathError(
            f"{target.text}: {where} is not an object, so it cannot take the key {step!r}; "
            "nothing was written"
        )
    fields = dict(node)
    old = fields.get(step, MISSING)
    if last:
        fields[step] = _leaf(target, old, value)
    else:
        if old is MISSING:
            if type(target.path[depth + 1]) is int:
                raise OutputPathError(
                    f"{target.text}: {where}.{step} holds nothing, so it has no item "
                    f"[{target.path[depth + 1]}]; nothing was written"
                )
            old = FrozenDict()
        fields[step] = _set_in(target, old, depth + 1, value)
    return FrozenDict(fields)


def _leaf(target: Target, old: Any, value: Any) -> Any:
    return value if target.method == "set" else _reduce(target, old, value)
