"""A quick yes for the JSON Schemas tools usually have: ``quick_check(schema)`` compiles the
common subset (``type``, ``properties``, ``required``, ``additionalProperties``, ``items``,
``enum`` and annotations) into a plain function that says ``True`` when a value is surely
valid, in a microsecond where a jsonschema validator takes fifteen.

It never says no: ``False`` means "not sure" (a float where an integer is asked, say), and
the caller asks the full validator (``weft.refs.schemas``), which decides and explains. A
schema outside the subset compiles to None: always use the full validator for it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Final

Check = Callable[[Any], bool]

_ANNOTATIONS: Final = frozenset(
    {"title", "description", "default", "examples", "$comment", "deprecated", "readOnly",
     "writeOnly", "$schema", "$id"}
)  # fmt: skip
_KEYS: Final = _ANNOTATIONS | {
    "type",
    "properties",
    "required",
    "additionalProperties",
    "items",
    "enum",
}
_SCALAR_TYPES: Final[Mapping[str, Check]] = {
    "string": lambda v: v.__class__ is str,
    "integer": lambda v: v.__class__ is int,
    "number": lambda v: v.__class__ is int or v.__class__ is float,
    "boolean": lambda v: v.__class__ is bool,
    "null": lambda v: v is None,
}
_CACHE: Final[dict[int, tuple[Any, Check | None]]] = {}


def quick_check(schema: Any) -> Check | None:
    """The quick check of ``schema`` (cached per schema object), or None when the schema
    uses more than the subset."""
    hit = _CACHE.get(id(schema))
    if hit is not None and hit[0] is schema:
        return hit[1]
    check = _compile(schema, 0)
    if len(_CACHE) >= 4096:
        _CACHE.clear()
    _CACHE[id(schema)] = (schema, check)  # the schema is kept, so its id is not reused
    return check


def _compile(schema: Any, depth: int) -> Check | None:
    if schema is True or (isinstance(schema, Mapping) and not set(schema) - _ANNOTATIONS):
        return _anything
    if not isinstance(schema, Mapping) or depth > 8 or set(schema) - _KEYS:
        return None
    checks: list[Check] = []
    kind = schema.get("type")
    if kind is not None:
        typed = _type_check(kind, schema, depth)
        if typed is None:
            return None
        checks.append(typed)
    elif {"properties", "required", "additionalProperties", "items"} & set(schema):
        return None  # these apply to some types only: leave it to the full validator
    if "enum" in schema:
        options = schema["enum"]
        if not isinstance(options, list) or not all(
            o.__class__ in (str, bool) or o is None for o in options
        ):
            return None
        allowed = [(o.__class__, o) for o in options]
        checks.append(lambda v: (v.__class__, v) in allowed)
    if len(checks) == 1:
        return checks[0]
    return lambda v: all(check(v) for check in checks)


def _type_check(kind: Any, schema: Mapping[str, Any], depth: int) -> Check | None:
    if kind == "object":
        return _object_check(schema, depth)
    if kind == "array":
        if "items" not in schema:
            return lambda v: v.__class__ is list
        item = _compile(schema["items"], depth + 1)
        if item is None:
            return None
        return lambda v: v.__class__ is list and all(item(x) for x in v)
    if set(schema) & {"properties", "required", "additionalProperties", "items"}:
        return None
    if isinstance(kind, str):
        return _SCALAR_TYPES.get(kind)
    if isinstance(kind, list) and kind and all(k in _SCALAR_TYPES for k in kind):
        each = [_SCALAR_TYPES[k] for k in kind]
        return lambda v: any(check(v) for check in each)
    return None


def _object_check(schema: Mapping[str, Any], depth: int) -> Check | None:
    if "items" in schema:
        return None
    properties = schema.get("properties", {})
    required = schema.get("required", [])
    extra = schema.get("additionalProperties", True)
    if (
        not isinstance(properties, Mapping)
        or not isinstance(required, list)
        or not all(isinstance(name, str) for name in required)
        or extra not in (True, False)
    ):
        return None
    fields: dict[str, Check] = {}
    for name, sub in properties.items():
        check = _compile(sub, depth + 1)
        if check is None:
            return None
        fields[name] = check
    must = tuple(required)
    closed = extra is False

    def check_object(value: Any) -> bool:
        if value.__class__ is not dict:
            return False
        for name in must:
            if name not in value:
                return False
        for name, item in value.items():
            field = fields.get(name)
            if field is None:
                if closed:
                    return False
            elif not field(item):
                return False
        return True

    return check_object


def _anything(value: Any) -> bool:
    return True
