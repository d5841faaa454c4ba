"""Scopes: where references are read.

A scope has ``lookup(kind, field)`` (the entry's value, or ``MISSING``) and ``fields(kind)``;
``as_scope`` takes a ``Store``, a mapping ``{kind: {field: value}}`` or a ``Scope``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol, TypeAlias, runtime_checkable

from weft.errors import RefError
from weft.store import MISSING, Store


@runtime_checkable
class Scope(Protocol):
    """Where references are read from."""

    def lookup(self, kind: str, field: str) -> Any:
        """The value of the entry ``kind:field``, or ``MISSING``."""

    def fields(self, kind: str) -> list[str]:
        """The fields of ``kind`` that hold a value, in key order."""


class StoreScope:
    """A store as a scope: ``†state.user`` reads the entry ``state:user``."""

    __slots__ = ("store",)

    def __init__(self, store: Store) -> None:
        self.store = store

    def lookup(self, kind: str, field: str) -> Any:
        entry = self.store.get(kind, field)
        return MISSING if entry is None else entry.value

    def fields(self, kind: str) -> list[str]:
        return [entry.path for entry in self.store.entries(key_prefix=f"{kind}:")]

    def __repr__(self) -> str:
        return f"StoreScope({self.store!r})"


class MappingScope:
    """Plain data as a scope: ``{"state": {"user": {...}}, "input": {...}}``."""

    __slots__ = ("data",)

    def __init__(self, data: Mapping[str, Any]) -> None:
        self.data = data

    def lookup(self, kind: str, field: str) -> Any:
        fields = self.data.get(kind)
        if not isinstance(fields, Mapping):
            return MISSING
        return fields.get(field, MISSING)

    def fields(self, kind: str) -> list[str]:
        fields = self.data.get(kind)
        return sorted(map(str, fields)) if isinstance(fields, Mapping) else []


class ChainScope:
    """Several scopes read in turn: the first that holds a field gives it."""

    __slots__ = ("scopes",)

    def __init__(self, *scopes: Scope) -> None:
        self.scopes = scopes

    def lookup(self, kind: str, field: str) -> Any:
        for scope in self.scopes:
            value = scope.lookup(kind, field)
            if value is not MISSING:
                return value
        return MISSING

    def fields(self, kind: str) -> list[str]:
        return sorted({name for scope in self.scopes for name in scope.fields(kind)})


ScopeLike: TypeAlias = Scope | Store | Mapping[str, Any]


def as_scope(scope: ScopeLike) -> Scope:
    """A ``Store``, a mapping of kinds or a ``Scope``, as a ``Scope`` (else ``RefError``)."""
    if isinstance(scope, Store):
        return StoreScope(scope)
    if isinstance(scope, Scope) and not isinstance(scope, Mapping):
        return scope
    if isinstance(scope, Mapping):
        return MappingScope(scope)
    raise RefError(
        f"a scope is a Store, a mapping {{kind: {{field: value}}}} or a weft.refs.Scope, "
        f"not a {type(scope).__name__}"
    )
