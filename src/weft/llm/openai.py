"""A chat model over the OpenAI Chat Completions API, and every server that speaks it
(vLLM, Ollama's ``/v1``, the llama.cpp server, LM Studio, LiteLLM): point ``base_url`` at it.

A refusal (``message.refusal``) becomes the stop reason ``"refusal"`` with its text; the
reasoning text some compatible servers send (``reasoning_content`` or ``reasoning``) is read
as a :class:`~weft.llm.messages.Thinking` and streamed as thinking deltas.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Final

from weft.llm._http import (
    HTTPChatModel,
    JsonReply,
    StreamErrorEvent,
    StreamShapeError,
    count,
)
from weft.llm.messages import (
    REFUSAL,
    AssistantMessage,
    ChatMessage,
    Thinking,
    ToolCall,
    Usage,
    new_tool_call_id,
)
from weft.llm.sse import ServerSentEvent
from weft.llm.streaming import StreamEvent, TextDelta, ThinkingDelta, ToolCallDelta, ToolCallStarted
from weft.llm.tools import ToolSpec

_REASONING_KEYS: Final = ("reasoning_content", "reasoning")


class OpenAIChatModel(HTTPChatModel):
    """An OpenAI-compatible Chat Completions client.

    ``base_url`` falls back to ``OPENAI_BASE_URL``, then ``https://api.openai.com/v1``;
    ``api_key`` to ``OPENAI_API_KEY``, required only by OpenAI's own host.
    ``default_options`` go into every request, and a call's options override them.
    """

    provider = "openai"
    api = "OpenAI Chat Completions"
    default_base_url = "https://api.openai.com/v1"
    env = "OPENAI"
    endpoint = "/chat/completions"
    no_key_help = " (for a local OpenAI-compatible server, pass its base_url= and no key is needed)"

    def _auth_headers(self, key: str | None) -> dict[str, str]:
        return {"authorization": f"Bearer {key}"} if key else {}

    def _body(self, messages: list[ChatMessage], tools: list[ToolSpec]) -> dict[str, Any]:
        body: dict[str, Any] = {"model": self.model, "messages": [_render(m) for m in messages]}
        if tools:
            body["tools"] = [spec.openai() for spec in tools]
        return body

    def _parse(self, reply: JsonReply) -> AssistantMessage:
        choices = reply.body.get("choices")
        if not isinstance(choices, list) or not choices:
            raise self._no_list(reply, "choices")
        choice = choices[0]
        message = choice.get("message") if isinstance(choice, Mapping) else None
        if not isinstance(message, Mapping):
            raise self._shape_error(reply, 'choices[0] has no "message" object')
        try:
            content = _content(message.get("content"))
        except ValueError:
            raise self._shape_error(reply, "choices[0].message.content is not text") from None
        raw_calls = message.get("tool_calls") or []
        if not isinstance(raw_calls, list):
            raise self._shape_error(reply, "choices[0].message.tool_calls is not a list")
        calls: list[ToolCall] = []
        for index, raw_call in enumerate(raw_calls):
            function = raw_call.get("function") if isinstance(raw_call, Mapping) else None
            name = function.get("name") if isinstance(function, Mapping) else None
            if not isinstance(function, Mapping) or not isinstance(name, str) or not name:
                raise self._shape_error(
                    reply, f"choices[0].message.tool_calls[{index}] has no function name"
                )
            calls.append(
                ToolCall.parse(id=raw_call.get("id"), name=name, raw=function.get("arguments", ""))
            )
        usage = _usage(reply.body.get("usage"))
        refusal = message.get("refusal")
        refusal = refusal if isinstance(refusal, str) and refusal else None
        stop = REFUSAL if refusal else choice.get("finish_reason")
        reasoning = next(
            (text for key in _REASONING_KEYS if isinstance(text := message.get(key), str) and text),
            None,
        )
        thinking = [Thinking(text=reasoning)] if reasoning else []
        return self._message(reply, content, calls, usage, stop, thinking=thinking, refusal=refusal)

    def _stream_fields(self) -> dict[str, Any]:
        return {"stream": True, "stream_options": {"include_usage": True}}

    def _assembler(self) -> _ChunkAssembler:
        return _ChunkAssembler()


class _ChunkAssembler:
    """Chat completion chunks in, stream events out; the chunks' sum as a completion body.

    Only the first choice is read (weft asks for one). Tool calls are told apart by their
    ``index`` (parallel calls interleave); a call's id and name come in its first delta.
    """

    def __init__(self) -> None:
        self._meta: dict[str, Any] = {}
        self._text: list[str] = []
        self._refusal: list[str] = []
        self._reasoning: list[str] = []
        self._calls: dict[int, dict[str, Any]] = {}
        self._usage: dict[str, Any] | None = None
        self._finish: str | None = None
        self._done = False

    @property
    def done(self) -> bool:
        return self._done

    @property
    def finished(self) -> bool:
        return self._finish is not None

    def feed(self, event: ServerSentEvent) -> list[StreamEvent]:
        if event.data.strip() == "[DONE]":
            self._done = True
            return []
        try:
            chunk = json.loads(event.data)
        except (ValueError, RecursionError):  # not JSON, or nested past Python's limit
            raise StreamShapeError(f"an event's data is not JSON: {event.data!r:.120}") from None
        if not isinstance(chunk, dict):
            raise StreamShapeError(f"an event's data is not a JSON object: {event.data!r:.120}")
        error = chunk.get("error")
        if error is not None:
            if isinstance(error, Mapping):
                kind = error.get("type") or error.get("code")
                raise StreamErrorEvent(str(error.get("message")), str(kind) if kind else None)
            raise StreamErrorEvent(str(error), None)
        for key in ("id", "model", "created", "system_fingerprint"):
            if key in chunk and key not in self._meta:
                self._meta[key] = chunk[key]
        if isinstance(chunk.get("usage"), Mapping):
            self._usage = dict(chunk["usage"])
        choices = chunk.get("choices") or []
        if not isinstance(choices, list):
            raise StreamShapeError('a chunk\'s "choices" is not a list')
        events: list[StreamEvent] = []
        for choice in choices:
            if not isinstance(choice, Mapping):
                raise StreamShapeError("a chunk's choice is not an object")
            if choice.get("index", 0) == 0:
                events.extend(self._choice(choice))
        return events

    def _choice(self, choice: Mapping[str, Any]) -> list[StreamEvent]:
        delta = choice.get("delta") or {}
        if not isinstance(delta, Mapping):
            raise StreamShapeError("a chunk's delta is not an object")
        events: list[StreamEvent] = []
        text = delta.get("content")
        if isinstance(text, str) and text:
            self._text.append(text)
            events.append(TextDelta(text))
        refusal = delta.get("refusal")
        if isinstance(refusal, str) and refusal:
            self._refusal.append(refusal)
        for key in _REASONING_KEYS:
            reasoning = delta.get(key)
            if isinstance(reasoning, str) and reasoning:
                self._reasoning.append(reasoning)
                events.append(ThinkingDelta(reasoning))
                break
        calls = delta.get("tool_calls")
        if calls is not None:
            if not isinstance(calls, list):
                raise StreamShapeError("a delta's tool_calls is not a list")
            for call in calls:
                events.extend(self._call(call))
        finish = choice.get("finish_reason")
        if isinstance(finish, str) and finish:
            self._finish = finish
        return events

    def _call(self, call: object) -> list[StreamEvent]:
        if not isinstance(call, Mapping):
            raise StreamShapeError("a delta's tool call is not an object")
        function = call.get("function") or {}
        if not isinstance(function, Mapping):
            raise StreamShapeError("a tool call delta's function is not an object")
        index = call.get("index")
        if not isinstance(index, int) or isinstance(index, bool):
            # servers that leave out the index send each call whole, or its id first
            index = len(self._calls) if call.get("id") or not self._calls else max(self._calls)
        name = function.get("name")
        events: list[StreamEvent] = []
        entry = self._calls.get(index)
        if entry is None:
            call_id = call.get("id")
            entry = {
                "number": len(self._calls),
                "id": call_id if isinstance(call_id, str) and call_id else new_tool_call_id(),
                "name": name if isinstance(name, str) else "",
                "arguments": [],
            }
            self._calls[index] = entry
            events.append(ToolCallStarted(entry["number"], entry["id"], entry["name"]))
        elif isinstance(name, str) and name and not entry["name"]:
            entry["name"] = name
        arguments = function.get("arguments")
        if isinstance(arguments, str) and arguments:
            entry["arguments"].append(arguments)
            events.append(ToolCallDelta(entry["number"], arguments))
        return events

    def body(self) -> dict[str, Any]:
        message: dict[str, Any] = {
            "role": "assistant",
            "content": "".join(self._text) if self._text else None,
        }
        if self._refusal:
            message["refusal"] = "".join(self._refusal)
        if self._reasoning:
            message["reasoning_content"] = "".join(self._reasoning)
        if self._calls:  # in call number order: a call is numbered as it is added
            message["tool_calls"] = [
                _function_call(entry["id"], entry["name"], "".join(entry["arguments"]))
                for entry in self._calls.values()
            ]
        body: dict[str, Any] = {
            **self._meta,
            "object": "chat.completion",
            "choices": [{"index": 0, "message": message, "finish_reason": self._finish}],
        }
        if self._usage is not None:
            body["usage"] = self._usage
        return body


def _render(message: ChatMessage) -> dict[str, Any]:
    """One message in Chat Completions form."""
    if message.role == "tool":
        content = message.content or ""
        return {"role": "tool", "tool_call_id": message.tool_call_id, "content": content}
    rendered: dict[str, Any] = {"role": message.role, "content": message.content}
    if message.tool_calls:
        rendered["tool_calls"] = [
            _function_call(call.id, call.name, call.raw_or_json()) for call in message.tool_calls
        ]
    elif message.content is None:
        rendered["content"] = ""
    if message.name:
        rendered["name"] = message.name
    return rendered


def _function_call(id: str, name: str, arguments: str) -> dict[str, Any]:
    return {"id": id, "type": "function", "function": {"name": name, "arguments": arguments}}


def _content(value: object) -> str | None:
    """The message text: a string, ``None``, or text parts joined (ValueError if neither)."""
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, list):  # some compatible servers answer in content parts
        parts = [part.get("text") for part in value if isinstance(part, Mapping)]
        return "".join(part for part in parts if isinstance(part, str))
    raise ValueError(f"unreadable content: {type(value).__name__}")


def _usage(value: object) -> Usage | None:
    if not isinstance(value, Mapping):
        return None
    prompt = count(value.get("prompt_tokens"))
    completion = count(value.get("completion_tokens"))
    total = count(value.get("total_tokens"))
    if total is None and prompt is not None and completion is not None:
        total = prompt + completion
    return Usage(input_tokens=prompt, output_tokens=completion, total_tokens=total)
