"""Scripted models: test doubles that answer from a list or a function and record what they
saw. They never touch the network and never create threads or loops."""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, TypeAlias, TypeVar

from weft.errors import ModelConfigError, ScriptExhaustedError
from weft.llm.messages import (
    AssistantMessage,
    ChatMessage,
    Completion,
    MessageLike,
    ToolCall,
    Usage,
    as_chat_messages,
)
from weft.llm.protocols import ChatModelBase, as_completion
from weft.llm.tools import ToolLike, ToolSpec, as_tool_specs

T = TypeVar("T")
SCRIPTED_MODEL: Final = "scripted"
_QUOTE_CHARS: Final = 120

ReasonerReply: TypeAlias = str | Completion
ReasonerScript: TypeAlias = Sequence[ReasonerReply] | Callable[[str], ReasonerReply]
ChatReply: TypeAlias = AssistantMessage | str | Mapping[str, Any]
ChatScript: TypeAlias = (
    Sequence[ChatReply] | Callable[[list[ChatMessage], list[ToolSpec]], AssistantMessage | str]
)


class ScriptedReasoner:
    """A reasoner that answers from a script and records every prompt it saw.

    ``replies`` is a list (one reply per call, in order: a string or a :class:`Completion`)
    or a function of the prompt. Running out raises ``ScriptExhaustedError``.

    >>> reasoner = ScriptedReasoner(["first", "second"])
    >>> reasoner("What now?")
    'first'
    >>> reasoner.prompts
    ['What now?']
    """

    def __init__(self, replies: ReasonerScript) -> None:
        self._function = replies if callable(replies) else None
        self._replies = [] if callable(replies) else _replies(replies, "ScriptedReasoner")
        self._lock = threading.Lock()
        self.prompts: list[str] = []
        """Every prompt received, in order, including one that found the script exhausted."""

    def __call__(self, prompt: str) -> ReasonerReply:
        """The next scripted reply (as scripted: ``str`` or Completion)."""
        with self._lock:
            index = len(self.prompts)
            self.prompts.append(prompt)
        if self._function is not None:
            return self._function(prompt)
        if index >= len(self._replies):
            raise _exhausted("ScriptedReasoner", len(self._replies), index, prompt)
        return self._replies[index]

    def reason(self, prompt: str) -> Completion:
        """The next reply as a Completion."""
        return as_completion(self(prompt), reasoner=self)

    async def areason(self, prompt: str) -> Completion:
        """The next reply as a Completion, from async code (no thread, no await inside)."""
        return self.reason(prompt)

    @property
    def remaining(self) -> int | None:
        """Replies not yet used; ``None`` for a function script, which never runs out."""
        if self._function is not None:
            return None
        return max(0, len(self._replies) - len(self.prompts))

    def __repr__(self) -> str:
        return f"<ScriptedReasoner calls={len(self.prompts)} remaining={self.remaining}>"


@dataclass(frozen=True, slots=True, kw_only=True)
class ScriptedCall:
    """What a ScriptedChatModel was asked once: the messages, tool names and options."""

    messages: tuple[ChatMessage, ...]
    tool_names: tuple[str, ...]
    options: Mapping[str, Any] = field(default_factory=dict)

    @property
    def prompt(self) -> str | None:
        """The text of the last user message (what a reasoner call sent), if any."""
        return next((m.content for m in reversed(self.messages) if m.role == "user"), None)


class ScriptedChatModel(ChatModelBase):
    """A chat model that answers from a script and records every call.

    ``replies`` is a list (one per call, in order) or a function
    ``(messages, tools) -> reply`` whose ``tools`` are :class:`ToolSpec` s. A
    reply is an :class:`AssistantMessage`, a string (a text answer), or a dict
    ``{"content": ..., "tool_calls": [{"name": ..., "arguments": {...}}], "usage": {...}}``;
    a reply that is none of these raises ``ModelConfigError`` when it is used.
    """

    def __init__(self, replies: ChatScript) -> None:
        self._function = replies if callable(replies) else None
        self._replies = [] if callable(replies) else _replies(replies, "ScriptedChatModel")
        self._lock = threading.Lock()
        self.calls: list[ScriptedCall] = []
        """Every call received, in order, including one that found the script exhausted."""

    @staticmethod
    def tool_call(
        name: str,
        arguments: Mapping[str, Any] | None = None,
        *,
        id: str | None = None,
        content: str | None = None,
        usage: Usage | None = None,
    ) -> AssistantMessage:
        """A reply that calls one tool (with a fresh call id unless ``id`` is given)."""
        call = ToolCall.create(name, arguments or {}, id=id)
        return AssistantMessage(
            content=content,
            tool_calls=(call,),
            usage=usage,
            stop_reason="tool_calls",
            model=SCRIPTED_MODEL,
        )

    def chat(
        self,
        messages: Sequence[MessageLike],
        *,
        tools: Sequence[ToolLike] | None = None,
        **options: Any,
    ) -> AssistantMessage:
        """The next reply (also what :meth:`achat` returns: no loop is involved)."""
        chat_messages = as_chat_messages(messages)
        specs = as_tool_specs(tools)
        call = ScriptedCall(
            messages=tuple(chat_messages),
            tool_names=tuple(spec.name for spec in specs),
            options=dict(options),
        )
        with self._lock:
            index = len(self.calls)
            self.calls.append(call)
        if self._function is not None:
            return _as_reply(self._function(chat_messages, specs), index)
        if index >= len(self._replies):
            prompt = call.prompt if call.prompt is not None else _last_content(chat_messages)
            raise _exhausted("ScriptedChatModel", len(self._replies), index, prompt)
        return _as_reply(self._replies[index], index)

    async def achat(
        self,
        messages: Sequence[MessageLike],
        *,
        tools: Sequence[ToolLike] | None = None,
        **options: Any,
    ) -> AssistantMessage:
        return self.chat(messages, tools=tools, **options)

    def reason(self, prompt: str) -> Completion:
        reply = self.chat([ChatMessage.user(prompt)])
        return Completion(reply.text, usage=reply.usage)

    @property
    def prompts(self) -> list[str | None]:
        """The last user message of every call: what it saw when used as a reasoner."""
        return [call.prompt for call in self.calls]

    @property
    def remaining(self) -> int | None:
        """Replies not yet used; ``None`` for a function script, which never runs out."""
        if self._function is not None:
            return None
        return max(0, len(self._replies) - len(self.calls))

    def __repr__(self) -> str:
        return f"<ScriptedChatModel calls={len(self.calls)} remaining={self.remaining}>"


def _replies(replies: Sequence[T], owner: str) -> list[T]:
    if isinstance(replies, str | Mapping) or not isinstance(replies, Sequence):
        raise ModelConfigError(
            f"{owner} takes a list of replies or a function; got a {type(replies).__name__} "
            "(wrap a single reply in a list: [reply])"
        )
    return list(replies)


def _as_reply(reply: object, index: int) -> AssistantMessage:
    if isinstance(reply, AssistantMessage):
        return reply
    if isinstance(reply, str):
        return AssistantMessage(content=reply, stop_reason="stop", model=SCRIPTED_MODEL)
    if isinstance(reply, Mapping):
        return _from_mapping(reply, index)
    raise ModelConfigError(
        f"scripted reply #{index + 1} is a {type(reply).__name__}; expected an "
        "AssistantMessage, a string, or a dict with content / tool_calls"
    )


_REPLY_KEYS: Final = frozenset({"content", "tool_calls", "usage", "stop_reason", "model"})


def _from_mapping(reply: Mapping[str, Any], index: int) -> AssistantMessage:
    unknown = sorted(set(reply) - _REPLY_KEYS)
    if unknown:
        raise ModelConfigError(
            f"scripted reply #{index + 1} has unknown keys {unknown}; "
            f"a dict reply may have {sorted(_REPLY_KEYS)}"
        )
    calls: list[ToolCall] = []
    for call in reply.get("tool_calls") or ():
        if isinstance(call, ToolCall):
            calls.append(call)
        elif isinstance(call, Mapping) and isinstance(call.get("name"), str):
            arguments = call.get("arguments") or {}
            if isinstance(arguments, Mapping):
                calls.append(ToolCall.create(call["name"], arguments, id=call.get("id")))
            else:  # script a malformed call: the raw text as a model would send it
                calls.append(ToolCall.parse(id=call.get("id"), name=call["name"], raw=arguments))
        else:
            raise ModelConfigError(
                f"scripted reply #{index + 1}: each tool call is a ToolCall or a dict "
                f"{{'name': ..., 'arguments': {{...}}}}, not {call!r}"
            )
    usage = reply.get("usage")
    if isinstance(usage, Mapping):
        try:
            usage = Usage(**usage)
        except TypeError:
            raise ModelConfigError(
                f"scripted reply #{index + 1}: usage {reply['usage']!r} is not a Usage; its keys "
                "are input_tokens, output_tokens and total_tokens"
            ) from None
    default_stop = "tool_calls" if calls else "stop"
    return AssistantMessage(
        content=reply.get("content"),
        tool_calls=tuple(calls),
        usage=usage,
        stop_reason=reply.get("stop_reason", default_stop),
        model=reply.get("model", SCRIPTED_MODEL),
    )


def _last_content(messages: Sequence[ChatMessage]) -> str:
    return messages[-1].content or "" if messages else ""


def _exhausted(owner: str, count: int, index: int, prompt: str | None) -> ScriptExhaustedError:
    text = prompt or ""
    quoted = text if len(text) <= _QUOTE_CHARS else text[:_QUOTE_CHARS] + "..."
    plural = "reply" if count == 1 else "replies"
    return ScriptExhaustedError(
        f"{owner} had {count} {plural} and all were used; call #{index + 1} got the prompt "
        f"{quoted!r}. Add a reply for it to the script, or pass a function of the prompt "
        "to answer any number of calls"
    )
