"""OpenAI's strict form of a tool's JSON Schema: what strict mode accepts, and
``strict_schema`` that rewrites a schema into it."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any, Final

from weft.calls.schema import allows_null, resolve_ref, short
from weft.errors import ToolDefinitionError

STRICT_FORMATS: Final = frozenset(
    {"date-time", "time", "date", "duration", "email", "hostname", "ipv4", "ipv6", "uuid"}
)
"""The string formats OpenAI's strict mode accepts; others are left out of the strict form."""

_STRICT_KEYWORDS: Final = frozenset(
    {
        "type", "description", "title", "enum", "const", "anyOf", "$ref", "$defs",
        "properties", "required", "additionalProperties", "items", "minItems", "maxItems",
        "pattern", "format", "multipleOf", "maximum", "exclusiveMaximum", "minimum",
        "exclusiveMinimum",
    }
)  # fmt: skip
"""The keywords OpenAI's strict mode supports; the rest are left out of the strict form
(the full schema still checks the arguments when they arrive)."""

MAX_STRICT_NESTING: Final = 10


def strict_schema(schema: Mapping[str, Any]) -> dict[str, Any]:
    """``schema`` (the arguments of a tool) in OpenAI's strict form, as a new dict.

    Every object gets ``additionalProperties: false`` and lists every property in
    ``required``; a property that was optional becomes nullable (a model sends ``null``
    for "not given", and ``check_arguments(..., strict=True)`` reads it so). ``oneOf``
    becomes ``anyOf``, a ``$ref`` beside other keywords is inlined, a default moves into
    the description, and keywords strict mode does not support (``minLength``,
    ``default``, ``uniqueItems``, unknown formats ...) are left out. What strict mode
    cannot express at all (an open object such as ``dict[str, int]``, a value of any
    type, a fixed-length tuple) is a ``ToolDefinitionError`` naming where it is.
    """
    if not isinstance(schema, Mapping):
        raise ToolDefinitionError(f"strict_schema: {schema!r:.80} is not a JSON Schema object")
    root = copy.deepcopy(dict(schema))
    if root.get("type") != "object":
        raise ToolDefinitionError(
            "strict form: the arguments' schema must be an object (type: object) at the top, "
            f"not {short(root.get('type'))}"
        )
    out: dict[str, Any] = _strict(root, root, (), 0)
    defs = root.get("$defs")
    if isinstance(defs, Mapping):
        out["$defs"] = {
            name: _strict(dict(sub), root, ("$defs", name), 0) for name, sub in defs.items()
        }
    return out


def _strict(node: Any, root: Mapping[str, Any], path: tuple[str, ...], nesting: int) -> Any:
    where = ".".join(path) or "the top level"
    if not isinstance(node, Mapping):
        raise ToolDefinitionError(f"strict form: at {where}, {short(node)} is not a schema")
    node = dict(node)
    if "$ref" in node and len(node) > 1:
        target = resolve_ref(root, node["$ref"])
        if target is None:
            raise ToolDefinitionError(f"strict form: at {where}, {node['$ref']!r} names nothing")
        merged = {**target, **{k: v for k, v in node.items() if k != "$ref"}}
        return _strict(merged, root, path, nesting)
    if "oneOf" in node:
        node["anyOf"] = node.pop("oneOf")
    all_of = node.pop("allOf", None)
    if isinstance(all_of, list):
        if len(all_of) != 1:
            raise ToolDefinitionError(
                f"strict form: at {where}, allOf of {len(all_of)} schemas is not supported "
                "by strict mode; describe the value as one schema"
            )
        return _strict({**all_of[0], **node}, root, path, nesting)
    if "prefixItems" in node:
        raise ToolDefinitionError(
            f"strict form: at {where}, a fixed-length tuple (prefixItems) cannot be expressed "
            "in strict mode; use a list of one type or a model with named fields"
        )
    default = node.pop("default", None)
    out = {k: v for k, v in node.items() if k in _STRICT_KEYWORDS and k != "$defs"}
    if default is not None:
        text = out.get("description", "")
        note = f"Default: {short(default)}."
        out["description"] = f"{text.rstrip()} {note}".strip() if text else note
    if out.get("format") not in STRICT_FORMATS:
        out.pop("format", None)
    if isinstance(out.get("anyOf"), list):
        out["anyOf"] = [
            _strict(o, root, (*path, f"anyOf[{i}]"), nesting) for i, o in enumerate(out["anyOf"])
        ]
    kind = out.get("type")
    kinds = kind if isinstance(kind, list) else [kind]
    if "object" in kinds:
        if nesting >= MAX_STRICT_NESTING:
            raise ToolDefinitionError(
                f"strict form: at {where}, objects nest deeper than {MAX_STRICT_NESTING} "
                "levels, the most strict mode accepts; flatten the arguments"
            )
        properties = out.get("properties")
        extra, mapping = node.get("additionalProperties"), isinstance(properties, Mapping)
        # named fields plus extras (additionalProperties: true): strict keeps the named ones
        if (not properties and extra not in (None, False)) if mapping else extra is not False:
            raise ToolDefinitionError(
                f"strict form: at {where}, an object with no named fields (such as "
                "dict[str, ...]) cannot be expressed in strict mode; use a model, a "
                "dataclass or a TypedDict with named fields, or leave strict off"
            )
        properties = properties if isinstance(properties, Mapping) else {}
        required = set(node.get("required") or ())
        new: dict[str, Any] = {}
        for name, sub in properties.items():
            converted = _strict(sub, root, (*path, name), nesting + 1)
            if name not in required and not allows_null(converted, root):
                converted = _nullable(converted)
            new[name] = converted
        out["properties"] = new
        out["required"] = list(new)
        out["additionalProperties"] = False
    if "array" in kinds:
        items = node.get("items")
        if not isinstance(items, Mapping):
            raise ToolDefinitionError(
                f"strict form: at {where}, an array needs items (the schema of its elements) "
                "in strict mode; give list[<type>]"
            )
        out["items"] = _strict(items, root, (*path, "[]"), nesting)
    if not any(k in out for k in ("type", "anyOf", "$ref", "enum", "const")):
        raise ToolDefinitionError(
            f"strict form: at {where}, the schema accepts any JSON value, which strict mode "
            "cannot express; give it a type (str, int, a model ...) or leave strict off"
        )
    return out


def _nullable(schema: dict[str, Any]) -> dict[str, Any]:
    kind = schema.get("type")
    simple = not any(k in schema for k in ("anyOf", "$ref", "const"))
    if simple and isinstance(kind, (str, list)):
        out = {**schema, "type": [*([kind] if isinstance(kind, str) else kind), "null"]}
        if isinstance(out.get("enum"), list):
            out["enum"] = [*out["enum"], None]
        return out
    inner = {k: v for k, v in schema.items() if k != "description"}
    if isinstance(inner.get("anyOf"), list) and len(inner) == 1:
        out = {"anyOf": [*inner["anyOf"], {"type": "null"}]}
    else:
        out = {"anyOf": [inner, {"type": "null"}]}
    if "description" in schema:
        out["description"] = schema["description"]
    return out
