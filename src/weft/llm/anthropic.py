"""A chat model over the Anthropic Messages API (``POST {base_url}/v1/messages``).

The adapter hides how Messages differs from Chat Completions: system prompts go in a
top-level ``system`` field, tool calls and results are ``tool_use`` / ``tool_result`` blocks
(results in a user turn, ``is_error`` on a failed one), and ``max_tokens`` is required.

Extended thinking: ``thinking`` and ``redacted_thinking`` blocks are kept on the reply (with
their signature or encrypted data) and sent back verbatim, first in the assistant turn, when
the reply goes back into the conversation, as the API requires in a tool loop. An assistant
turn with nothing to say is left out rather than sent as empty content, which the API refuses.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final

from weft.errors import ModelConfigError
from weft.llm._http import (
    HTTPChatModel,
    JsonReply,
    Sleep,
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

if TYPE_CHECKING:
    import httpx

ANTHROPIC_VERSION: Final = "2023-06-01"


class AnthropicChatModel(HTTPChatModel):
    """An Anthropic Messages client.

    ``api_key`` falls back to ``ANTHROPIC_API_KEY``, ``base_url`` to ``ANTHROPIC_BASE_URL``
    and then ``https://api.anthropic.com`` (without ``/v1``). ``max_tokens`` goes with every
    request (a call's ``max_tokens=`` overrides it); system messages, wherever they are,
    are joined into the top-level ``system`` field.
    """

    provider = "anthropic"
    api = "Anthropic Messages"
    default_base_url = "https://api.anthropic.com"
    env = "ANTHROPIC"
    endpoint = "/v1/messages"
    _reserved_options = frozenset({"model", "messages", "tools", "stream", "system"})

    def __init__(
        self,
        model: str,
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        max_tokens: int = 1024,
        timeout: float = 60.0,
        max_retries: int = 3,
        transport: httpx.AsyncBaseTransport | None = None,
        default_options: Mapping[str, Any] | None = None,
        sleep: Sleep | None = None,
    ) -> None:
        if not isinstance(max_tokens, int) or isinstance(max_tokens, bool) or max_tokens < 1:
            raise ModelConfigError(
                f"anthropic: max_tokens must be a whole number >= 1, not {max_tokens!r}"
            )
        self.max_tokens = max_tokens
        super().__init__(
            model,
            base_url=base_url,
            api_key=api_key,
            timeout=timeout,
            max_retries=max_retries,
            transport=transport,
            default_options=default_options,
            sleep=sleep,
        )

    def _auth_headers(self, key: str | None) -> dict[str, str]:
        return {"anthropic-version": ANTHROPIC_VERSION, **({"x-api-key": key} if key else {})}

    def _body(self, messages: list[ChatMessage], tools: list[ToolSpec]) -> dict[str, Any]:
        system, turns = _render(messages)
        body: dict[str, Any] = {"model": self.model, "max_tokens": self.max_tokens}
        if system is not None:
            body["system"] = system
        body["messages"] = turns
        if tools:
            body["tools"] = [spec.anthropic() for spec in tools]
        return body

    def _parse(self, reply: JsonReply) -> AssistantMessage:
        content = reply.body.get("content")
        if not isinstance(content, list):
            raise self._no_list(reply, "content")
        texts: list[str] = []
        calls: list[ToolCall] = []
        thinking: list[Thinking] = []
        for index, block in enumerate(content):
            kind = block.get("type") if isinstance(block, Mapping) else None
            if not isinstance(block, Mapping) or not isinstance(kind, str):
                raise self._shape_error(reply, f"content[{index}] is not a typed block")
            if kind == "text" and isinstance(block.get("text"), str):
                texts.append(block["text"])
            elif kind == "tool_use":
                name = block.get("name")
                if not isinstance(name, str) or not name:
                    raise self._shape_error(reply, f"content[{index}] (tool_use) has no name")
                raw = block.get("input", {})
                calls.append(ToolCall.parse(id=block.get("id"), name=name, raw=raw))
            elif kind == "thinking":
                text, signature = block.get("thinking"), block.get("signature")
                if not isinstance(text, str) or not isinstance(signature, str | None):
                    raise self._shape_error(reply, f"content[{index}] (thinking) has no text")
                thinking.append(Thinking(text=text, signature=signature))
            elif kind == "redacted_thinking":
                data = block.get("data")
                if not isinstance(data, str):
                    raise self._shape_error(
                        reply, f"content[{index}] (redacted_thinking) has no data"
                    )
                thinking.append(Thinking(data=data))
            # other blocks (server tools, their results) stay in .raw
        text = "".join(texts) if texts else None
        usage = _usage(reply.body.get("usage"))
        stop = reply.body.get("stop_reason")
        refusal = (text or "") if stop == REFUSAL else None
        return self._message(reply, text, calls, usage, stop, thinking=thinking, refusal=refusal)

    def _assembler(self) -> _EventAssembler:
        return _EventAssembler()


def _render(messages: Sequence[ChatMessage]) -> tuple[str | None, list[dict[str, Any]]]:
    """The top-level system text and the turns, in Messages form: consecutive tool results
    (and user text right after them) share one user turn, results first, as the API asks."""
    system: list[str] = []
    turns: list[dict[str, Any]] = []
    for message in messages:
        if message.role == "system":
            system.append(message.content or "")
        elif message.role == "tool":
            result: dict[str, Any] = {
                "type": "tool_result",
                "tool_use_id": message.tool_call_id,
                "content": message.content or "",
            }
            if message.is_error:
                result["is_error"] = True
            _add_user_block(turns, result)
        elif message.role == "user":
            if turns and turns[-1]["role"] == "user":
                _add_user_block(turns, {"type": "text", "text": message.content or ""})
            else:
                turns.append({"role": "user", "content": message.content or ""})
        else:
            blocks = [
                _thinking(block) for block in message.thinking if block.signature or block.redacted
            ]
            if message.content:
                blocks.append({"type": "text", "text": message.content})
            blocks.extend(_tool_use(call) for call in message.tool_calls)
            if blocks == [{"type": "text", "text": message.content}]:
                turns.append({"role": "assistant", "content": message.content})
            elif blocks:
                turns.append({"role": "assistant", "content": blocks})
            # else: an empty reply says nothing, and the API refuses empty content: left out
    return ("\n\n".join(system) if system else None), turns


def _thinking(block: Thinking) -> dict[str, Any]:
    """A thinking block as the API sent it: unsigned reasoning (of another provider) is
    never sent, since the API would refuse it."""
    if block.data is not None:
        return {"type": "redacted_thinking", "data": block.data}
    return {"type": "thinking", "thinking": block.text, "signature": block.signature}


def _tool_use(call: ToolCall) -> dict[str, Any]:
    return {"type": "tool_use", "id": call.id, "name": call.name, "input": dict(call.arguments)}


def _add_user_block(turns: list[dict[str, Any]], block: dict[str, Any]) -> None:
    if turns and turns[-1]["role"] == "user":
        last = turns[-1]
        if isinstance(last["content"], str):
            last["content"] = [{"type": "text", "text": last["content"]}]
        last["content"].append(block)
    else:
        turns.append({"role": "user", "content": [block]})


def _usage(value: object) -> Usage | None:
    """Tokens read (including prompt-cache reads and writes) and written."""
    if not isinstance(value, Mapping):
        return None
    counts = {name: count(value.get(name)) for name in _INPUT_FIELDS}
    output = count(value.get("output_tokens"))
    known = [count for count in counts.values() if count is not None]
    read = sum(known) if counts["input_tokens"] is not None else None
    total = read + output if read is not None and output is not None else None
    return Usage(input_tokens=read, output_tokens=output, total_tokens=total)


_INPUT_FIELDS: Final = ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")


class _EventAssembler:
    """Messages stream events in, weft's stream events out; the events' sum as a message body.

    Content blocks are kept by their ``index``; ``input_json_delta`` text is joined and
    parsed when its block stops (kept as text if it is not a JSON object, for the tool call's
    ``parse_error``); ``message_delta`` usage is cumulative, so it replaces what came before.
    """

    def __init__(self) -> None:
        self._message: dict[str, Any] = {"type": "message", "role": "assistant"}
        self._blocks: dict[int, dict[str, Any]] = {}
        self._json: dict[int, list[str]] = {}
        self._parts: dict[tuple[int, str], list[str]] = {}  # joined once, in body()
        self._calls: dict[int, int] = {}
        self._done = False

    @property
    def done(self) -> bool:
        return self._done

    @property
    def finished(self) -> bool:
        return isinstance(self._message.get("stop_reason"), str)

    def feed(self, event: ServerSentEvent) -> list[StreamEvent]:
        try:
            data = json.loads(event.data)
        except (ValueError, RecursionError):  # not JSON, or nested past Python's limit
            raise StreamShapeError(f"the data of a {event.event!r} event is not JSON") from None
        if not isinstance(data, dict):
            raise StreamShapeError(f"the data of a {event.event!r} event is not a JSON object")
        kind = data.get("type") or event.event
        if kind == "error":
            error = data.get("error")
            error = error if isinstance(error, Mapping) else {}
            message, error_type = error.get("message"), error.get("type")
            raise StreamErrorEvent(
                str(message or data), str(error_type) if isinstance(error_type, str) else None
            )
        if kind == "message_start":
            message = data.get("message")
            if not isinstance(message, Mapping):
                raise StreamShapeError("message_start carries no message object")
            self._message.update({k: v for k, v in message.items() if k != "content"})
            return []
        if kind == "content_block_start":
            return self._start(_index(data), data.get("content_block"))
        if kind == "content_block_delta":
            return self._delta(_index(data), data.get("delta"))
        if kind == "content_block_stop":
            self._close(_index(data))
        elif kind == "message_delta":
            delta, usage = data.get("delta"), data.get("usage")
            if isinstance(delta, Mapping):
                self._message.update(delta)
            if isinstance(usage, Mapping):
                known = self._message.get("usage")
                self._message["usage"] = {**(known if isinstance(known, Mapping) else {}), **usage}
        elif kind == "message_stop":
            self._done = True
        return []  # ping, and event types added after this was written

    def _start(self, index: int, block: object) -> list[StreamEvent]:
        if not isinstance(block, Mapping) or not isinstance(block.get("type"), str):
            raise StreamShapeError(f"content_block_start {index} carries no typed block")
        kept = self._blocks[index] = dict(block)
        kind = kept["type"]
        if kind in ("tool_use", "server_tool_use"):
            self._json[index] = []
        if kind == "tool_use":
            number = self._calls[index] = len(self._calls)
            name, call_id = kept.get("name"), kept.get("id")
            if not isinstance(name, str) or not name:
                raise StreamShapeError(f"content_block_start {index} (tool_use) has no name")
            if not isinstance(call_id, str) or not call_id:  # the event and the reply share it
                call_id = kept["id"] = new_tool_call_id()
            return [ToolCallStarted(number, call_id, name)]
        if kind == "text" and isinstance(kept.get("text"), str) and kept["text"]:
            return [TextDelta(kept["text"])]
        if kind == "thinking" and isinstance(kept.get("thinking"), str) and kept["thinking"]:
            return [ThinkingDelta(kept["thinking"])]
        return []

    def _delta(self, index: int, delta: object) -> list[StreamEvent]:
        block = self._blocks.get(index)
        if block is None:
            raise StreamShapeError(f"a content_block_delta for block {index}, which never started")
        if not isinstance(delta, Mapping):
            raise StreamShapeError(f"content_block_delta {index} carries no delta object")
        kind = delta.get("type")
        if kind == "text_delta":
            text = self._add(index, "text", delta)
            return [TextDelta(text)] if text else []
        if kind == "thinking_delta":
            text = self._add(index, "thinking", delta)
            return [ThinkingDelta(text)] if text else []
        if kind == "signature_delta":
            self._add(index, "signature", delta)
        elif kind == "input_json_delta":
            text = _text(delta, "partial_json", index)
            self._json.setdefault(index, []).append(text)
            if index in self._calls and text:
                return [ToolCallDelta(self._calls[index], text)]
        elif kind == "citations_delta":
            block.setdefault("citations", []).append(delta.get("citation"))
        return []

    def _add(self, index: int, key: str, delta: Mapping[str, Any]) -> str:
        text = _text(delta, key, index)
        self._parts.setdefault((index, key), []).append(text)
        return text

    def _close(self, index: int) -> None:
        parts = self._json.pop(index, None)
        block = self._blocks.get(index)
        if parts is None or block is None:
            return
        text = "".join(parts)
        if not text.strip():
            # no deltas: keep the input the block started with (some servers send it whole)
            if not isinstance(block.get("input"), Mapping):
                block["input"] = {}
            return
        try:
            value = json.loads(text)
        except (ValueError, RecursionError):  # not JSON, or nested past Python's limit
            value = None
        block["input"] = value if isinstance(value, dict) else text

    def body(self) -> dict[str, Any]:
        for index in list(self._json):
            self._close(index)
        for (index, key), parts in self._parts.items():
            block = self._blocks[index]
            start = block.get(key)
            block[key] = (start if isinstance(start, str) else "") + "".join(parts)
        self._parts.clear()
        content = [self._blocks[index] for index in sorted(self._blocks)]
        return {**self._message, "content": content}


def _index(data: Mapping[str, Any]) -> int:
    index = data.get("index")
    if not isinstance(index, int) or isinstance(index, bool) or index < 0:
        raise StreamShapeError(f"a {data.get('type')} event has no block index")
    return index


def _text(delta: Mapping[str, Any], key: str, index: int) -> str:
    value = delta.get(key)
    if not isinstance(value, str):
        raise StreamShapeError(f"a {delta.get('type')} for block {index} has no {key!r} text")
    return value
