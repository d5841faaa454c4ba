"""JSON Schema checks: tool arguments, prescribed output paths, state schemas.

jsonschema (Draft 2020-12) is imported on first use, so ``import weft.refs`` stays fast;
a validator is built once per schema object and reused.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping
from typing import Any, Final

from weft.refs.parse import Step, format_steps

_CACHE: Final[dict[int, tuple[Mapping[str, Any], Any]]] = {}
_LOCK: Final = threading.Lock()
_VALUE_DEPENDENT: Final = frozenset(
    {"anyOf", "oneOf", "allOf", "not", "contains", "uniqueItems", "if", "enum", "const",
     "dependentSchemas", "unevaluatedProperties", "unevaluatedItems"}
)  # fmt: skip


def validator_for(schema: Mapping[str, Any]) -> Any:
    """A cached ``Draft202012Validator`` for ``schema`` (the same object gives the same one)."""
    key = id(schema)
    hit = _CACHE.get(key)
    if hit is not None and hit[0] is schema:
        return hit[1]
    from jsonschema import Draft202012Validator  # type: ignore[import-untyped,unused-ignore]

    validator = Draft202012Validator(schema)
    with _LOCK:
        _CACHE[key] = (schema, validator)  # the schema is kept, so its id is not reused
    return validator


def schema_error(schema: Mapping[str, Any]) -> str | None:
    """Why ``schema`` is not a valid JSON Schema, or None."""
    from jsonschema import Draft202012Validator
    from jsonschema.exceptions import SchemaError

    if not isinstance(schema, Mapping):
        return f"a JSON Schema is an object (a dict), not a {type(schema).__name__}"
    try:
        Draft202012Validator.check_schema(schema)
    except SchemaError as exc:
        return str(exc.message)
    return None


def describe(error: Any) -> str:
    """One jsonschema error as ``at <path>: <message>``."""
    where = format_steps(tuple(error.absolute_path)) or "the top level"
    if where.startswith("."):
        where = where[1:]
    return f"at {where}: {error.message}"


def schema_problem(schema: Mapping[str, Any], value: Any) -> str | None:
    """The first reason ``schema`` refuses ``value`` (deepest first), or None."""
    validator = validator_for(schema)
    if validator.is_valid(value):
        return None
    errors = sorted(validator.iter_errors(value), key=lambda e: -len(e.absolute_path))
    return describe(errors[0])


def schema_problems(
    schema: Mapping[str, Any], value: Any, *, dynamic: Iterable[tuple[Step, ...]] = ()
) -> list[str]:
    """Every reason ``schema`` refuses ``value``, leaving out what a reference decides.

    ``dynamic`` are the places in ``value`` that hold references (resolved only at run
    time): an error at or inside one is dropped, and so is an error of a keyword whose
    verdict depends on values (``anyOf``, ``enum`` ...) over a part that holds one.
    Keys and counts are literal, so ``required`` or ``additionalProperties`` still count.
    """
    places = [tuple(p) for p in dynamic]
    out: list[str] = []
    for error in validator_for(schema).iter_errors(value):
        path = tuple(error.absolute_path)
        if any(path[: len(p)] == p for p in places):
            continue
        if error.validator in _VALUE_DEPENDENT and any(p[: len(path)] == path for p in places):
            continue
        out.append(describe(error))
    return sorted(set(out))


def schema_at(schema: Mapping[str, Any] | None, steps: tuple[Step, ...]) -> Any:
    """The part of ``schema`` that describes the value at ``steps`` (None: it says nothing).

    Follows ``properties`` / ``additionalProperties`` for keys and ``prefixItems`` /
    ``items`` for indices; anything else (``$ref``, combinators) ends the walk with None,
    which accepts every value.
    """
    node: Any = schema
    for step in steps:
        if not isinstance(node, Mapping):
            return None
        if type(step) is int:
            prefix = node.get("prefixItems")
            if isinstance(prefix, list) and 0 <= step < len(prefix):
                node = prefix[step]
            else:
                node = node.get("items")
        else:
            properties = node.get("properties")
            if isinstance(properties, Mapping) and step in properties:
                node = properties[step]
            else:
                extra = node.get("additionalProperties")
                node = extra if isinstance(extra, Mapping) else None
        if node is None:
            return None
    return node if isinstance(node, Mapping) else None


def closed_choices(schema: Any) -> list[str] | None:
    """The strings a schema allows when it is a closed set (``const``, ``enum``, or
    ``oneOf``/``anyOf`` of those), else None."""
    if not isinstance(schema, Mapping):
        return None
    if "const" in schema:
        return [schema["const"]] if isinstance(schema["const"], str) else []
    if "enum" in schema and isinstance(schema["enum"], list):
        return [v for v in schema["enum"] if isinstance(v, str)]
    for key in ("oneOf", "anyOf"):
        options = schema.get(key)
        if isinstance(options, list) and options:
            found: list[str] = []
            for option in options:
                choices = closed_choices(option)
                if choices is None:
                    return None
                found.extend(choices)
            return found
    return None
