"""Tool definitions a chat model is offered: anything with a name, a description and a
schema (a ``weft.calls.Tool``, weft's ``MemoryTool``, a ``ToolSpec``), or a dict in either
provider's format. A definition with ``strict=True`` is offered in OpenAI's strict form."""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeAlias, runtime_checkable

from weft.errors import ModelInputError

EMPTY_OBJECT_SCHEMA: dict[str, Any] = {"type": "object", "properties": {}}


@runtime_checkable
class ToolDefinition(Protocol):
    """What a chat model needs to know of a tool: when to call it and with what arguments."""

    @property
    def name(self) -> str: ...

    @property
    def description(self) -> str: ...

    @property
    def parameters(self) -> Mapping[str, Any]:
        """The JSON Schema of the arguments (an object schema)."""
        ...


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolSpec:
    """A tool definition as a model is offered it: name, description and the JSON Schema
    of its arguments; ``strict=True`` marks ``parameters`` as OpenAI's strict form (they
    are sent as given: ``weft.calls.strict_schema`` makes that form)."""

    name: str
    description: str = ""
    parameters: Mapping[str, Any] = field(default_factory=lambda: dict(EMPTY_OBJECT_SCHEMA))
    strict: bool = False

    def openai(self) -> dict[str, Any]:
        """The OpenAI Chat Completions ``tools`` entry (with ``strict: true`` if strict)."""
        from weft.calls.schema import openai_tool  # weft.calls loads when tools are used

        return openai_tool(self.name, self.description, self.parameters, strict=self.strict)

    def anthropic(self) -> dict[str, Any]:
        """The Anthropic Messages ``tools`` entry."""
        from weft.calls.schema import anthropic_tool

        return anthropic_tool(self.name, self.description, self.parameters)


ToolLike: TypeAlias = ToolDefinition | Mapping[str, Any]


def as_tool_spec(tool: ToolLike) -> ToolSpec:
    """One tool definition as a ToolSpec: an object with ``name``/``description``/
    ``parameters``, an OpenAI or Anthropic dict, or a dict with those three keys."""
    if isinstance(tool, ToolSpec):
        return tool
    if isinstance(tool, Mapping):
        return _from_mapping(tool)
    if isinstance(tool, ToolDefinition):
        strict = getattr(tool, "strict", False) is True
        parameters = tool.parameters
        if strict:
            from weft.calls.strict import strict_schema

            offered = getattr(tool, "strict_parameters", None)
            parameters = offered if isinstance(offered, Mapping) else strict_schema(parameters)
        return _spec(tool.name, tool.description, parameters, where=repr(tool), strict=strict)
    raise ModelInputError(
        f"{tool!r} is not a tool definition; expected an object with name, description and "
        "parameters (e.g. a MemoryTool or weft.llm.ToolSpec) or a dict in OpenAI or Anthropic form"
    )


def as_tool_specs(tools: Sequence[ToolLike] | None) -> list[ToolSpec]:
    """Every tool as a ToolSpec; two tools of one name are refused before any request."""
    if tools is None:
        return []
    if isinstance(tools, Mapping | ToolDefinition):
        raise ModelInputError(
            "tools must be a list of tool definitions; wrap the single tool: [tool]"
        )
    specs = [as_tool_spec(tool) for tool in tools]
    seen: set[str] = set()
    for spec in specs:
        if spec.name in seen:
            raise ModelInputError(
                f"two tools are named {spec.name!r}; a model calls tools by name, "
                "so each name must be offered once"
            )
        seen.add(spec.name)
    return specs


def _from_mapping(tool: Mapping[str, Any]) -> ToolSpec:
    where = f"the tool dict {tool!r:.80}"
    if tool.get("type") == "function" and isinstance(tool.get("function"), Mapping):
        function = tool["function"]
        parameters = function.get("parameters", EMPTY_OBJECT_SCHEMA)
        strict = function.get("strict") is True
        name, description = function.get("name"), function.get("description", "")
        return _spec(name, description, parameters, where, strict=strict)
    if "input_schema" in tool:
        return _spec(tool.get("name"), tool.get("description", ""), tool["input_schema"], where)
    if "name" in tool:
        parameters = tool.get("parameters", EMPTY_OBJECT_SCHEMA)
        return _spec(tool.get("name"), tool.get("description", ""), parameters, where)
    raise ModelInputError(
        f"{where} is in no known form; expected {{'type': 'function', 'function': {{...}}}} "
        "(OpenAI), {'name', 'description', 'input_schema'} (Anthropic) or "
        "{'name', 'description', 'parameters'}"
    )


def _spec(
    name: object, description: object, parameters: object, where: str, *, strict: bool = False
) -> ToolSpec:
    if not isinstance(name, str) or not name:
        raise ModelInputError(f"{where} has no name; a tool needs a non-empty string name")
    from weft.calls.schema import check_tool_name

    check_tool_name(name)
    if not isinstance(description, str):
        raise ModelInputError(f"tool {name!r}: the description must be a string")
    if not isinstance(parameters, Mapping):
        raise ModelInputError(
            f"tool {name!r}: parameters must be a JSON Schema object (a dict), "
            f"not a {type(parameters).__name__}"
        )
    return ToolSpec(
        name=name,
        description=description,
        parameters=copy.deepcopy(dict(parameters)),
        strict=strict,
    )
