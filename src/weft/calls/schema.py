"""The JSON Schema of a tool: inferred from a function, checked against arguments, and
rewritten in OpenAI's strict form.

- ``infer(fn)`` reads a function's signature and docstring: pydantic builds the schema
  of the arguments from the type hints (``Annotated[..., "text"]`` and ``Field`` give
  descriptions, defaults are shown and not required), the docstring's prose is the
  description and its ``Args:`` (Google), ``:param x:`` (Sphinx) or ``Parameters``
  (NumPy) lines describe the arguments. What it returns also converts checked
  arguments to the types the function declares (a dict becomes a pydantic model).
- ``check_arguments`` is the one check of a tool's arguments: a ``ToolArgumentsError``
  names the tool, each argument at fault and what it expected.
- ``strict_schema`` rewrites a schema in the form OpenAI's strict mode accepts.

pydantic and jsonschema are imported on first use, so ``import weft`` stays fast.
"""

from __future__ import annotations

import copy
import inspect
import itertools
import json
import re
import reprlib
import sys
import warnings
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from typing import Annotated, Any, Final, get_args, get_origin

from weft.errors import ToolArgumentsError, ToolDefinitionError
from weft.refs.schemas import validator_for
from weft.store import MAX_DEPTH

TOOL_NAME: Final = re.compile(r"[a-zA-Z0-9_-]{1,64}")
"""The tool names OpenAI and Anthropic both accept."""

MAX_PROBLEMS: Final = 5
"""How many problems an arguments error lists (a hostile call may have thousands)."""


def check_tool_name(name: object) -> str:
    """``name`` if the providers accept it as a tool name, else a ``ToolDefinitionError``."""
    if isinstance(name, str) and TOOL_NAME.fullmatch(name):
        return name
    raise ToolDefinitionError(
        f"the tool name {name!r:.80} is refused by model providers: a name is 1 to 64 "
        "characters, each a letter, digit, '_' or '-' (no spaces or dots); rename the tool, "
        "e.g. with @tool(name='get_weather') or Tool(name='get_weather', ...)",
        tool=name if isinstance(name, str) else "",
    )


# ------------------------------------------------------------------ docstrings


_GOOGLE_ARGS: Final = re.compile(r"^(Args|Arguments|Parameters|Params|Keyword Args)\s*:\s*$")
_GOOGLE_OTHER: Final = re.compile(
    r"^(Returns?|Yields?|Raises?|Examples?|Notes?|See Also|Attributes|Warnings?|Todo)\s*:\s*$"
)
_NUMPY_RULE: Final = re.compile(r"^-{3,}\s*$")
_SPHINX: Final = re.compile(r"^:(param|parameter|arg|argument|key|keyword)\s+(.+?)\s*:(.*)$")
_SPHINX_OTHER: Final = re.compile(r"^:(returns?|rtype|raises?|type|yields?|ytype)\b")
_ARG_LINE: Final = re.compile(r"^\*{0,2}([A-Za-z_]\w*)\s*(\([^)]*\))?\s*:(.*)$")
_NUMPY_ARG: Final = re.compile(r"^\*{0,2}([A-Za-z_]\w*)\s*(:.*)?$")


def parse_docstring(doc: str | None) -> tuple[str, dict[str, str]]:
    """The prose of a docstring (everything before its first section) and each argument's
    description, from Google (``Args:``), Sphinx (``:param x:``) or NumPy (``Parameters``
    over a rule of dashes) style."""
    text = inspect.cleandoc(doc) if doc else ""
    lines = text.splitlines()
    prose: list[str] = []
    described: dict[str, str] = {}
    index = 0
    while index < len(lines):
        line = lines[index]
        stripped = line.strip()
        nxt = lines[index + 1].strip() if index + 1 < len(lines) else ""
        if _GOOGLE_ARGS.match(stripped):
            index = _google_args(lines, index + 1, described)
            continue
        if stripped in ("Parameters", "Other Parameters") and _NUMPY_RULE.match(nxt):
            index = _numpy_args(lines, index + 2, described)
            continue
        sphinx = _SPHINX.match(stripped)
        if sphinx:
            index = _sphinx_arg(lines, index, sphinx, described)
            continue
        if _GOOGLE_OTHER.match(stripped) or _SPHINX_OTHER.match(stripped):
            index = _skip_section(lines, index + 1)
            continue
        if stripped and _NUMPY_RULE.match(nxt):  # another NumPy section: skip it
            index = _skip_numpy(lines, index + 2)
            continue
        if not described:
            prose.append(line)
        index += 1
    return "\n".join(prose).strip(), described


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def _google_args(lines: list[str], index: int, out: dict[str, str]) -> int:
    base: int | None = None
    name: str | None = None
    while index < len(lines):
        line = lines[index]
        if not line.strip():
            index += 1
            continue
        depth = _indent(line)
        if depth == 0:
            break
        if base is None:
            base = depth
        match = _ARG_LINE.match(line.strip()) if depth <= base else None
        if match:
            name = match.group(1)
            out[name] = match.group(3).strip()
        elif name is not None:
            out[name] = f"{out[name]} {line.strip()}".strip()
        index += 1
    return index


def _numpy_args(lines: list[str], index: int, out: dict[str, str]) -> int:
    name: str | None = None
    while index < len(lines):
        line = lines[index]
        nxt = lines[index + 1].strip() if index + 1 < len(lines) else ""
        if line.strip() and _indent(line) == 0 and _NUMPY_RULE.match(nxt):
            break
        if not line.strip():
            index += 1
            continue
        match = _NUMPY_ARG.match(line.strip()) if _indent(line) == 0 else None
        if match:
            name = match.group(1)
            out[name] = ""
        elif name is not None:
            out[name] = f"{out[name]} {line.strip()}".strip()
        index += 1
    return index


def _sphinx_arg(lines: list[str], index: int, match: re.Match[str], out: dict[str, str]) -> int:
    name = match.group(2).split()[-1].lstrip("*")
    parts = [match.group(3).strip()]
    index += 1
    while index < len(lines) and lines[index].strip() and _indent(lines[index]) > 0:
        parts.append(lines[index].strip())
        index += 1
    out[name] = " ".join(p for p in parts if p)
    return index


def _skip_section(lines: list[str], index: int) -> int:
    while index < len(lines) and (not lines[index].strip() or _indent(lines[index]) > 0):
        if lines[index].strip() and _SPHINX.match(lines[index].strip()):
            break
        index += 1
    return index


def _skip_numpy(lines: list[str], index: int) -> int:
    while index < len(lines):
        nxt = lines[index + 1].strip() if index + 1 < len(lines) else ""
        if lines[index].strip() and _NUMPY_RULE.match(nxt):
            break
        index += 1
    return index


# ------------------------------------------------------------------ inference


@dataclass(frozen=True, slots=True)
class Inferred:
    """What a function says about itself as a tool."""

    description: str
    parameters: dict[str, Any]
    binder: Binder | None
    """Converts checked arguments to the function's types (None: passed as they are)."""


class Binder:
    """The pydantic model of a function's arguments: turns checked JSON arguments into
    the values the function takes (a model instance for a model, an Enum member ...)."""

    __slots__ = ("aliases", "model")

    def __init__(self, model: Any, aliases: dict[str, str]) -> None:
        self.model = model
        self.aliases = aliases  # field name -> argument name

    def bind(self, tool: str, arguments: Mapping[str, Any]) -> dict[str, Any]:
        """The keyword arguments of the function from arguments the schema accepted; a
        ``ToolArgumentsError`` when a value does not convert (a model's validator
        refused it, say)."""
        from pydantic import ValidationError

        try:
            instance = self.model.model_validate(arguments)
        except ValidationError as exc:
            raise self.error(tool, exc) from None
        return self._kwargs(instance)

    def try_json(self, text: str) -> dict[str, Any] | Exception:
        """The keyword arguments from the JSON text of the arguments, validated as the
        schema reads JSON (no "3" for an integer), or the pydantic error."""
        from pydantic import ValidationError

        try:
            instance = self.model.model_validate_json(text, strict=True)
        except ValidationError as exc:
            return exc
        return self._kwargs(instance)

    def error(self, tool: str, exc: Any) -> ToolArgumentsError:
        """A pydantic ``ValidationError`` in the words of ``check_arguments``."""
        problems: list[str] = []
        names: list[str] = []
        for error in exc.errors(include_url=False)[:MAX_PROBLEMS]:
            where = format_path(tuple(error.get("loc", ())))
            names.append(where.split(".")[0].split("[")[0] or "(arguments)")
            problems.append(
                f"argument {where!r} is invalid ({short(error.get('input'))}): "
                f"{error.get('msg', 'refused')}"
            )
        return arguments_error(tool, names, problems)

    def _kwargs(self, instance: Any) -> dict[str, Any]:
        out = {
            self.aliases[name]: getattr(instance, name)
            for name in instance.model_fields_set
            if name in self.aliases
        }
        extra = instance.model_extra
        if extra:
            out.update(extra)
        return out


_CACHE: Final[dict[tuple[int, frozenset[str], bool], tuple[Any, Inferred]]] = {}


def infer(
    fn: Callable[..., Any], *, tool: str, skip: Collection[str] = (), method: bool = False
) -> Inferred:
    """The description, JSON Schema and binder of ``fn`` as the tool ``tool``; ``skip``
    names parameters the caller fills in (``store`` of an isolated tool), ``method=True``
    leaves out the first parameter (``self`` or ``cls``)."""
    key = (id(fn), frozenset(skip), method)
    hit = _CACHE.get(key)
    if hit is not None and hit[0] is fn:
        return hit[1]
    prose, described = parse_docstring(inspect.getdoc(fn))
    try:
        signature = _signature(fn, tool)
    except ValueError:  # some builtins: Python cannot read their parameters
        return Inferred(prose, {"type": "object"}, None)
    fields: dict[str, tuple[Any, Any]] = {}
    aliases: dict[str, str] = {}
    extra = False
    params = list(signature.parameters.values())
    if method and params:
        params = params[1:]
    for param in params:
        if param.name in skip or param.kind is inspect.Parameter.VAR_POSITIONAL:
            continue
        if param.kind is inspect.Parameter.VAR_KEYWORD:
            extra = True
            continue
        if param.kind is inspect.Parameter.POSITIONAL_ONLY:
            if param.default is not inspect.Parameter.empty:
                continue
            raise ToolDefinitionError(
                f"tool {tool!r}: its parameter {param.name!r} is positional-only, but a tool "
                "is called with keyword arguments; remove the '/' from the signature",
                tool=tool,
            )
        field_name = f"arg_{len(fields)}"
        aliases[field_name] = param.name
        fields[field_name] = _field(param, described.get(param.name))
    model = _model(fn, tool, fields, aliases, extra)
    parameters = _json_schema(model, tool)
    inferred = Inferred(prose, parameters, Binder(model, aliases))
    if len(_CACHE) > 4096:
        _CACHE.clear()
    _CACHE[key] = (fn, inferred)  # the function is kept, so its id is not reused
    return inferred


def _signature(fn: Callable[..., Any], tool: str) -> inspect.Signature:
    try:
        return inspect.signature(fn, eval_str=True)
    except NameError:
        pass  # a hint naming a class local to the function that defined the tool
    try:
        return inspect.signature(fn, eval_str=True, locals=_caller_locals())
    except NameError as exc:
        raise ToolDefinitionError(
            f"tool {tool!r}: a type hint of its function cannot be resolved ({exc}); define "
            "the type where the function's module can see it, or give parameters= yourself",
            tool=tool,
        ) from None


def _caller_locals() -> dict[str, Any]:
    """The local names of the innermost frame outside weft: where the tool is defined."""
    frame = sys._getframe(1)
    while frame is not None and str(frame.f_globals.get("__name__", "")).startswith("weft."):
        frame = frame.f_back  # type: ignore[assignment]
    return dict(frame.f_locals) if frame is not None else {}


def _field(param: inspect.Parameter, doc: str | None) -> tuple[Any, Any]:
    from pydantic import Field
    from pydantic.fields import FieldInfo

    annotation = Any if param.annotation is inspect.Parameter.empty else param.annotation
    description = doc or None
    if get_origin(annotation) is Annotated:
        base, *meta = get_args(annotation)
        texts = [m for m in meta if isinstance(m, str)]
        others = [m for m in meta if not isinstance(m, str)]
        if texts:
            description = texts[0]
            annotation = Annotated[(base, *others)] if others else base
        for item in others:  # a Field(description=...) in Annotated wins over the docstring
            if isinstance(item, FieldInfo) and item.description:
                description = None
    extra: dict[str, Any] = {"alias": param.name}
    if description:
        extra["description"] = description
    default = param.default
    if default is inspect.Parameter.empty:
        default = ...
    return Annotated[annotation, Field(**extra)], default


def _model(
    fn: Callable[..., Any],
    tool: str,
    fields: dict[str, Any],
    aliases: dict[str, str],
    extra: bool,
) -> Any:
    from pydantic import ConfigDict, PydanticSchemaGenerationError, PydanticUserError, create_model

    config = ConfigDict(extra="allow" if extra else "forbid", defer_build=False)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return create_model(f"{tool}_arguments", __config__=config, **fields)
    except (PydanticSchemaGenerationError, PydanticUserError, TypeError, NameError) as exc:
        for name, (annotation, _) in fields.items():
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    create_model("probe", __config__=config, probe=(annotation, ...))
            except Exception as problem:
                reason = str(problem).splitlines()[0][:200]
                raise ToolDefinitionError(
                    f"tool {tool!r}: its argument {aliases[name]!r} has the type "
                    f"{_type_name(get_args(annotation)[0])}, which has no JSON Schema "
                    f"({reason}); use JSON types (str, int, float, bool, list, dict, a "
                    "pydantic model, a dataclass, a TypedDict, an Enum ...), or give "
                    "parameters= yourself",
                    tool=tool,
                ) from None
        raise ToolDefinitionError(
            f"tool {tool!r}: the arguments of {fn!r:.80} have no JSON Schema ({exc}); give "
            "parameters= yourself",
            tool=tool,
        ) from None


def _type_name(annotation: Any) -> str:
    return getattr(annotation, "__qualname__", None) or repr(annotation)


def _json_schema(model: Any, tool: str) -> dict[str, Any]:
    from pydantic.json_schema import GenerateJsonSchema

    class _NoFieldTitles(GenerateJsonSchema):
        def field_title_should_be_set(self, schema: Any) -> bool:
            return False

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # a default JSON cannot show is left out
            schema: dict[str, Any] = model.model_json_schema(
                by_alias=True, schema_generator=_NoFieldTitles, mode="validation"
            )
    except Exception as exc:
        raise ToolDefinitionError(
            f"tool {tool!r}: its arguments have no JSON Schema ({type(exc).__name__}: {exc}); "
            "give parameters= yourself",
            tool=tool,
        ) from None
    schema.pop("title", None)
    schema.setdefault("properties", {})
    return schema


# ------------------------------------------------------------------ checking


def check_arguments(
    tool: str,
    schema: Mapping[str, Any],
    arguments: object,
    *,
    strict: bool = False,
    hints: Mapping[str, str] | None = None,
    binder: Binder | None = None,
    schema_checked: bool = False,
) -> dict[str, Any]:
    """``arguments`` as a new dict of keyword arguments if ``schema`` accepts them, else
    a ``ToolArgumentsError`` naming ``tool``, the arguments at fault and what each
    expected.

    ``strict=True``: the model was offered the strict form of ``schema``, where an
    optional argument is sent as ``null`` when it has no value; such a ``null`` is taken
    as "not given" wherever ``schema`` itself does not accept null. ``hints`` are fix
    hints by argument name, said in place of what the schema expected. ``binder`` (of
    an inferred schema) converts the values to the function's types, validating them as
    it goes; ``schema_checked=True`` skips the JSON Schema check (done already).
    """
    if not isinstance(arguments, Mapping) or not all(isinstance(k, str) for k in arguments):
        raise arguments_error(
            tool,
            ["(arguments)"],
            [
                f"the arguments must be a JSON object of named arguments, got "
                f"{short(arguments)}; wrap them in {{...}}"
            ],
        )
    args = dict(arguments)
    if _too_deep(args, MAX_DEPTH):
        raise arguments_error(
            tool,
            ["(arguments)"],
            [f"the arguments nest deeper than {MAX_DEPTH} levels; send a flatter JSON object"],
        )
    if strict:
        args = _drop_nulls(schema, args, schema)
    if binder is not None:
        try:  # the binder's model is the schema: pydantic checks and converts in one pass
            text = json.dumps(args, ensure_ascii=False, allow_nan=False)
        except (TypeError, ValueError, RecursionError):
            text = None  # values JSON cannot hold: the schema says why below
        if text is not None:
            bound = binder.try_json(text)
            if isinstance(bound, dict):
                return bound
            _refuse(tool, schema, args, hints)  # in the schema's words when it can
            raise binder.error(tool, bound)
    if not schema_checked:
        _refuse(tool, schema, args, hints)
    return args if binder is None else binder.bind(tool, args)


def _refuse(
    tool: str, schema: Mapping[str, Any], args: dict[str, Any], hints: Mapping[str, str] | None
) -> None:
    """Raise the ``ToolArgumentsError`` of what ``schema`` refuses in ``args``, if anything."""
    validator = validator_for(schema)
    if validator.is_valid(args):
        return
    errors = sorted(
        itertools.islice(validator.iter_errors(args), 50),
        key=lambda e: (list(map(str, e.absolute_path)), e.validator != "required"),
    )
    names: list[str] = []
    problems: list[str] = []
    for error in errors:
        at_fault, message = _explain(error, schema, args, hints or {})
        if message not in problems:
            names.extend(at_fault)
            problems.append(message)
    raise arguments_error(tool, names, problems[:MAX_PROBLEMS])


def arguments_error(tool: str, names: list[str], problems: list[str]) -> ToolArgumentsError:
    """The error of a call whose arguments were refused (nothing ran)."""
    return ToolArgumentsError(
        f"{tool}: {'; '.join(problems)}",
        tool=tool,
        arguments=tuple(dict.fromkeys(names)),
        problems=tuple(problems),
    )


def _explain(
    error: Any, schema: Mapping[str, Any], args: dict[str, Any], hints: Mapping[str, str]
) -> tuple[list[str], str]:
    properties = schema.get("properties") if isinstance(schema.get("properties"), Mapping) else {}
    assert isinstance(properties, Mapping)
    allowed = ", ".join(properties) or "no arguments"
    path = tuple(error.absolute_path)
    if not path and error.validator == "additionalProperties":
        extra = [k for k in args if k not in properties]
        listed = ", ".join(repr(k) for k in extra[:10])
        return extra[:10], f"unknown argument {listed}; this tool takes only: {allowed}"
    if not path and error.validator == "required":
        absent = [f for f in schema.get("required", ()) if f not in args]
        parts = [
            f"missing required argument {f!r}: "
            f"{hints.get(f) or 'expected ' + describe_schema(properties.get(f), schema)}"
            for f in absent
        ]
        return absent, "; ".join(parts)
    if not path:
        return ["(arguments)"], f"the arguments must be a JSON object with the fields {allowed}"
    name = str(path[0])
    hint = hints.get(name)
    if hint is None:
        if error.validator in ("type", "enum", "const", "anyOf", "oneOf"):
            hint = f"expected {describe_schema(error.schema, schema)}"
        else:
            hint = str(error.message)
        text = properties.get(name, {}).get("description") if path[1:] == () else None
        if isinstance(text, str) and text:
            hint = f"{hint} ({text.rstrip('.')})"
    return [name], f"argument {format_path(path)!r} is invalid ({short(error.instance)}): {hint}"


_TYPE_WORDS: Final = {
    "string": "a string",
    "integer": "an integer",
    "number": "a number",
    "boolean": "true or false",
    "null": "null",
    "array": "an array",
    "object": "an object",
}


def describe_schema(schema: Any, root: Mapping[str, Any], depth: int = 0) -> str:
    """A few words on what ``schema`` accepts (``an integer``, ``one of 'a', 'b'``)."""
    if not isinstance(schema, Mapping) or depth > 3:
        return "a value of the documented type"
    if "$ref" in schema:
        target = _resolve(root, schema["$ref"])
        return describe_schema(target, root, depth + 1) if target is not None else "an object"
    if "const" in schema:
        return f"exactly {json.dumps(schema['const'])}"
    if isinstance(schema.get("enum"), list):
        return "one of " + ", ".join(json.dumps(v) for v in schema["enum"][:20])
    for key in ("anyOf", "oneOf"):
        options = schema.get(key)
        if isinstance(options, list) and options:
            return " or ".join(describe_schema(o, root, depth + 1) for o in options)
    kind = schema.get("type")
    if isinstance(kind, list):
        return " or ".join(_TYPE_WORDS.get(str(k), str(k)) for k in kind)
    if kind == "array" and isinstance(schema.get("items"), Mapping):
        return f"an array of ({describe_schema(schema['items'], root, depth + 1)})"
    if kind == "object" and isinstance(schema.get("properties"), Mapping):
        fields = ", ".join(schema["properties"])
        title = schema.get("title")
        return (
            f"an object {title} with the fields {fields}"
            if title
            else (f"an object with the fields {fields}")
        )
    if isinstance(kind, str):
        return _TYPE_WORDS.get(kind, kind)
    return "any JSON value"


def format_path(path: tuple[Any, ...]) -> str:
    """``items[0].name`` from ``("items", 0, "name")``."""
    out = ""
    for step in path:
        out += f"[{step}]" if isinstance(step, int) else (f".{step}" if out else str(step))
    return out


def short(value: Any) -> str:
    """At most 80 characters of ``value`` as JSON, for an error message."""
    try:
        shown = json.dumps(value, ensure_ascii=False, default=str)
    except (TypeError, ValueError, RecursionError):
        shown = reprlib.repr(value)
    return shown if len(shown) <= 80 else shown[:77] + "..."


def _too_deep(value: Any, limit: int) -> bool:
    """Whether ``value`` nests containers deeper than ``limit`` (without recursion)."""
    if isinstance(value, dict) and not any(
        isinstance(v, (Mapping, list, tuple)) for v in value.values()
    ):
        return False  # flat: the common case, at a glance
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if depth > limit:
            return True
        if isinstance(item, Mapping):
            stack.extend((v, depth + 1) for v in item.values())
        elif isinstance(item, (list, tuple)):
            stack.extend((v, depth + 1) for v in item)
    return False


def _resolve(root: Mapping[str, Any], ref: Any) -> Mapping[str, Any] | None:
    if not isinstance(ref, str) or not ref.startswith("#/"):
        return None
    node: Any = root
    for part in ref[2:].split("/"):
        if not isinstance(node, Mapping) or part not in node:
            return None
        node = node[part]
    return node if isinstance(node, Mapping) else None


def allows_null(schema: Any, root: Mapping[str, Any], depth: int = 0) -> bool:
    """Whether ``schema`` accepts ``null`` (as far as its type keywords say)."""
    if not isinstance(schema, Mapping) or depth > 20:
        return True
    if "$ref" in schema:
        return allows_null(_resolve(root, schema["$ref"]), root, depth + 1)
    if "const" in schema:
        return schema["const"] is None
    if isinstance(schema.get("enum"), list):
        return None in schema["enum"]
    for key in ("anyOf", "oneOf"):
        if isinstance(schema.get(key), list):
            return any(allows_null(o, root, depth + 1) for o in schema[key])
    kind = schema.get("type")
    if kind is None:
        return True
    return kind == "null" or (isinstance(kind, list) and "null" in kind)


def _kinds(schema: Mapping[str, Any]) -> list[Any]:
    kind = schema.get("type")
    return kind if isinstance(kind, list) else [kind]


def _drop_nulls(schema: Any, value: Any, root: Mapping[str, Any], depth: int = 0) -> Any:
    """``value`` without the ``null`` s the strict form sent for optional fields that
    ``schema`` itself does not accept null for (those fields take their defaults)."""
    if depth > MAX_DEPTH or not isinstance(schema, Mapping):
        return value
    if "$ref" in schema:
        target = _resolve(root, schema["$ref"])
        return _drop_nulls(target, value, root, depth + 1) if target is not None else value
    for key in ("anyOf", "oneOf"):
        options = schema.get(key)
        if isinstance(options, list) and isinstance(value, (dict, list)):
            wanted = "object" if isinstance(value, dict) else "array"
            for option in options:
                if not isinstance(option, Mapping):
                    continue
                target = _resolve(root, option.get("$ref")) if "$ref" in option else option
                if isinstance(target, Mapping) and wanted in _kinds(target):
                    return _drop_nulls(target, value, root, depth + 1)
            return value
    if isinstance(value, dict):
        properties = schema.get("properties")
        if not isinstance(properties, Mapping):
            return value
        required = schema.get("required") or ()
        out: dict[str, Any] = {}
        for key, item in value.items():
            sub = properties.get(key)
            if item is None and key not in required and not allows_null(sub, root):
                continue
            out[key] = _drop_nulls(sub, item, root, depth + 1)
        return out
    if isinstance(value, list) and isinstance(schema.get("items"), Mapping):
        return [_drop_nulls(schema["items"], item, root, depth + 1) for item in value]
    return value


# ------------------------------------------------------------------ strict form


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
        target = _resolve(root, node["$ref"])
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
    default = node.pop("default", _NO_DEFAULT)
    out = {k: v for k, v in node.items() if k in _STRICT_KEYWORDS and k != "$defs"}
    if default is not _NO_DEFAULT and default is not None:
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
        extra = node.get("additionalProperties")
        if not isinstance(properties, Mapping) or (extra not in (None, False)):
            if isinstance(properties, Mapping) and properties and extra is True:
                pass  # named fields plus extras: strict keeps the named ones only
            elif not (isinstance(properties, Mapping) and properties) and extra is not False:
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


class _NoDefault:
    pass


_NO_DEFAULT: Final = _NoDefault()


def _nullable(schema: dict[str, Any]) -> dict[str, Any]:
    kind = schema.get("type")
    simple = not any(k in schema for k in ("anyOf", "$ref", "const"))
    if simple and isinstance(kind, str):
        out = {**schema, "type": [kind, "null"]}
        if isinstance(out.get("enum"), list):
            out["enum"] = [*out["enum"], None]
        return out
    if simple and isinstance(kind, list):
        out = {**schema, "type": [*kind, "null"]}
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


# ------------------------------------------------------------------ provider forms


def openai_tool(
    name: str, description: str, parameters: Mapping[str, Any], *, strict: bool = False
) -> dict[str, Any]:
    """A tool definition in the OpenAI Chat Completions ``tools`` form (``parameters``
    as given: pass the strict form with ``strict=True``)."""
    function: dict[str, Any] = {
        "name": name,
        "description": description,
        "parameters": copy.deepcopy(dict(parameters)),
    }
    if strict:
        function["strict"] = True
    return {"type": "function", "function": function}


def anthropic_tool(name: str, description: str, parameters: Mapping[str, Any]) -> dict[str, Any]:
    """A tool definition in the Anthropic Messages ``tools`` form."""
    return {
        "name": name,
        "description": description,
        "input_schema": copy.deepcopy(dict(parameters)),
    }
