"""The JSON Schema of a tool: inferred from a function (``infer``: pydantic reads the type
hints, ``weft.calls.docstrings`` the docstring), checked against arguments
(``check_arguments``), and as each provider's definition (``openai_tool``,
``anthropic_tool``; OpenAI's strict form is ``weft.calls.strict``).

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

from weft.calls.docstrings import parse_docstring
from weft.errors import ToolArgumentsError, ToolDefinitionError
from weft.refs.schemas import validator_for
from weft.store import MAX_DEPTH

TOOL_NAME: Final = re.compile(r"[a-zA-Z0-9_-]{1,64}")
"""The tool names OpenAI and Anthropic both accept."""

_SCALARS: Final = frozenset({int, str, bool, float})

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

    __slots__ = ("aliases", "model", "plain", "required")

    def __init__(self, model: Any, aliases: dict[str, str]) -> None:
        self.model = model
        self.aliases = aliases  # field name -> argument name
        self.plain: dict[str, type] | None = None
        """Each argument's type when every one is a bare JSON scalar (int, str, bool,
        float): then a value of exactly that type binds to itself (``bind_plain``)."""
        self.required = frozenset(
            aliases[name] for name, info in model.model_fields.items() if info.is_required()
        )
        fields = model.model_fields
        if model.model_config.get("extra") != "allow" and all(
            info.annotation in _SCALARS and not info.metadata for info in fields.values()
        ):
            self.plain = {aliases[name]: info.annotation for name, info in fields.items()}

    def bind_plain(
        self, arguments: dict[str, Any], later: Collection[str] = ()
    ) -> dict[str, Any] | None:
        """``arguments`` as they are when pydantic would take each as it is (every value
        of exactly its argument's scalar type, ASCII text, the required ones given), else
        None: the model decides (a plan's call of ``inc(x: int)`` skips a JSON round trip).
        ``later`` names arguments whose values come later (a plan's references): known
        names, taken as given."""
        plain = self.plain
        if plain is None or not self.required <= arguments.keys():
            return None
        for name, value in arguments.items():
            cls = value.__class__
            if plain.get(name) is not cls or (cls is str and not value.isascii()):
                if name in later and name in plain:
                    continue
                return None
        return arguments

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
        with warnings.catch_warnings(action="ignore"):
            return create_model(f"{tool}_arguments", __config__=config, **fields)
    except (PydanticSchemaGenerationError, PydanticUserError, TypeError, NameError) as exc:
        for name, (annotation, _) in fields.items():
            try:
                with warnings.catch_warnings(action="ignore"):
                    create_model("probe", __config__=config, probe=(annotation, ...))
            except Exception as problem:
                reason, kind = str(problem).splitlines()[0][:200], get_args(annotation)[0]
                raise ToolDefinitionError(
                    f"tool {tool!r}: its argument {aliases[name]!r} has the type "
                    f"{getattr(kind, '__qualname__', None) or repr(kind)}, which has no JSON "
                    f"Schema ({reason}); use JSON types (str, int, float, bool, list, dict, a "
                    "pydantic model, a dataclass, a TypedDict, an Enum ...), or give "
                    "parameters= yourself",
                    tool=tool,
                ) from None
        raise ToolDefinitionError(
            f"tool {tool!r}: the arguments of {fn!r:.80} have no JSON Schema ({exc}); give "
            "parameters= yourself",
            tool=tool,
        ) from None


def _json_schema(model: Any, tool: str) -> dict[str, Any]:
    from pydantic.json_schema import GenerateJsonSchema

    class _NoFieldTitles(GenerateJsonSchema):
        def field_title_should_be_set(self, schema: Any) -> bool:
            return False

    try:
        with warnings.catch_warnings(action="ignore"):  # a default JSON cannot show is left out
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
    if binder is not None and binder.plain is not None and isinstance(arguments, dict):
        plain = binder.bind_plain(dict(arguments))  # flat scalars: nothing to convert
        if plain is not None:
            return plain
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
        target = resolve_ref(root, schema["$ref"])
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
        title = schema.get("title")
        fields = ", ".join(schema["properties"])
        return f"an object {f'{title} ' if title else ''}with the fields {fields}"
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


def resolve_ref(root: Mapping[str, Any], ref: Any) -> Mapping[str, Any] | None:
    """The schema a local ``$ref`` (``#/$defs/Name``) points to in ``root``, or None."""
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
        return allows_null(resolve_ref(root, schema["$ref"]), root, depth + 1)
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
        target = resolve_ref(root, schema["$ref"])
        return _drop_nulls(target, value, root, depth + 1) if target is not None else value
    for key in ("anyOf", "oneOf"):
        options = schema.get(key)
        if isinstance(options, list) and isinstance(value, (dict, list)):
            wanted = "object" if isinstance(value, dict) else "array"
            for option in options:
                if not isinstance(option, Mapping):
                    continue
                target = resolve_ref(root, option.get("$ref")) if "$ref" in option else option
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
