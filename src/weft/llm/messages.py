"""What flows in and out of a model: completions, chat messages, tool calls, thinking, token
usage, as plain frozen dataclasses that the adapters translate to each provider's wire format.

A conversation may also be given in the providers' own dict forms (OpenAI chat messages,
Anthropic messages with content blocks): :func:`as_chat_messages` is the one place that reads
them, and refuses a malformed one with a ``ModelInputError`` naming the message and field.
"""

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
    return b if a is None else a if b is None else a + b


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
class Thinking:
    """A block of the model's own reasoning (Anthropic's extended thinking), kept to be sent
    back verbatim: with thinking on, Anthropic requires the thinking blocks of the assistant
    turn a tool result answers, unchanged, in the next request.

    ``signature`` proves the text unchanged. A redacted block carries only ``data`` (its
    encrypted text) and no readable ``text``. Reasoning text of OpenAI-compatible servers
    (``reasoning_content``) is read into a Thinking without a signature, and never sent back.
    """

    text: str = ""
    signature: str | None = None
    data: str | None = None

    @property
    def redacted(self) -> bool:
        """Whether this is a ``redacted_thinking`` block (only encrypted ``data``)."""
        return self.data is not None


@dataclass(frozen=True, slots=True, kw_only=True)
class ChatMessage:
    """One message of a conversation: only an assistant message carries ``tool_calls`` and
    ``thinking``, and a ``tool`` message names the call it answers in ``tool_call_id``
    (``is_error=True`` when the call failed)."""

    role: Role
    content: str | None = None
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str | None = None
    name: str | None = None
    is_error: bool = False
    thinking: tuple[Thinking, ...] = ()

    def __post_init__(self) -> None:
        if self.role not in ROLES:
            raise ModelInputError(
                f"unknown chat role {self.role!r}; a message's role is one of {', '.join(ROLES)}"
            )
        if not isinstance(self.tool_calls, tuple):
            object.__setattr__(self, "tool_calls", tuple(self.tool_calls))
        if not isinstance(self.thinking, tuple):
            object.__setattr__(self, "thinking", tuple(self.thinking))
        if self.thinking and self.role != "assistant":
            raise ModelInputError(f"only assistant messages carry thinking, not {self.role!r} ones")
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
        cls,
        content: str | None = None,
        *,
        tool_calls: Sequence[ToolCall] = (),
        thinking: Sequence[Thinking] = (),
    ) -> ChatMessage:
        return cls(
            role="assistant",
            content=content,
            tool_calls=tuple(tool_calls),
            thinking=tuple(thinking),
        )

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
    """A chat model's answer: text, tool calls, thinking, and what the provider said about it.

    ``stop_reason`` is the provider's own word (``stop``, ``tool_calls``, ``end_turn``,
    ``tool_use`` ...) with one exception made the same on every provider: a refusal is
    ``REFUSAL`` (``"refusal"``), and ``refusal`` holds the model's words (OpenAI sends them in
    ``message.refusal`` with an ordinary ``stop``; Anthropic stops with ``refusal``). To decide
    whether to run tools, look at ``tool_calls``, the same on every provider. ``thinking``
    keeps the model's reasoning blocks to be sent back with the reply. ``raw`` is the
    provider's decoded response body (for a stream, the body assembled from its events).
    """

    content: str | None = None
    tool_calls: tuple[ToolCall, ...] = ()
    usage: Usage | None = None
    stop_reason: str | None = None
    model: str | None = None
    raw: Mapping[str, Any] | None = None
    thinking: tuple[Thinking, ...] = ()
    refusal: str | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.tool_calls, tuple):
            object.__setattr__(self, "tool_calls", tuple(self.tool_calls))
        if not isinstance(self.thinking, tuple):
            object.__setattr__(self, "thinking", tuple(self.thinking))

    @property
    def text(self) -> str:
        """The content, or ``""`` when the model only called tools (or refused)."""
        return self.content or ""

    @property
    def refused(self) -> bool:
        """Whether the model declined to answer (``stop_reason == "refusal"``)."""
        return self.stop_reason == REFUSAL

    def to_message(self) -> ChatMessage:
        """This answer as the assistant turn to append to the conversation, thinking blocks
        included; a refusal's words stand as its content."""
        content = self.content if self.content or self.refusal is None else self.refusal
        return ChatMessage(
            role="assistant", content=content, tool_calls=self.tool_calls, thinking=self.thinking
        )


REFUSAL: Final = "refusal"
"""The ``stop_reason`` of a reply in which the model declined to answer, on every provider."""


MessageLike: TypeAlias = ChatMessage | AssistantMessage | Mapping[str, Any]
"""A message of a conversation: a ChatMessage, a model's AssistantMessage reply, or a dict in
OpenAI's or Anthropic's own message form."""


def as_chat_messages(messages: Sequence[MessageLike]) -> list[ChatMessage]:
    """The conversation as ChatMessages: an AssistantMessage reply may be appended as it is,
    and provider dicts are read here (an Anthropic user turn of tool results becomes one
    tool message per result). A malformed dict is a ``ModelInputError`` naming the message."""
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
        elif isinstance(message, Mapping):
            result.extend(_from_dict(message, f"messages[{index}]"))
        else:
            raise ModelInputError(
                f"messages[{index}] is a {type(message).__name__}; expected a ChatMessage "
                "(ChatMessage.user(text), ChatMessage.system(text), ...), an AssistantMessage, "
                "or a dict in OpenAI or Anthropic message form"
            )
    return result


_DICT_ROLES: Final = ("system", "developer", "user", "assistant", "tool")
_TEXT_PARTS: Final = frozenset({"text", "input_text", "output_text"})


def _from_dict(message: Mapping[str, Any], where: str) -> list[ChatMessage]:
    """One provider message dict as ChatMessages (OpenAI and Anthropic forms share roles and
    text parts; the block types say the rest)."""
    role = message.get("role")
    if role not in _DICT_ROLES:
        raise ModelInputError(
            f"{where} has role {role!r}; a message dict's role is one of "
            f"{', '.join(_DICT_ROLES)} (OpenAI or Anthropic form)"
        )
    name = _optional_str(message, "name", where)
    content = message.get("content")
    if role != "assistant" and content is None:
        raise ModelInputError(
            f"{where} is a {role} message without content; give its text as 'content'"
        )
    if role in ("system", "developer"):
        return [ChatMessage(role="system", content=_text(content, where))]
    if role == "tool":
        call_id = message.get("tool_call_id")
        if not isinstance(call_id, str) or not call_id:
            raise ModelInputError(
                f"{where} is a tool message without a tool_call_id; give the id of the call "
                "it answers"
            )
        return [ChatMessage.tool(_text(content, where) or "", tool_call_id=call_id, name=name)]
    if role == "user":
        return _user_turn(content, name, where)
    return [_assistant_turn(message, where)]


def _user_turn(content: object, name: str | None, where: str) -> list[ChatMessage]:
    if not isinstance(content, list):
        return [ChatMessage(role="user", content=_text(content, where), name=name)]
    result: list[ChatMessage] = []
    texts: list[str] = []
    for number, block in enumerate(content):
        here = f"{where}.content[{number}]"
        kind = _block_type(block, here)
        if kind == "tool_result":
            if texts:
                result.append(ChatMessage(role="user", content="".join(texts), name=name))
                texts = []
            result.append(_tool_result(block, here))
        elif kind in _TEXT_PARTS:
            texts.append(_str_field(block, "text", here))
        else:
            raise _unsupported(kind, here)
    if texts or not result:
        result.append(ChatMessage(role="user", content="".join(texts), name=name))
    return result


def _tool_result(block: Mapping[str, Any], where: str) -> ChatMessage:
    call_id = block.get("tool_use_id")
    if not isinstance(call_id, str) or not call_id:
        raise ModelInputError(f"{where} is a tool_result without a tool_use_id")
    is_error = block.get("is_error", False)
    if not isinstance(is_error, bool):
        raise ModelInputError(f"{where}.is_error must be true or false, not {is_error!r}")
    text = _text(block.get("content"), where) or ""
    return ChatMessage.tool(text, tool_call_id=call_id, is_error=is_error)


def _assistant_turn(message: Mapping[str, Any], where: str) -> ChatMessage:
    content = message.get("content")
    texts: list[str] = []
    calls: list[ToolCall] = []
    thinking: list[Thinking] = []
    if isinstance(content, list):
        for number, block in enumerate(content):
            here = f"{where}.content[{number}]"
            kind = _block_type(block, here)
            if kind in _TEXT_PARTS:
                texts.append(_str_field(block, "text", here))
            elif kind == "refusal":
                texts.append(_str_field(block, "refusal", here))
            elif kind == "tool_use":
                name = _str_field(block, "name", here)
                calls.append(ToolCall.parse(id=block.get("id"), name=name, raw=block.get("input")))
            elif kind == "thinking":
                signature = _optional_str(block, "signature", here)
                thinking.append(
                    Thinking(text=_str_field(block, "thinking", here), signature=signature)
                )
            elif kind == "redacted_thinking":
                thinking.append(Thinking(data=_str_field(block, "data", here)))
            else:
                raise _unsupported(kind, here)
        text: str | None = "".join(texts) if texts else None
    else:
        text = _text(content, where)
    refusal = _optional_str(message, "refusal", where)
    if not text and refusal:
        text = refusal
    raw_calls = message.get("tool_calls")
    if raw_calls is not None:
        if not isinstance(raw_calls, list):
            raise ModelInputError(f"{where}.tool_calls must be a list of tool calls")
        calls.extend(
            _openai_call(call, f"{where}.tool_calls[{n}]") for n, call in enumerate(raw_calls)
        )
    return ChatMessage(
        role="assistant", content=text, tool_calls=tuple(calls), thinking=tuple(thinking)
    )


def _openai_call(call: object, where: str) -> ToolCall:
    function = call.get("function") if isinstance(call, Mapping) else None
    if not isinstance(call, Mapping) or not isinstance(function, Mapping):
        raise ModelInputError(
            f"{where} is not a tool call; expected "
            "{'id': ..., 'type': 'function', 'function': {'name': ..., 'arguments': '{...}'}}"
        )
    name = _str_field(function, "name", f"{where}.function")
    return ToolCall.parse(id=call.get("id"), name=name, raw=function.get("arguments", ""))


def _text(content: object, where: str) -> str | None:
    """Text content: a string, ``None``, or a list of text parts joined."""
    if content is None or isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = []
        for number, part in enumerate(content):
            here = f"{where}.content[{number}]"
            kind = _block_type(part, here)
            if kind not in _TEXT_PARTS:
                raise _unsupported(kind, here)
            texts.append(_str_field(part, "text", here))
        return "".join(texts)
    raise ModelInputError(
        f"{where} has content of type {type(content).__name__}; expected a string or a list "
        "of content blocks"
    )


def _block_type(block: object, where: str) -> str:
    kind = block.get("type") if isinstance(block, Mapping) else None
    if not isinstance(kind, str):
        raise ModelInputError(f"{where} is not a content block (a dict with a string 'type')")
    return kind


def _str_field(block: Mapping[str, Any], key: str, where: str) -> str:
    value = block.get(key)
    if not isinstance(value, str):
        raise ModelInputError(f"{where} needs a string {key!r}, not {value!r:.60}")
    return value


def _optional_str(block: Mapping[str, Any], key: str, where: str) -> str | None:
    value = block.get(key)
    if value is not None and not isinstance(value, str):
        raise ModelInputError(f"{where}.{key} must be a string, not {value!r:.60}")
    return value


def _unsupported(kind: str, where: str) -> ModelInputError:
    return ModelInputError(
        f"{where} is a {kind!r} block, which weft's messages cannot carry; they hold text, "
        "tool calls (tool_use), tool results (tool_result) and thinking blocks"
    )


# A model's reply is stored as it is when a run records its model calls (a step of a
# recorded executor run replays them on resume instead of asking the model again).
for _cls in (Usage, ToolCall, Thinking, AssistantMessage):
    register_type(_cls, f"weft.{_cls.__name__}")
