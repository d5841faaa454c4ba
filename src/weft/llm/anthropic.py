"""A chat model over the Anthropic Messages API (``POST {base_url}/v1/messages``).

The Messages API differs from Chat Completions in ways this adapter hides:
system prompts go in a top-level ``system`` field, the assistant's tool calls
are ``tool_use`` content blocks, tool results are ``tool_result`` blocks in a
user turn, and ``max_tokens`` is required.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final

from weft.errors import ModelConfigError
from weft.llm._http import HTTPChatModel, JsonReply, ProviderHTTP, Sleep
from weft.llm.messages import (
    AssistantMessage,
    ChatMessage,
    MessageLike,
    ToolCall,
    Usage,
    as_chat_messages,
    new_tool_call_id,
)
from weft.llm.tools import ToolLike, as_tool_specs

if TYPE_CHECKING:
    import httpx

DEFAULT_BASE_URL: Final = "https://api.anthropic.com"
ANTHROPIC_VERSION: Final = "2023-06-01"
PROVIDER: Final = "anthropic"
API: Final = "Anthropic Messages"


class AnthropicChatModel(HTTPChatModel):
    """An Anthropic Messages client.

    ``api_key`` falls back to ``ANTHROPIC_API_KEY``, ``base_url`` to
    ``ANTHROPIC_BASE_URL`` and then ``https://api.anthropic.com`` (the URL
    without ``/v1``). ``max_tokens`` is sent with every request, as the API
    requires; a call's ``max_tokens=`` option overrides it. System messages,
    wherever they are in the conversation, are joined into the top-level
    ``system`` field. Failures raise :class:`~weft.errors.ProviderError`;
    429, 5xx and 529 (overloaded) are retried first.

    Usage::

        model = AnthropicChatModel("claude-sonnet-4-5", max_tokens=2048)  # ANTHROPIC_API_KEY
        tools = memory_tools(memory)
        messages = [ChatMessage.system("You keep notes."), ChatMessage.user("Note: due Friday")]
        reply = await model.achat(messages, tools=tools)
        messages.append(reply)
        for call in reply.tool_calls:  # run each tool, hand its result back
            result = tools.call(call.name, call.raw_arguments)
            messages.append(ChatMessage.tool(result, tool_call_id=call.id))
        final = await model.achat(messages, tools=tools)
    """

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
        if not isinstance(model, str) or not model:
            raise ModelConfigError(f"anthropic: model must be a non-empty name, not {model!r}")
        if not isinstance(max_tokens, int) or isinstance(max_tokens, bool) or max_tokens < 1:
            raise ModelConfigError(
                f"anthropic: max_tokens must be a whole number >= 1, not {max_tokens!r}"
            )
        self.model = model
        self.max_tokens = max_tokens
        self.base_url = (
            base_url or os.environ.get("ANTHROPIC_BASE_URL") or DEFAULT_BASE_URL
        ).rstrip("/")
        key = api_key if api_key is not None else os.environ.get("ANTHROPIC_API_KEY")
        if not key and self.base_url == DEFAULT_BASE_URL:
            raise ModelConfigError(
                f"anthropic: no API key for {DEFAULT_BASE_URL}; pass api_key= or set "
                "ANTHROPIC_API_KEY"
            )
        headers = {"accept": "application/json", "anthropic-version": ANTHROPIC_VERSION}
        if key:
            headers["x-api-key"] = key
        self.default_options: dict[str, Any] = dict(default_options or {})
        self._http = ProviderHTTP(
            provider=PROVIDER,
            api=API,
            model=model,
            url=f"{self.base_url}/v1/messages",
            headers=headers,
            timeout=timeout,
            max_retries=max_retries,
            transport=transport,
            sleep=sleep,
            key_hint="api_key= or ANTHROPIC_API_KEY",
        )
        self._options(self.default_options, {})

    async def achat(
        self,
        messages: Sequence[MessageLike],
        *,
        tools: Sequence[ToolLike] | None = None,
        **options: Any,
    ) -> AssistantMessage:
        """One Messages request; the answer as an AssistantMessage."""
        body = self.request_body(messages, tools=tools, **options)
        reply = await self._http.post_json(body)
        return self._parse(reply)

    def request_body(
        self,
        messages: Sequence[MessageLike],
        *,
        tools: Sequence[ToolLike] | None = None,
        **options: Any,
    ) -> dict[str, Any]:
        """The JSON body :meth:`achat` would send: for logging, caching or a test's eye."""
        system, turns = _render(as_chat_messages(messages))
        body: dict[str, Any] = {"model": self.model, "max_tokens": self.max_tokens}
        if system is not None:
            body["system"] = system
        body["messages"] = turns
        specs = as_tool_specs(tools)
        if specs:
            body["tools"] = [spec.anthropic() for spec in specs]
        body.update(self._options(self.default_options, options))
        return body

    def _parse(self, reply: JsonReply) -> AssistantMessage:
        body = reply.body
        content = body.get("content")
        if not isinstance(content, list):
            error = body.get("error")
            if isinstance(error, Mapping) and isinstance(error.get("message"), str):
                raise self._http.shape_error(reply, f"an error came back: {error['message']}")
            found = ", ".join(sorted(body)) or "nothing"
            raise self._http.shape_error(reply, f'no "content" list (found: {found})')
        texts: list[str] = []
        calls: list[ToolCall] = []
        for index, block in enumerate(content):
            kind = block.get("type") if isinstance(block, Mapping) else None
            if not isinstance(block, Mapping) or not isinstance(kind, str):
                raise self._http.shape_error(reply, f"content[{index}] is not a typed block")
            if kind == "text" and isinstance(block.get("text"), str):
                texts.append(block["text"])
            elif kind == "tool_use":
                name, call_id = block.get("name"), block.get("id")
                if not isinstance(name, str) or not name:
                    raise self._http.shape_error(reply, f"content[{index}] (tool_use) has no name")
                calls.append(
                    ToolCall.parse(
                        id=call_id if isinstance(call_id, str) and call_id else new_tool_call_id(),
                        name=name,
                        raw=block.get("input", {}),
                    )
                )
            # other blocks (thinking, server tools) stay in .raw
        stop = body.get("stop_reason")
        model = body.get("model")
        return AssistantMessage(
            content="".join(texts) if texts else None,
            tool_calls=tuple(calls),
            usage=_usage(body.get("usage")),
            stop_reason=stop if isinstance(stop, str) else None,
            model=model if isinstance(model, str) and model else self.model,
            raw=body,
        )


def _render(messages: Sequence[ChatMessage]) -> tuple[str | None, list[dict[str, Any]]]:
    """The top-level system text and the turns, in Messages form.

    Tool results become ``tool_result`` blocks of a user turn; consecutive tool
    results (and user text right after them) share one user turn, with the
    results first, as the API asks.
    """
    system: list[str] = []
    turns: list[dict[str, Any]] = []
    for message in messages:
        if message.role == "system":
            system.append(message.content or "")
        elif message.role == "tool":
            result = {
                "type": "tool_result",
                "tool_use_id": message.tool_call_id,
                "content": message.content or "",
            }
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
    counts = {name: _count(value.get(name)) for name in _INPUT_FIELDS}
    output = _count(value.get("output_tokens"))
    known = [count for count in counts.values() if count is not None]
    read = sum(known) if counts["input_tokens"] is not None else None
    total = read + output if read is not None and output is not None else None
    return Usage(input_tokens=read, output_tokens=output, total_tokens=total)


_INPUT_FIELDS: Final = ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")


def _count(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None
