"""``_imports``: what a call to an isolated module may see.

A module runs in a *clean room*: a new store holding only what the call's ``_imports``
name (references with the sigil optional: ``["state", "input.user"]``), copied from the
caller's scope when the call starts. The call's own argument references resolve there
too, so ``_imports`` lists everything it reads; nothing written there comes back.
"""

from __future__ import annotations

from collections.abc import Iterable

from weft.errors import ReferenceSyntaxError
from weft.refs.parse import ASCII_SIGIL, SIGIL, Reference, need_str
from weft.refs.resolve import read
from weft.refs.scopes import Scope
from weft.store import MISSING, FrozenDict, Store


def parse_import(spec: str) -> Reference:
    """One import spec (``"state"``, ``"input.user"``, ``"†state.user.name"``)."""
    need_str(spec, "an _imports entry", "'state' or 'input.user'")
    text = spec.strip()
    if not text.startswith((SIGIL, ASCII_SIGIL)):
        text = SIGIL + text
    ref = Reference.parse(text)
    if any(type(step) is int for step in ref.path):
        raise ReferenceSyntaxError(
            f"the import {spec!r} names a list item; imports name kinds, fields and keys "
            "(import the list whole: drop the [index])",
            text=spec,
        )
    return ref


def covered(ref: Reference, imports: Iterable[Reference]) -> bool:
    """Whether ``ref`` reads only what ``imports`` bring into the clean room."""
    return any(imp.kind == ref.kind and ref.steps[: len(imp.steps)] == imp.steps for imp in imports)


def clean_room(imports: Iterable[Reference], scope: Scope, *, name: str) -> Store:
    """A new store holding only the imported values, read from ``scope`` now."""
    room = Store(name=name)
    for imp in imports:
        if imp.field is None:
            for field in scope.fields(imp.kind):
                value = scope.lookup(imp.kind, field)
                if value is not MISSING:
                    room.write(imp.kind, field, value, source="import", replace=True)
            continue
        value = read(imp, scope)
        if imp.path:
            entry = room.get(imp.kind, imp.field)
            base = entry.value if entry is not None else FrozenDict()
            value = _nest(base, imp.path, value)
        room.write(imp.kind, imp.field, value, source="import", replace=True)
    return room


def _nest(base: object, path: tuple[str | int, ...], value: object) -> object:
    """``value`` placed at the key ``path`` inside ``base`` (other keys of ``base`` kept)."""
    step, rest = str(path[0]), path[1:]
    fields = dict(base) if isinstance(base, dict) else {}
    fields[step] = value if not rest else _nest(fields.get(step, {}), rest, value)
    return fields
