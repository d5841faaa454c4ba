"""``Call``: one tool call of a plan, in the seed's JSON form.

>>> call = Call.from_json({"_tool": "upper", "text": "†state.topic", "_outputPath": "†state.title"})
>>> call.tool, dict(call.arguments), call.output_path
('upper', {'text': '†state.topic'}, '†state.title')
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from weft.errors import PlanValidationError

META_KEYS: Final = ("_tool", "_outputPath", "_instance", "_imports", "_id")


def loads(data: Any, whose: str) -> Any:
    """``data`` as it was, or the JSON value of its text (a clear error if it does not parse)."""
    if not isinstance(data, str):
        return data
    try:
        return json.loads(data)
    except (ValueError, RecursionError) as exc:  # RecursionError: nested past the parser
        why = "it nests too deeply" if isinstance(exc, RecursionError) else exc
        raise PlanValidationError(f"{whose} JSON does not parse: {why}") from None


@dataclass(frozen=True, slots=True, kw_only=True)
class Call:
    """One tool call of a plan, in the seed's JSON form (``Call.from_json``): the meta keys
    ``_tool``, ``_outputPath``, ``_instance``, ``_imports`` and ``_id`` (default
    ``<index>.<tool>``); every other key is an argument."""

    tool: str
    arguments: Mapping[str, Any] = field(default_factory=dict)
    output_path: str | None = None
    instance: str | tuple[str, ...] | None = None
    imports: tuple[str, ...] | None = None
    id: str | None = None

    @classmethod
    def from_json(cls, data: Mapping[str, Any] | str) -> Call:
        """A call from its JSON object (or its text)."""
        data = loads(data, "a call's")
        if not isinstance(data, Mapping):
            raise PlanValidationError(
                f"a call is a JSON object with a '_tool', not a {type(data).__name__}"
            )
        tool = data.get("_tool")
        if not isinstance(tool, str) or not tool:
            raise PlanValidationError(
                f"a call needs '_tool': the name of the tool to call (got {tool!r} in "
                f"{json.dumps(data, default=str)[:120]})"
            )
        instance = data.get("_instance")
        imports = data.get("_imports")
        return cls(
            tool=tool,
            arguments={k: v for k, v in data.items() if k not in META_KEYS},
            output_path=data.get("_outputPath"),
            instance=tuple(instance) if isinstance(instance, list) else instance,
            imports=tuple(imports) if isinstance(imports, list) else imports,
            id=data.get("_id"),
        )

    def to_json(self) -> dict[str, Any]:
        """The seed's JSON form."""
        out: dict[str, Any] = {"_tool": self.tool, **self.arguments}
        if self.output_path is not None:
            out["_outputPath"] = self.output_path
        if self.instance is not None:
            out["_instance"] = (
                list(self.instance) if isinstance(self.instance, tuple) else self.instance
            )
        if self.imports is not None:
            out["_imports"] = list(self.imports)
        if self.id is not None:
            out["_id"] = self.id
        return out
