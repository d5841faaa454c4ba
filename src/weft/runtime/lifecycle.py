"""The four lifecycles of a state field (seed 004; the README's table says which lives how long).

A turn-scoped or loaded field that holds an earlier turn's value is set back to its
default (or to no value) as a turn begins, so a stale ``route`` cannot leak into the
next turn. A turn-scoped field that folds with a reducer other than ``replace`` folds
from that start: the reducers of ``FOLDS_FROM_NOTHING`` fold from nothing, any other
needs a default (``default=0`` for ``reducers.add``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import KW_ONLY, dataclass
from typing import Any, Final, TypeAlias

from weft.errors import SchemaError
from weft.store import MISSING
from weft.store import reducers as _reducers

ReducerFn: TypeAlias = Callable[[Any, Any], Any]
"""``(current, update) -> new``; ``current`` is ``MISSING`` on a built-in's first write."""

LoaderFn: TypeAlias = Callable[..., Any]
"""``loader(context, state) -> value`` (or an awaitable of it): see ``Loaded``."""


def _check_default(owner: str, default: Any, factory: Callable[[], Any] | None) -> None:
    if default is not MISSING and factory is not None:
        raise SchemaError(f"{owner}: give default or default_factory, not both")
    if factory is not None and not callable(factory):
        raise SchemaError(f"{owner}: default_factory={factory!r} is not callable")


@dataclass(frozen=True, slots=True, kw_only=True)
class Input:
    """Set by the caller at turn start; a field with no default must be given every turn."""

    default: Any = MISSING
    default_factory: Callable[[], Any] | None = None

    def __post_init__(self) -> None:
        _check_default("Input", self.default, self.default_factory)


@dataclass(frozen=True, slots=True)
class Reducer:
    """Accumulates across turns: each write goes through ``fn`` (``operator.add``,
    ``weft.store.reducers.merge`` ...); ``each_turn`` is written at every turn start."""

    fn: ReducerFn
    _: KW_ONLY
    default: Any = MISSING
    default_factory: Callable[[], Any] | None = None
    each_turn: Any = MISSING

    def __post_init__(self) -> None:
        if not callable(self.fn):
            raise SchemaError(
                f"Reducer({self.fn!r}): a reducer is a function (current, update) -> new, "
                "e.g. operator.add or weft.store.reducers.merge"
            )
        _check_default("Reducer", self.default, self.default_factory)


@dataclass(frozen=True, slots=True)
class Loaded:
    """Re-fetched each turn by ``loader(context, state)`` (sync or async), unless the
    turn's input gives it. A ``RecallResult`` is kept as its values."""

    loader: LoaderFn
    _: KW_ONLY
    default: Any = MISSING
    default_factory: Callable[[], Any] | None = None

    def __post_init__(self) -> None:
        if not callable(self.loader):
            raise SchemaError(
                f"Loaded({self.loader!r}): a loader is a function (context, state) -> value"
            )
        _check_default("Loaded", self.default, self.default_factory)


@dataclass(frozen=True, slots=True, kw_only=True)
class TurnScoped:
    """Fresh each turn, last write wins; ``reducer`` folds several writes within one turn
    instead. Two parallel nodes writing a last-write-wins field is an error naming both."""

    default: Any = MISSING
    default_factory: Callable[[], Any] | None = None
    reducer: ReducerFn = _reducers.replace

    def __post_init__(self) -> None:
        if not callable(self.reducer):
            raise SchemaError(f"TurnScoped(reducer={self.reducer!r}): a reducer is a function")
        _check_default("TurnScoped", self.default, self.default_factory)


Marker: TypeAlias = Input | Reducer | Loaded | TurnScoped
MARKERS: tuple[type, ...] = (Input, Reducer, Loaded, TurnScoped)


def marker_of(metadata: tuple[Any, ...] | list[Any], where: str) -> Marker | None:
    """The one lifecycle marker among a field's ``Annotated`` metadata, or None."""
    found: list[Marker] = []
    for item in metadata:
        if item is Input:
            found.append(Input())
        elif item is TurnScoped:
            found.append(TurnScoped())
        elif item is Reducer or item is Loaded:
            raise SchemaError(
                f"{where}: {item.__name__} needs an argument: "
                + ("Reducer(operator.add)" if item is Reducer else "Loaded(my_loader)")
            )
        elif isinstance(item, MARKERS):
            found.append(item)  # type: ignore[arg-type]
    if len(found) > 1:
        names = ", ".join(type(m).__name__ for m in found)
        raise SchemaError(f"{where} has {len(found)} lifecycles ({names}); a field has exactly one")
    return found[0] if found else None


FOLDS_FROM_NOTHING: Final[frozenset[ReducerFn]] = frozenset(
    {_reducers.replace, _reducers.merge, _reducers.append, _reducers.extend, _reducers.union}
)


def default_of(marker: Marker) -> Any:
    return marker.default if marker.default_factory is None else marker.default_factory()
