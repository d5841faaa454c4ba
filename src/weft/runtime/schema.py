"""Reading a state schema: a TypedDict or a pydantic model whose fields carry lifecycles.

A field whose type is itself a TypedDict or pydantic model with marked subfields is a
*group*: each subfield lives at its own store path (``session_progress.turn_count``) with
its own reducer, and views reassemble the nested dict. A group's own marker is the
lifecycle of its unmarked subfields; a group cannot be ``Loaded``. A TypedDict with *no*
marked subfields is an ordinary field holding a dict. Pydantic values are stored as their
JSON dicts. The schema must resolve with ``typing.get_type_hints`` (define it at module
level); each mistake is a ``SchemaError`` naming the field when the runtime is built.
"""

from __future__ import annotations

import difflib
import sys
import typing
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Annotated, Any, Final, Literal, get_args, get_origin

from weft.errors import ChannelOwnershipError, SchemaError
from weft.runtime.lifecycle import (
    FOLDS_FROM_NOTHING,
    Input,
    Loaded,
    Marker,
    Reducer,
    ReducerFn,
    TurnScoped,
    default_of,
    marker_of,
)
from weft.store import MISSING, FrozenDict, Store, freeze
from weft.store import reducers as _reducers

Lifecycle = Literal["input", "reducer", "loaded", "turn_scoped"]
_LIFECYCLE: Final[dict[type, Lifecycle]] = {
    Input: "input",
    Reducer: "reducer",
    Loaded: "loaded",
    TurnScoped: "turn_scoped",
}
_WRAPPERS: Final = {typing.Required, typing.NotRequired, getattr(typing, "ReadOnly", None)} - {None}


@dataclass(frozen=True, slots=True, kw_only=True)
class Field:
    """One leaf of the schema: its store path, lifecycle, reducer and (frozen) default."""

    path: str
    lifecycle: Lifecycle
    marker: Marker
    reducer: ReducerFn
    default: Any
    annotation: Any

    @property
    def persisted(self) -> bool:
        """Whether the thread's log keeps it (only ``Reducer`` fields)."""
        return self.lifecycle == "reducer"

    @property
    def reducer_name(self) -> str:
        return _reducers.reducer_name(self.reducer)


@dataclass(frozen=True, slots=True, kw_only=True)
class Group:
    """A nested field whose subfields live at their own paths."""

    path: str
    children: Mapping[str, Field | Group]

    def leaves(self) -> Iterator[Field]:
        for child in self.children.values():
            if isinstance(child, Field):
                yield child
            else:
                yield from child.leaves()


class StateSchema:
    """A schema read into groups and leaves: ``fields`` are the top-level fields, ``nodes``
    maps every path (leaf or group) to its node, ``leaves`` the leaf paths to fields."""

    __slots__ = ("fields", "leaves", "name", "nodes", "source")

    def __init__(self, schema: type) -> None:
        if _members(schema) is None:
            raise SchemaError(
                f"{schema!r} is not a state schema; pass a TypedDict or a pydantic model whose "
                "fields are Annotated with Input, Reducer(fn), Loaded(loader) or TurnScoped"
            )
        self.source = schema
        self.name: str = getattr(schema, "__name__", repr(schema))
        self.fields = _read(schema, "", None, self.name)
        if not self.fields:
            raise SchemaError(f"the state schema {self.name} has no fields")
        self.nodes: dict[str, Field | Group] = {}
        self.leaves: dict[str, Field] = {}
        for node in self.fields.values():
            self._index(node)

    def _index(self, node: Field | Group) -> None:
        self.nodes[node.path] = node
        if isinstance(node, Field):
            self.leaves[node.path] = node
        else:
            for child in node.children.values():
                self._index(child)

    def __repr__(self) -> str:
        return f"<StateSchema {self.name} fields={list(self.fields)}>"

    def of(self, lifecycle: Lifecycle) -> tuple[Field, ...]:
        """The leaves of one lifecycle, in declaration order."""
        return tuple(f for f in self.leaves.values() if f.lifecycle == lifecycle)

    def leaves_under(self, path: str) -> tuple[Field, ...]:
        """The leaves at or under ``path`` (a leaf, or every leaf of a group)."""
        node = self.nodes[path]
        return (node,) if isinstance(node, Field) else tuple(node.leaves())

    def store_reducers(self) -> dict[str, ReducerFn]:
        """``{"state:<path>": fn}`` of the stored leaves that do not replace (for replay)."""
        return {
            f"state:{f.path}": f.reducer
            for f in self.leaves.values()
            if f.persisted and f.reducer is not _reducers.replace
        }

    def declare_turn_fields(self, store: Store) -> None:
        """Declare the turn-scoped and loaded leaves on ``store`` as never persisted."""
        for f in self.leaves.values():
            if f.lifecycle in ("turn_scoped", "loaded"):
                store.declare("state", f.path, f.reducer, persist=False)

    def describe(self) -> str:
        """One line per leaf: path, lifecycle, reducer (for docs and error messages)."""
        width = max(len(p) for p in self.leaves)
        return "\n".join(
            f"{f.path.ljust(width)}  {f.lifecycle}"
            + (f" ({f.reducer_name})" if f.reducer is not _reducers.replace else "")
            for f in self.leaves.values()
        )

    def value(self, node: Field | Group, read: Any) -> Any:
        """The value a view shows for ``node`` (a group: a frozen dict of its subfields)."""
        if isinstance(node, Field):
            found = read(node)
            return node.default if found is MISSING else found
        out = {}
        for name, child in node.children.items():
            found = self.value(child, read)
            if found is not MISSING:
                out[name] = found
        return FrozenDict(out)

    def stored_within(self, name: str) -> bool:
        """Whether the group ``name`` has a subfield that persists (a ``Reducer`` leaf)."""
        node = self.nodes[name]
        return isinstance(node, Group) and any(leaf.persisted for leaf in node.leaves())

    def without_stored(self, node: Field | Group, value: Any) -> Any:
        """``value`` of ``node`` (plain data) without the subfields that persist: what a
        turn's default output shows of a group that mixes stored and turn-scoped fields
        (a stored leaf itself: ``MISSING``)."""
        if isinstance(node, Field):
            return MISSING if node.persisted else value
        if not isinstance(value, Mapping):
            return value
        out = {}
        for name, item in value.items():
            child = node.children.get(name)
            kept = item if child is None else self.without_stored(child, item)
            if kept is not MISSING:
                out[name] = kept
        return out

    def split(self, key: str, value: Any, writer: str) -> list[tuple[Field, Any]]:
        """The leaf writes of ``{key: value}`` (a group's dict goes to its subfields)."""
        node = self.nodes.get(key) if isinstance(key, str) else None
        if node is None:
            raise self.unknown(key, writer)
        if isinstance(node, Field):
            return [(node, plain(value))]
        value = plain(value, exclude_unset=True)
        if not isinstance(value, Mapping):
            raise ChannelOwnershipError(
                f"{writer} wrote a {type(value).__name__} to {key!r}, a group of the schema "
                f"{self.name}; a group takes a dict of its subfields ({', '.join(node.children)}) "
                f"or one subfield by its path ({key}.{next(iter(node.children))})",
                writer=writer,
                field=key,
            )
        out: list[tuple[Field, Any]] = []
        for name, item in value.items():
            out.extend(self.split(f"{key}.{name}", item, writer))
        return out

    def unknown(self, key: object, writer: str) -> ChannelOwnershipError:
        """The error of a write to a name that is no field of the schema."""
        known = list(self.nodes)
        close = difflib.get_close_matches(str(key), known, n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        return ChannelOwnershipError(
            f"{writer} wrote {key!r}, which is not a field of the state schema {self.name}"
            f"{hint}; its fields are {', '.join(known)}. Fix the name, or add the field to "
            "the schema with its lifecycle",
            writer=writer,
            field=str(key),
        )


def _members(cls: Any) -> dict[str, tuple[Any, tuple[Any, ...], Any]] | None:
    """``{name: (annotation, metadata, default)}`` of a TypedDict or pydantic model."""
    if _is_typeddict(cls):
        try:
            hints = typing.get_type_hints(cls, include_extras=True)
        except Exception as exc:
            raise SchemaError(
                f"the annotations of {cls.__name__} do not resolve ({exc}); define the schema "
                "and the types it names at module level"
            ) from exc
        return {name: (*_unwrap(hint), MISSING) for name, hint in hints.items()}
    pydantic = sys.modules.get("pydantic")
    if pydantic is None or not isinstance(cls, type) or not issubclass(cls, pydantic.BaseModel):
        return None
    out = {}
    for name, info in getattr(cls, "model_fields").items():  # noqa: B009 (a pydantic class)
        base, meta = _unwrap(info.annotation)
        default = MISSING if info.is_required() else info.get_default(call_default_factory=True)
        out[name] = (base, (*meta, *info.metadata), default)
    return out


def _is_typeddict(cls: Any) -> bool:
    extensions = sys.modules.get("typing_extensions")
    return typing.is_typeddict(cls) or (
        extensions is not None and bool(extensions.is_typeddict(cls))
    )


def _unwrap(hint: Any) -> tuple[Any, tuple[Any, ...]]:
    """The bare type and the ``Annotated`` metadata, through Required/NotRequired/ReadOnly."""
    meta: tuple[Any, ...] = ()
    while True:
        origin = get_origin(hint)
        if origin is Annotated:
            base, *extra = get_args(hint)
            meta = (*meta, *extra)
            hint = base
        elif origin in _WRAPPERS:
            hint = get_args(hint)[0]
        else:
            return hint, meta


def _is_group_type(annotation: Any) -> bool:
    members = _members(annotation) if isinstance(annotation, type) else None
    if not members:
        return False
    return any(
        marker_of(meta, "") is not None or _is_group_type(base)
        for base, meta, _ in members.values()
    )


def _read(cls: Any, prefix: str, inherited: Marker | None, schema: str) -> dict[str, Field | Group]:
    members = _members(cls)
    assert members is not None
    out: dict[str, Field | Group] = {}
    for name, (annotation, meta, pyd_default) in members.items():
        path = f"{prefix}{name}"
        where = f"{schema}.{path}"
        if "." in name or name.startswith("__"):
            raise SchemaError(
                f"{where}: field names may not contain '.' (it separates a group's path) or "
                "start with '__' (the runtime's own records); rename the field"
            )
        marker = marker_of(meta, where)
        if _is_group_type(annotation):
            if isinstance(marker, Loaded):
                raise SchemaError(
                    f"{where} is a group (its subfields carry lifecycles) and Loaded: a loader "
                    "fills one field. Mark the subfields Loaded, or drop their markers so "
                    f"{name} is one loaded dict"
                )
            children = _read(annotation, f"{path}.", _for_children(marker or inherited), schema)
            out[name] = Group(path=path, children=children)
            continue
        marker = marker or inherited
        if marker is None:
            raise SchemaError(
                f"{where} has no lifecycle. Annotate it with one: Annotated[T, Input] (set by "
                "the caller), Annotated[T, Reducer(fn)] (accumulates across turns), "
                "Annotated[T, Loaded(loader)] (fetched each turn) or Annotated[T, TurnScoped] "
                "(fresh each turn)"
            )
        out[name] = _leaf(path, marker, annotation, pyd_default, where)
    return out


def _for_children(marker: Marker | None) -> Marker | None:
    """The lifecycle a group passes to its unmarked subfields."""
    if isinstance(marker, Reducer):
        return Reducer(_reducers.replace)
    if isinstance(marker, TurnScoped):
        return TurnScoped()
    return marker


def _leaf(path: str, marker: Marker, annotation: Any, pyd_default: Any, where: str) -> Field:
    if isinstance(marker, Reducer):
        reducer = marker.fn
    elif isinstance(marker, TurnScoped):
        reducer = marker.reducer
    else:
        reducer = _reducers.replace
    default = default_of(marker)
    if default is MISSING:
        default = pyd_default
    if default is not MISSING:
        try:
            default = freeze(plain(default), where=f"the default of {where}")
        except Exception as exc:
            raise SchemaError(f"{where}: its default cannot be stored: {exc}") from exc
    if isinstance(marker, TurnScoped) and default is MISSING and reducer not in FOLDS_FROM_NOTHING:
        raise SchemaError(
            f"{where} is TurnScoped with the reducer {_reducers.reducer_name(reducer)!r} and "
            "no default: each turn folds its writes from the field's default, so give it "
            "one (TurnScoped(reducer=..., default=0), say)"
        )
    return Field(
        path=path,
        lifecycle=_LIFECYCLE[type(marker)],
        marker=marker,
        reducer=reducer,
        default=default,
        annotation=annotation,
    )


_SCALARS: Final = (str, int, float, bool, type(None))


def plain(value: Any, *, exclude_unset: bool = False) -> Any:
    """Pydantic models (at any depth of dicts and lists) as their JSON dicts."""
    if isinstance(value, _SCALARS):
        return value
    dump = getattr(value, "model_dump", None)
    if dump is not None and hasattr(type(value), "model_fields"):
        return dump(mode="json", exclude_unset=exclude_unset)
    if isinstance(value, dict):
        items = {k: plain(v) for k, v in value.items()}
        return value if all(items[k] is v for k, v in value.items()) else items
    if isinstance(value, list):
        seq = [plain(v) for v in value]
        return value if all(a is b for a, b in zip(seq, value, strict=True)) else seq
    return value


def unflatten(flat: Mapping[str, Any]) -> dict[str, Any]:
    """``{"a.b": 1, "c": 2}`` as ``{"a": {"b": 1}, "c": 2}`` (for schema-free reads)."""
    out: dict[str, Any] = {}
    for path, value in flat.items():
        *parents, last = path.split(".")
        level = out
        for part in parents:
            nxt = level.get(part)
            if not isinstance(nxt, dict):
                nxt = level[part] = {}
            level = nxt
        level[last] = value
    return out
