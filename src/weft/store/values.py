"""What a stored value may be, and how the store keeps it from changing.

The store owns its values: a write takes a frozen copy of what it is given,
so neither the caller's later mutations nor a reader's reach into the store,
its forks or its event log (the defect of "values stored by reference").
Frozen containers are subclasses of ``dict`` and ``list``, so they compare
equal to plain ones, serialise as JSON and pass ``isinstance`` checks; only
their mutating methods raise. ``thaw`` gives a plain mutable deep copy.
"""

from __future__ import annotations

import copy
import dataclasses
import enum
import math
import operator
from collections.abc import Callable
from datetime import date, datetime
from typing import Any, Final, NoReturn

from weft.errors import ValueTypeError


class _Sentinel:
    """A value of its own, named like the module global that holds it (pickled as that)."""

    __slots__ = ("_name",)

    def __init__(self, name: str) -> None:
        self._name = name

    def __repr__(self) -> str:
        return self._name

    def __reduce__(self) -> str:
        return self._name


class _Missing(_Sentinel):
    """The type of ``MISSING``: no value at all, where ``None`` is a value."""

    __slots__ = ()

    def __bool__(self) -> bool:
        return False


MISSING: Final = _Missing("MISSING")
DELETE: Final = _Sentinel("DELETE")
"""In an update for the ``merge`` reducer, removes that key."""

_READ_ONLY = (
    "stored values are read-only (they are shared with forks and the event log); "
    "take a mutable copy with weft.store.thaw(value), change it, and write it back"
)


def _read_only(*_args: Any, **_kwargs: Any) -> NoReturn:
    raise TypeError(_READ_ONLY)


class _Frozen:
    """Frozen containers are their own copies."""

    __slots__ = ()

    def __copy__(self) -> Any:
        return self

    def __deepcopy__(self, memo: dict[int, Any]) -> Any:
        return self


class FrozenDict(_Frozen, dict[str, Any]):
    """A ``dict`` whose mutating methods raise. Build one with ``freeze``."""

    __slots__ = ()
    __setitem__ = __delitem__ = __ior__ = clear = pop = popitem = setdefault = update = _read_only

    def __hash__(self) -> int:  # type: ignore[override,unused-ignore]
        return hash(frozenset(self.items()))

    def __reduce__(self) -> tuple[Any, ...]:
        return (FrozenDict, (dict(self),))


class FrozenList(_Frozen, list[Any]):
    """A ``list`` whose mutating methods raise. Build one with ``freeze``."""

    __slots__ = ()
    __setitem__ = __delitem__ = __iadd__ = __imul__ = append = extend = insert = _read_only
    pop = remove = clear = sort = reverse = _read_only

    def __hash__(self) -> int:  # type: ignore[override,unused-ignore]
        return hash(tuple(self))

    def __reduce__(self) -> tuple[Any, ...]:
        return (FrozenList, (list(self),))


BUILTIN_TYPES: Final[dict[type, str]] = {}
"""weft's own record types (``weft.store.records``), known to every registry."""
BUILTIN_NAMES: Final[dict[str, type]] = {}


def register_builtin(cls: type, name: str) -> type:
    """Make one of weft's own record types known to every registry under ``name``: a
    frozen dataclass, which ``freeze`` checks field by field and keeps as it is."""
    params = getattr(cls, "__dataclass_params__", None)
    assert params is not None and params.frozen, f"{cls.__qualname__} is not a frozen dataclass"
    BUILTIN_TYPES[cls] = name
    BUILTIN_NAMES[name] = cls
    return cls


class TypeRegistry:
    """Types beyond plain JSON that the store accepts: pydantic models and dataclasses.

    A registered type gets a stable name, which the JSON codec writes beside the
    data; loading never imports a type named in the data, it only looks the name
    up here.
    """

    def __init__(self) -> None:
        self._by_type: dict[type, str] = {}
        self._by_name: dict[str, type] = {}

    def register(self, cls: type, name: str | None = None) -> type:
        """Accept instances of ``cls`` as stored values; returns ``cls`` (usable as a decorator)."""
        if not isinstance(cls, type) or not (
            dataclasses.is_dataclass(cls) or _is_pydantic_model(cls)
        ):
            raise ValueTypeError(
                f"cannot register {getattr(cls, '__qualname__', cls)!r}: only pydantic models "
                "and dataclasses can be registered; convert other types to dicts before "
                "storing them"
            )
        if name is not None and not isinstance(name, str):
            raise ValueTypeError(f"register({cls.__qualname__}, name={name!r}): a name is text")
        name = name or f"{cls.__module__}.{cls.__qualname__}"
        known = self._by_name.get(name) or BUILTIN_NAMES.get(name)
        if known is not None and known is not cls:
            raise ValueTypeError(
                f"type name {name!r} is already registered for {known.__qualname__}; "
                "pass a distinct name= to register()"
            )
        self._by_type[cls] = name
        self._by_name[name] = cls
        return cls

    def name_of(self, cls: type) -> str | None:
        return self._by_type.get(cls) or BUILTIN_TYPES.get(cls)

    def type_named(self, name: str) -> type | None:
        return self._by_name.get(name) or BUILTIN_NAMES.get(name)

    def __contains__(self, cls: object) -> bool:
        return cls in self._by_type or cls in BUILTIN_TYPES


def _is_pydantic_model(cls: type) -> bool:
    from pydantic import BaseModel  # imported when needed: ``import weft`` stays light

    return isinstance(cls, type) and issubclass(cls, BaseModel)


registry: Final = TypeRegistry()
"""The default registry; ``register_type`` adds to it."""


def register_type(cls: type, name: str | None = None) -> type:
    """Register a pydantic model or dataclass with the default registry."""
    return registry.register(cls, name)


MAX_DEPTH: Final = 100
"""How deeply a written value may nest containers (dicts, lists, registered objects).

Deeper values are refused when written, so every encoder and backend can take whatever the
store holds: the tightest of them, orjson, stops at 254 levels of JSON, and the codec may
spend two levels on one container (a tagged object around its data) plus a few on the record
around a value. Nothing real nests a hundred deep; a hostile value that does would otherwise
reach Python's recursion limit. Values already in a store are frozen and count as checked.
"""
MAX_INT_DIGITS: Final = 4300
"""The longest integer (in decimal digits) a value may hold: Python's own limit on turning
an int into JSON text and back (``sys.get_int_max_str_digits()``)."""

_SCALARS: Final = (str, int, bool, type(None))
_IMMUTABLE: Final = (datetime, date, bytes)  # stored as they are; the codec tags them
_AS_IS: Final = frozenset({bool, type(None), FrozenDict, FrozenList})
"""Values stored as they are, with no look inside (a frozen container was checked when made)."""
_INT_HIGH: Final = 10**MAX_INT_DIGITS
_INT_LOW: Final = -_INT_HIGH
_isfinite: Final = math.isfinite


def kept(value: Any) -> bool:
    """Whether ``freeze`` keeps ``value`` as it is, with no copy and no look inside: an int
    of at most ``MAX_INT_DIGITS`` digits, an ASCII str, None, a bool or a frozen container
    (checked when it was made). Every write path asks this before it calls ``freeze`` (a
    tenth of that call's cost), and ``freeze`` itself starts with it."""
    cls = value.__class__
    return (
        (cls is int and _INT_LOW < value < _INT_HIGH)
        or cls in _AS_IS
        or (cls is str and value.isascii())
    )


class _Refusal(Exception):
    """Raised inside the walk; collects the path to the bad part as it unwinds."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason
        self.path: list[str] = []


def freeze(
    value: Any,
    *,
    where: str = "value",
    types: TypeRegistry = registry,
    allow_delete: bool = False,
) -> Any:
    """Return a frozen deep copy of ``value``, or raise ``ValueTypeError`` naming ``where``.

    ``where`` names the key being written, so the error says which write was
    refused and at which place inside the value (``state:cfg.items[2]``). Refused: what is
    not JSON (a set, a socket), a float that is not finite, a string that is not Unicode
    text (a lone surrogate), an int past ``MAX_INT_DIGITS`` digits and containers nested
    past ``MAX_DEPTH``, inside registered objects too: what a store holds, every backend
    can save.
    """
    if kept(value):
        return value
    cls = type(value)
    try:
        if cls in BUILTIN_TYPES:  # weft's own record (one per node of a recorded run)
            return _check_fields(value, types, 1)  # frozen: _freeze's registered case
        return _freeze(value, types, allow_delete, 0)
    except _Refusal as refusal:
        inside = "".join(reversed(refusal.path))
        if len(inside) > 200:
            inside = f"{inside[:120]}...{inside[-40:]}"
        raise ValueTypeError(f"{where}{inside}: {refusal.reason}") from None


def check_text(text: str, what: str = "the text") -> None:
    """Raise ``ValueTypeError`` if ``text`` is not Unicode text that UTF-8 can hold (it holds
    a lone surrogate, as JSON's ``"\\ud800"`` decodes to): no backend could save it."""
    if not text.isascii():
        try:
            _text(text)
        except _Refusal as refusal:
            raise ValueTypeError(f"{what}: {refusal.reason}") from None


def _text(text: str) -> str:
    """``text`` (non-ASCII) if UTF-8 can hold it, else ``_Refusal``."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise _Refusal(
            f"the text holds a lone surrogate ({text[exc.start]!r} at character {exc.start}), "
            "which is not Unicode and cannot be saved as UTF-8; decode bytes with "
            "errors='replace', or drop the character"
        ) from None
    return text


def _freeze(
    value: Any, types: TypeRegistry, allow_delete: bool, depth: int, strict: bool = False
) -> Any:
    """The frozen copy of ``value``, found inside ``depth`` containers (see ``freeze``).
    ``strict``: inside a registered object, which is stored as it is, so nothing may need
    converting (an enum or a str subclass is refused, not turned into its plain value).

    The loops check the common scalars inline (a call per item would double their cost)."""
    cls = type(value)
    if cls is float:
        if _isfinite(value):
            return value
        raise _Refusal(f"{value!r} is not a JSON number; store None or a string instead")
    if cls in _AS_IS:
        return value
    if cls is str:
        return value if value.isascii() else _text(value)
    if cls is int:
        if _INT_LOW < value < _INT_HIGH:
            return value
        raise _Refusal(
            f"an int of more than {MAX_INT_DIGITS} digits cannot be written as JSON (Python "
            "will not turn it into text); store hex(n) or n.to_bytes(...) instead"
        )
    if isinstance(value, dict):
        if depth >= MAX_DEPTH:
            raise _Refusal(_TOO_DEEP)
        depth += 1
        out: dict[str, Any] = {}
        for key, item in value.items():
            if type(key) is not str or not key.isascii():
                _key(key)
            icls = type(item)
            if (
                (icls is str and item.isascii())
                or icls in _AS_IS
                or (icls is int and _INT_LOW < item < _INT_HIGH)
                or (icls is float and _isfinite(item))
            ):
                out[key] = item
            elif item is DELETE and allow_delete:
                out[key] = DELETE
            else:
                try:
                    out[key] = _freeze(item, types, False, depth, strict)
                except _Refusal as refusal:
                    refusal.path.append(f".{key}")
                    raise
        return FrozenDict(out)
    if isinstance(value, (list, tuple)):
        if depth >= MAX_DEPTH:
            raise _Refusal(_TOO_DEEP)
        depth += 1
        items = list(value)
        for i, item in enumerate(items):
            icls = type(item)
            if not (
                (icls is str and item.isascii())
                or icls in _AS_IS
                or (icls is int and _INT_LOW < item < _INT_HIGH)
                or (icls is float and _isfinite(item))
            ):
                try:
                    items[i] = _freeze(item, types, False, depth, strict)
                except _Refusal as refusal:
                    refusal.path.append(f"[{i}]")
                    raise
        return FrozenList(items)
    if cls in _IMMUTABLE:
        return value
    if cls in types:
        if depth >= MAX_DEPTH:
            raise _Refusal(_TOO_DEEP)
        return _copy_registered(_check_fields(value, types, depth + 1))
    if isinstance(value, (enum.Enum, str, int)):
        if strict:
            raise _Refusal(
                f"a {cls.__module__}.{cls.__qualname__} inside a registered object is kept as "
                "it is, which JSON cannot say; hold its plain value (a str, an int) there"
            )
        if isinstance(value, enum.Enum):
            plain = value.value
        else:  # other str and int subclasses are stored as a plain str or int
            plain = str(value) if isinstance(value, str) else int(value)
        return _freeze(plain, types, False, depth)
    if value is DELETE:
        raise _Refusal(
            "DELETE only means something in an update for the merge reducer; declare the "
            "field with reducers.merge or use store.delete() to remove the key"
        )
    hint = (
        "register it with weft.store.register_type(cls)"
        if dataclasses.is_dataclass(cls) or _is_pydantic_model(cls)
        else "convert it to a dict, list, str, number, bool or None"
    )
    raise _Refusal(f"a {cls.__module__}.{cls.__qualname__} is not JSON-serialisable; {hint}")


def _key(key: Any) -> None:
    """Refuse a dict key that JSON cannot take (called for any but a plain ASCII str)."""
    if not isinstance(key, str):
        raise _Refusal(
            f"dict key {key!r} is a {type(key).__name__}; JSON objects only have "
            "string keys, so convert it with str()"
        )
    if not key.isascii():
        try:
            _text(key)
        except _Refusal as refusal:
            raise _Refusal(f"dict key {key!r}: {refusal.reason}") from None


_TOO_DEEP: Final = (
    f"containers are nested more than {MAX_DEPTH} deep (weft.store.MAX_DEPTH), deeper than "
    "a stored value may go; flatten the value, or store the deep part as JSON text"
)
_Reader = tuple[tuple[str, ...], Callable[[Any], tuple[Any, ...]], frozenset[str]]
_FIELDS: dict[type, _Reader | None] = {}
"""A registered dataclass's field names, a reader of all their values at once, and (for
weft's own records) its text fields; None for a pydantic model (read with ``model_dump``)."""


def _check_fields(value: Any, types: TypeRegistry, depth: int) -> Any:
    """Check a registered object's fields as the codec will write them (``_freeze`` with
    ``strict``); the object itself is stored as it is, so it is returned. weft's own records
    are written once per node of a recorded run, so plain fields are passed over in one quick
    loop first; their text fields (a label, an error message, for people) holding a lone
    surrogate are escaped in a copy instead, so that a failure is never hidden by its own
    report being refused."""
    cls = type(value)
    try:
        found = _FIELDS[cls]
    except KeyError:
        found = _FIELDS[cls] = _reader(cls)
    texts: frozenset[str] = frozenset()
    if found is None:
        dumped = value.model_dump(mode="python")
        names, values = tuple(dumped), tuple(dumped.values())
    else:
        names, values, texts = found[0], found[1](value), found[2]
        for item in values:
            icls = type(item)
            if icls in _AS_IS:
                continue
            if icls is str:
                if item.isascii():
                    continue
            elif icls is float:
                if item - item == 0.0:  # finite
                    continue
            elif icls is int and _INT_LOW < item < _INT_HIGH:
                continue
            break
        else:
            return value
    escaped: dict[str, str] = {}
    for name, item in zip(names, values, strict=True):
        try:
            _freeze(item, types, False, depth, True)
        except _Refusal as refusal:
            if name in texts and type(item) is str:
                escaped[name] = item.encode("utf-8", "backslashreplace").decode()
                continue
            refusal.path.append(f".{name}")
            raise
    return dataclasses.replace(value, **escaped) if escaped else value


def _reader(cls: type) -> _Reader | None:
    if not dataclasses.is_dataclass(cls):
        return None
    fields = dataclasses.fields(cls)
    names = tuple(f.name for f in fields)
    texts = frozenset(f.name for f in fields if cls in BUILTIN_TYPES and f.type != "Any")
    if len(names) == 1:  # attrgetter of one name gives the value, not a 1-tuple
        return names, lambda value: (getattr(value, names[0]),), texts
    return names, operator.attrgetter(*names), texts


def _copy_registered(value: Any) -> Any:
    params = getattr(value, "__dataclass_params__", None)
    if params is not None and params.frozen:
        return value
    config = getattr(value, "model_config", None)
    if isinstance(config, dict) and config.get("frozen"):
        return value
    return copy.deepcopy(value)


def thaw(value: Any) -> Any:
    """A plain, mutable deep copy of a stored value."""
    if isinstance(value, dict):
        return {key: thaw(item) for key, item in value.items()}
    if isinstance(value, list):
        return [thaw(item) for item in value]
    if type(value) in _SCALARS or type(value) is float:
        return value
    return copy.deepcopy(value)
