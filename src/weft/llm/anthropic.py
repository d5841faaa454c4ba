"""A chat model over the Anthropic Messages API (``POST {base_url}/v1/messages``).

The adapter hides how Messages differs from Chat Completions: system prompts go in a
top-level ``system`` field, tool calls and results are ``tool_use`` / ``tool_result``
blocks (results in a user turn), and ``max_tokens`` is required.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final

from weft.errors import ModelConfigError
from weft.llm._http import HTTPChatModel, JsonReply, Sleep, count
from weft.llm.messages import AssistantMessage, ChatMessage, ToolCall, Usage
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
            # other blocks (thinking, server tools) stay in .raw
        text = "".join(texts) if texts else None
        usage = _usage(reply.body.get("usage"))
        return self._message(reply, text, calls, usage, reply.body.get("stop_reason"))


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
        elif message.tool_calls:
            blocks: list[dict[str, Any]] = []
            if message.content:
                blocks.append({"type": "text", "text": message.content})
            blocks.extend(_tool_use(call) for call in message.tool_calls)
            turns.append({"role": "assistant", "content": blocks})
        else:
            turns.append({"role": "assistant", "content": message.content or ""})
    return ("\n\n".join(system) if system else None), turns


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
