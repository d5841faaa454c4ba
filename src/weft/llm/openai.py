"""A chat model over the OpenAI Chat Completions API, and every server that speaks it
(vLLM, Ollama's ``/v1``, the llama.cpp server, LM Studio): point ``base_url`` at it."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from weft.llm._http import HTTPChatModel, JsonReply, count
from weft.llm.messages import AssistantMessage, ChatMessage, ToolCall, Usage
from weft.llm.tools import ToolSpec


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
        return self._message(reply, content, calls, usage, choice.get("finish_reason"))


def _render(message: ChatMessage) -> dict[str, Any]:
    """One message in Chat Completions form."""
    if message.role == "tool":
        content = message.content or ""
        return {"role": "tool", "tool_call_id": message.tool_call_id, "content": content}
    rendered: dict[str, Any] = {"role": message.role, "content": message.content}
    if message.tool_calls:
        rendered["tool_calls"] = [
            {
                "id": call.id,
                "type": "function",
                "function": {"name": call.name, "arguments": call.raw_or_json()},
            }
            for call in message.tool_calls
        ]
    elif message.content is None:
        rendered["content"] = ""
    if message.name:
        rendered["name"] = message.name
    return rendered


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
