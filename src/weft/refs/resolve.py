"""Resolving references against a scope (``weft.refs.scopes``).

A value is *compiled* once (``compile_value``): literal parts are frozen and kept, and only
the places that hold references are visited each time it is resolved.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any, Final

from weft.errors import ReferenceSyntaxError, UnresolvedReferenceError
from weft.refs.parse import Expression, Reference, Step, parse_value_string
from weft.refs.scopes import MappingScope, Scope, ScopeLike, as_scope
from weft.store import MISSING, FrozenDict, FrozenList, freeze

_SHOWN_KEYS: Final = 20


def read(ref: Reference, scope: Scope) -> Any:
    """The value ``ref`` names in ``scope``, or ``UnresolvedReferenceError``."""
    if ref.field is None:
        fields = scope.fields(ref.kind)
        return FrozenDict({name: scope.lookup(ref.kind, name) for name in fields})
    value = scope.lookup(ref.kind, ref.field)
    if value is MISSING:
        raise _unresolved(ref, 0, MISSING, scope)
    depth = 1
    for step in ref.path:
        if type(step) is int:
            if isinstance(value, list):
                try:
                    value = value[step]
                except IndexError:
                    raise _unresolved(ref, depth, value, scope) from None
            else:
                raise _unresolved(ref, depth, value, scope)
        elif isinstance(value, dict):
            found = value.get(step, MISSING)
            if found is MISSING:
                raise _unresolved(ref, depth, value, scope)
            value = found
        else:
            raise _unresolved(ref, depth, value, scope)
        depth += 1
    return value


def read_expression(expr: Expression, scope: Scope) -> Any:
    """The first ``||`` group whose references all resolve: one value for a lone
    reference, the list of values for an ``&&`` group."""
    failures: list[UnresolvedReferenceError] = []
    for group in expr.alternatives:
        try:
            if len(group) == 1:
                return read(group[0], scope)
            return FrozenList([read(ref, scope) for ref in group])
        except UnresolvedReferenceError as exc:
            failures.append(exc)
    if len(failures) == 1:
        raise failures[0]
    first = failures[0]
    raise UnresolvedReferenceError(
        f"none of the alternatives of {expr.text} resolves: "
        + "; ".join(str(exc) for exc in failures),
        reference=expr.text,
        deepest=first.deepest,
        keys=first.keys,
    ) from first


def _unresolved(ref: Reference, depth: int, found: Any, scope: Scope) -> UnresolvedReferenceError:
    """The error for ``ref`` failing at step ``depth`` (0: the entry itself is missing)."""
    if depth == 0:
        fields = scope.fields(ref.kind)
        shown = ", ".join(fields[:_SHOWN_KEYS]) + (", ..." if len(fields) > _SHOWN_KEYS else "")
        there = f"{ref.kind} holds: {shown}" if fields else f"there are no {ref.kind} entries"
        return UnresolvedReferenceError(
            f"{ref.text}: nothing is stored at {ref.kind}:{ref.field}; {there}. Check the "
            f"name, or let a call write it first (an _outputPath of †{ref.kind}.{ref.field})",
            reference=ref.text,
            deepest=None,
            keys=tuple(fields),
        )
    deepest = ref.prefix(depth).text
    step = ref.steps[depth]
    keys: tuple[str, ...] = ()
    if isinstance(found, dict):
        keys = tuple(map(str, found))
        shown = ", ".join(keys[:_SHOWN_KEYS]) + (", ..." if len(keys) > _SHOWN_KEYS else "")
        if type(step) is int:
            problem = f"{deepest} is an object, not a list, so it has no item [{step}]"
        else:
            problem = f"{deepest} has no key {step!r}"
        detail = f"its keys are: {shown}" if keys else "it is an empty object"
    elif isinstance(found, list):
        n = len(found)
        if type(step) is int:
            items = f"{n} item{'s' if n != 1 else ''}"
            problem = f"{deepest} is a list of {items}, so [{step}] is out of range"
        else:
            problem = f"{deepest} is a list, not an object, so it has no key {step!r}"
        detail = f"its indices are 0..{n - 1} (or -{n}..-1)" if n else "it is empty"
    else:
        problem = f"{deepest} is a {_json_type(found)}, so there is nothing inside it to read"
        detail = "references read only into objects (.key) and lists ([index])"
    return UnresolvedReferenceError(
        f"{ref.text}: {problem}; {detail}",
        reference=ref.text,
        deepest=deepest,
        keys=keys,
    )


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    return type(value).__name__


class Compiled:
    """A value with its references found once; ``resolve(scope)`` fills them in."""

    __slots__ = ()

    references: tuple[Reference, ...] = ()
    reads: tuple[Expression, ...] = ()
    """What resolving reads: whole-value expressions, and each embedded reference alone."""

    def resolve(self, scope: Scope) -> Any:
        raise NotImplementedError

    def literal(self, path: tuple[Step, ...] = ()) -> tuple[Any, list[tuple[Step, ...]]]:
        """The value as far as it is known before a run (``None`` where a reference
        goes), and the places that hold references."""
        return None, [path]


class _Const(Compiled):
    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value

    def resolve(self, scope: Scope) -> Any:
        return self.value

    def literal(self, path: tuple[Step, ...] = ()) -> tuple[Any, list[tuple[Step, ...]]]:
        return self.value, []


class _Expr(Compiled):
    __slots__ = ("expr", "reads", "references")

    def __init__(self, expr: Expression) -> None:
        self.expr = expr
        self.references = expr.references
        self.reads = (expr,)

    def resolve(self, scope: Scope) -> Any:
        group = self.expr.alternatives
        if len(group) == 1 and len(group[0]) == 1:
            return read(group[0][0], scope)
        return read_expression(self.expr, scope)


class _Text(Compiled):
    __slots__ = ("parts", "reads", "references")

    def __init__(self, parts: tuple[str | Reference, ...]) -> None:
        self.parts = parts
        self.references = tuple(p for p in parts if isinstance(p, Reference))
        self.reads = tuple(Expression(((ref,),)) for ref in self.references)

    def resolve(self, scope: Scope) -> str:
        out = []
        for part in self.parts:
            if isinstance(part, str):
                out.append(part)
            else:
                value = read(part, scope)
                out.append(value if isinstance(value, str) else _json_text(value))
        return "".join(out)


class _Dict(Compiled):
    __slots__ = ("const", "dynamic", "reads", "references")

    def __init__(self, const: dict[str, Any], dynamic: list[tuple[str, Compiled]]) -> None:
        self.const = const
        self.dynamic = dynamic
        self.references = tuple(r for _, c in dynamic for r in c.references)
        self.reads = tuple(e for _, c in dynamic for e in c.reads)

    def resolve(self, scope: Scope) -> Any:
        out = dict(self.const)
        for key, compiled in self.dynamic:
            out[key] = compiled.resolve(scope)
        return FrozenDict(out)

    def literal(self, path: tuple[Step, ...] = ()) -> tuple[Any, list[tuple[Step, ...]]]:
        out = dict(self.const)
        places: list[tuple[Step, ...]] = []
        for key, compiled in self.dynamic:
            out[key], inner = compiled.literal((*path, key))
            places.extend(inner)
        return out, places


class _List(Compiled):
    __slots__ = ("items", "reads", "references")

    def __init__(self, items: list[Compiled]) -> None:
        self.items = items
        self.references = tuple(r for c in items for r in c.references)
        self.reads = tuple(e for c in items for e in c.reads)

    def resolve(self, scope: Scope) -> Any:
        return FrozenList([item.resolve(scope) for item in self.items])

    def literal(self, path: tuple[Step, ...] = ()) -> tuple[Any, list[tuple[Step, ...]]]:
        pairs = [compiled.literal((*path, i)) for i, compiled in enumerate(self.items)]
        return [value for value, _ in pairs], [place for _, inner in pairs for place in inner]


def compile_value(value: Any) -> Compiled:
    """Find the references in ``value`` once (syntax errors are raised here, before
    anything runs); literal parts are frozen and shared by every resolution."""
    if isinstance(value, str):
        meaning = parse_value_string(value)
        if isinstance(meaning, str):
            return _Const(meaning)
        if isinstance(meaning, Expression):
            return _Expr(meaning)
        return _Text(meaning)
    if isinstance(value, dict):
        compiled = compile_mapping(value)
        assert compiled is not None  # without on_error, a syntax error raises
        return compiled
    if isinstance(value, (list, tuple)):
        items = [compile_value(item) for item in value]
        if all(isinstance(item, _Const) for item in items):
            return _Const(FrozenList(item.resolve(MappingScope({})) for item in items))
        return _List(items)
    return _Const(freeze(value, where="a call's arguments"))


def compile_mapping(
    value: Mapping[str, Any], on_error: Callable[[str, ReferenceSyntaxError], None] | None = None
) -> Compiled | None:
    """``compile_value`` of a dict. With ``on_error``, each key is compiled on its own, a
    syntax error is reported as ``on_error(key, error)``, and the result is None if any
    key failed."""
    const: dict[str, Any] = {}
    dynamic: list[tuple[str, Compiled]] = []
    ok = True
    for key, item in value.items():
        try:
            compiled = compile_value(item)
        except ReferenceSyntaxError as exc:
            if on_error is None:
                raise
            on_error(key, exc)
            ok = False
            continue
        if isinstance(compiled, _Const):
            const[key] = compiled.value
        else:
            const[key] = None  # a placeholder keeps the key's place in the order
            dynamic.append((key, compiled))
    if not ok:
        return None
    frozen = freeze(const, where="a call's arguments")
    return _Dict(frozen, dynamic) if dynamic else _Const(frozen)


def resolve(value: Any, scope: ScopeLike) -> Any:
    """``value`` with every reference replaced by what it names in ``scope``.

    >>> resolve({"userId": "†state.currentUser.id", "note": "for ††{x}"},
    ...         {"state": {"currentUser": {"id": 42}}})
    {'userId': 42, 'note': 'for †{x}'}

    Results are read-only; a reference inside longer text is interpolated as compact JSON
    unless its value is a string.
    """
    return compile_value(value).resolve(as_scope(scope))


def references_in(value: Any) -> tuple[Reference, ...]:
    """Every reference in ``value`` (syntax errors raised), in document order."""
    return compile_value(value).references


def _json_text(value: Any) -> str:
    try:
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)
    except (TypeError, ValueError):
        return str(value)
