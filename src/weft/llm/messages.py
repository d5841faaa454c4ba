"""What flows in and out of a model: completions, chat messages, tool calls, token usage,
as plain frozen dataclasses that the adapters translate to each provider's wire format."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import KW_ONLY, dataclass, field
from typing import Any, Final, Literal, TypeAlias

from weft.errors import CodecError, ModelInputError, ValueTypeError
from weft.store import freeze, register_type
from weft.store.codec import parse

Role: TypeAlias = Literal["system", "user", "assistant", "tool"]
ROLES: Final = ("system", "user", "assistant", "tool")


@dataclass(frozen=True, slots=True, kw_only=True)
class Usage:
    """Tokens a call consumed, as the provider reported them; ``None`` where it did not say.

    ``input_tokens`` counts everything the model read (for Anthropic including prompt-cache
    reads and writes). Usages add up (``a + b``); a count stays unknown only if it is
    unknown on both sides.
    """

    input_tokens: int | None = None
    output_tokens: int | None = None
    total_tokens: int | None = None

    def __add__(self, other: Usage) -> Usage:
        if not isinstance(other, Usage):
            return NotImplemented
        return Usage(
            input_tokens=_add(self.input_tokens, other.input_tokens),
            output_tokens=_add(self.output_tokens, other.output_tokens),
            total_tokens=_add(self.total_tokens, other.total_tokens),
        )


def _add(a: int | None, b: int | None) -> int | None:
    if a is None:
        return b
    return a if b is None else a + b


@dataclass(frozen=True, slots=True)
class Completion:
    """A reasoner's answer: the text, and the tokens it cost when the provider says."""

    text: str
    _: KW_ONLY
    usage: Usage | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolCall:
    """One call of a tool the model asked for: ``arguments`` parsed, ``raw_arguments`` as
    sent. Arguments that are not a JSON object never raise: ``arguments`` is then ``{}``
    and ``parse_error`` says what was wrong, for the tool's error result to tell the model.
    """

    id: str
    name: str
    arguments: Mapping[str, Any] = field(default_factory=dict)
    raw_arguments: str = ""
    parse_error: str | None = None

    @classmethod
    def create(cls, name: str, arguments: Mapping[str, Any], *, id: str | None = None) -> ToolCall:
        """A well-formed call (raw text = the JSON of ``arguments``), with a fresh id if none."""
        try:
            raw = json.dumps(arguments, ensure_ascii=False, allow_nan=False)
        except (TypeError, ValueError, RecursionError) as exc:
            raise ModelInputError(
                f"the arguments of the tool call {name!r} are not a JSON object ({exc}); "
                "give a dict of plain JSON values"
            ) from None
        return cls(
            id=id or new_tool_call_id(), name=name, arguments=dict(arguments), raw_arguments=raw
        )

    @classmethod
    def parse(cls, *, id: object, name: str, raw: object) -> ToolCall:
        """A call from a provider's arguments (JSON text or a decoded object); never raises
        (see the class). An ``id`` that is not a non-empty string gets a fresh one."""
        id = id if isinstance(id, str) and id else new_tool_call_id()
        where = f"the arguments of {name!r}"
        if isinstance(raw, str):
            text = raw
        else:
            try:
                text = json.dumps(raw, ensure_ascii=False)
            except (TypeError, ValueError, RecursionError) as exc:
                error = f"{where} are not JSON ({exc}); expected a JSON object"
                return cls(id=id, name=name, parse_error=error)
        if not text.strip():  # some servers send "" for a call without arguments
            return cls(id=id, name=name, arguments={}, raw_arguments=text)
        try:
            value = raw if isinstance(raw, Mapping) else parse(text, where)
            if isinstance(value, Mapping):  # what the store refuses: NaN, nesting past MAX_DEPTH
                freeze(value, where=where)
        except (CodecError, ValueTypeError) as exc:
            error = f"{exc}; expected a JSON object"
            return cls(id=id, name=name, raw_arguments=text, parse_error=error)
        if not isinstance(value, Mapping):
            kind = json_kind(value)
            error = f"{where} are a JSON {kind}; expected a JSON object"
            return cls(id=id, name=name, raw_arguments=text, parse_error=error)
        return cls(id=id, name=name, arguments=dict(value), raw_arguments=text)

    def raw_or_json(self) -> str:
        """The text to send back to a provider: the model's own text, else the JSON."""
        return self.raw_arguments or json.dumps(dict(self.arguments), ensure_ascii=False)


_JSON_KINDS: Final = {
    list: "array",
    str: "string",
    int: "number",
    float: "number",
    bool: "boolean",
    type(None): "null",
}


def json_kind(value: object) -> str:
    """The JSON name of a decoded value's type (``array``, ``null`` ...), for error messages."""
    return _JSON_KINDS.get(type(value), "object" if isinstance(value, dict) else "value")


def new_tool_call_id() -> str:
    """A fresh id for a tool call the model did not name (scripts, some local servers)."""
    return f"call_{uuid.uuid4().hex[:24]}"


@dataclass(frozen=True, slots=True, kw_only=True)
class ChatMessage:
    """One message of a conversation: only an assistant message carries ``tool_calls``, and
    a ``tool`` message names the call it answers in ``tool_call_id``."""

    role: Role
    content: str | None = None
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str | None = None
    name: str | None = None
    is_error: bool = False

    def __post_init__(self) -> None:
        if self.role not in ROLES:
            raise ModelInputError(
                f"unknown chat role {self.role!r}; a message's role is one of {', '.join(ROLES)}"
            )
        if not isinstance(self.tool_calls, tuple):
            object.__setattr__(self, "tool_calls", tuple(self.tool_calls))
        if self.role == "tool" and not self.tool_call_id:
            raise ModelInputError(
                "a tool message must say which call it answers: pass tool_call_id= "
                "(the id of the ToolCall from the assistant message)"
            )
        if self.is_error and self.role != "tool":
            raise ModelInputError(f"only tool messages can be errors, not {self.role!r} ones")
        if self.tool_calls and self.role != "assistant":
            raise ModelInputError(
                f"only assistant messages carry tool_calls, not {self.role!r} ones"
            )

    @classmethod
    def system(cls, content: str) -> ChatMessage:
        return cls(role="system", content=content)

    @classmethod
    def user(cls, content: str, *, name: str | None = None) -> ChatMessage:
        return cls(role="user", content=content, name=name)

    @classmethod
    def assistant(
        cls, content: str | None = None, *, tool_calls: Sequence[ToolCall] = ()
    ) -> ChatMessage:
        return cls(role="assistant", content=content, tool_calls=tuple(tool_calls))

    @classmethod
    def tool(
        cls,
        result: object,
        *,
        tool_call_id: str,
        name: str | None = None,
        is_error: bool = False,
    ) -> ChatMessage:
        """The result of a tool call; a non-string result is sent as its JSON text.
        ``is_error=True`` says the call failed (Anthropic's ``is_error``)."""
        content = result if isinstance(result, str) else json.dumps(result, ensure_ascii=False)
        return cls(
            role="tool", content=content, tool_call_id=tool_call_id, name=name, is_error=is_error
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class AssistantMessage:
    """A chat model's answer: text, tool calls, and what the provider said about it.

    ``stop_reason`` is the provider's own word (``tool_calls``, ``tool_use`` ...): to decide
    whether to run tools, look at ``tool_calls``, the same on every provider. ``raw`` is the
    provider's decoded response body, for anything weft does not map.
    """

    content: str | None = None
    tool_calls: tuple[ToolCall, ...] = ()
    usage: Usage | None = None
    stop_reason: str | None = None
    model: str | None = None
    raw: Mapping[str, Any] | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.tool_calls, tuple):
            object.__setattr__(self, "tool_calls", tuple(self.tool_calls))

    @property
    def text(self) -> str:
        """The content, or ``""`` when the model only called tools."""
        return self.content or ""

    def to_message(self) -> ChatMessage:
        """This answer as the assistant turn to append to the conversation."""
        return ChatMessage(role="assistant", content=self.content, tool_calls=self.tool_calls)


MessageLike: TypeAlias = ChatMessage | AssistantMessage


def as_chat_messages(messages: Sequence[MessageLike]) -> list[ChatMessage]:
    """The conversation as ChatMessages; an AssistantMessage reply may be appended as it is."""
    if isinstance(messages, str | ChatMessage | AssistantMessage | Mapping) or not isinstance(
        messages, Iterable
    ):
        raise ModelInputError(
            "messages must be a list of ChatMessage, not a single "
            f"{type(messages).__name__}; wrap it: [ChatMessage.user(...)]"
        )
    result: list[ChatMessage] = []
    for index, message in enumerate(messages):
        if isinstance(message, ChatMessage):
            result.append(message)
        elif isinstance(message, AssistantMessage):
            result.append(message.to_message())
        else:
            raise ModelInputError(
                f"messages[{index}] is a {type(message).__name__}; expected a ChatMessage "
                "(ChatMessage.user(text), ChatMessage.system(text), ...) or an AssistantMessage"
            )
    return result


# A model's reply is stored as it is when a run records its model calls (a step of a
# recorded executor run replays them on resume instead of asking the model again).
for _cls in (Usage, ToolCall, AssistantMessage):
    register_type(_cls, f"weft.{_cls.__name__}")
