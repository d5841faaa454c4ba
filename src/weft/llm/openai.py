"""A chat model over the OpenAI Chat Completions API, and every server that speaks it.

OpenAI itself, vLLM, Ollama (``/v1``), the llama.cpp server and LM Studio all
answer ``POST {base_url}/chat/completions`` in the same shape, so one adapter
serves them all: point ``base_url`` at the server.
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

DEFAULT_BASE_URL: Final = "https://api.openai.com/v1"
PROVIDER: Final = "openai"
API: Final = "OpenAI Chat Completions"


class OpenAIChatModel(HTTPChatModel):
    """An OpenAI-compatible Chat Completions client (OpenAI, vLLM, Ollama, llama.cpp, LM Studio).

    ``base_url`` falls back to ``OPENAI_BASE_URL``, then OpenAI's own
    ``https://api.openai.com/v1``; ``api_key`` to ``OPENAI_API_KEY``. A key is
    required only by OpenAI's own host; a local server runs without one.
    ``default_options`` go into every request (``{"temperature": 0}``), and
    options given to a call override them. Failures raise
    :class:`~weft.errors.ProviderError`; 429 and 5xx are retried first.

    Usage::

        model = OpenAIChatModel("gpt-4o-mini")                      # key from OPENAI_API_KEY
        local = OpenAIChatModel("qwen2.5:7b", base_url="http://localhost:11434/v1")  # Ollama
        reply = model.chat([ChatMessage.user("Which tasks are done?")], tools=memory_tools(m))
        for call in reply.tool_calls:
            print(call.name, call.arguments)
        print(model("Say hi").text)                                 # as a reasoner
    """

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        timeout: float = 60.0,
        max_retries: int = 3,
        transport: httpx.AsyncBaseTransport | None = None,
        default_options: Mapping[str, Any] | None = None,
        sleep: Sleep | None = None,
    ) -> None:
        if not isinstance(model, str) or not model:
            raise ModelConfigError(f"openai: model must be a non-empty name, not {model!r}")
        self.model = model
        self.base_url = (base_url or os.environ.get("OPENAI_BASE_URL") or DEFAULT_BASE_URL).rstrip(
            "/"
        )
        key = api_key if api_key is not None else os.environ.get("OPENAI_API_KEY")
        if not key and self.base_url == DEFAULT_BASE_URL:
            raise ModelConfigError(
                f"openai: no API key for {DEFAULT_BASE_URL}; pass api_key= or set OPENAI_API_KEY "
                "(for a local OpenAI-compatible server, pass its base_url= and no key is needed)"
            )
        headers = {"accept": "application/json"}
        if key:
            headers["authorization"] = f"Bearer {key}"
        self.default_options: dict[str, Any] = dict(default_options or {})
        self._http = ProviderHTTP(
            provider=PROVIDER,
            api=API,
            model=model,
            url=f"{self.base_url}/chat/completions",
            headers=headers,
            timeout=timeout,
            max_retries=max_retries,
            transport=transport,
            sleep=sleep,
            key_hint="api_key= or OPENAI_API_KEY",
        )
        self._options(self.default_options, {})

    async def achat(
        self,
        messages: Sequence[MessageLike],
        *,
        tools: Sequence[ToolLike] | None = None,
        **options: Any,
    ) -> AssistantMessage:
        """One Chat Completions request; the first choice as an AssistantMessage."""
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
        body: dict[str, Any] = {
            "model": self.model,
            "messages": [_render(message) for message in as_chat_messages(messages)],
        }
        specs = as_tool_specs(tools)
        if specs:
            body["tools"] = [spec.openai() for spec in specs]
        body.update(self._options(self.default_options, options))
        return body

    def _parse(self, reply: JsonReply) -> AssistantMessage:
        body = reply.body
        choices = body.get("choices")
        if not isinstance(choices, list) or not choices:
            error = body.get("error")
            if isinstance(error, Mapping) and isinstance(error.get("message"), str):
                raise self._http.shape_error(reply, f"an error came back: {error['message']}")
            found = ", ".join(sorted(body)) or "nothing"
            raise self._http.shape_error(reply, f'no "choices" list (found: {found})')
        choice = choices[0]
        message = choice.get("message") if isinstance(choice, Mapping) else None
        if not isinstance(message, Mapping):
            raise self._http.shape_error(reply, 'choices[0] has no "message" object')
        try:
            content = _content(message.get("content"))
        except ValueError:
            raise self._http.shape_error(reply, "choices[0].message.content is not text") from None
        raw_calls = message.get("tool_calls") or []
        if not isinstance(raw_calls, list):
            raise self._http.shape_error(reply, "choices[0].message.tool_calls is not a list")
        calls: list[ToolCall] = []
        for index, raw_call in enumerate(raw_calls):
            function = raw_call.get("function") if isinstance(raw_call, Mapping) else None
            name = function.get("name") if isinstance(function, Mapping) else None
            if not isinstance(function, Mapping) or not isinstance(name, str) or not name:
                raise self._http.shape_error(
                    reply, f"choices[0].message.tool_calls[{index}] has no function name"
                )
            call_id = raw_call.get("id")
            calls.append(
                ToolCall.parse(
                    id=call_id if isinstance(call_id, str) and call_id else new_tool_call_id(),
                    name=name,
                    raw=function.get("arguments", ""),
                )
            )
        finish = choice.get("finish_reason")
        model = body.get("model")
        return AssistantMessage(
            content=content,
            tool_calls=tuple(calls),
            usage=_usage(body.get("usage")),
            stop_reason=finish if isinstance(finish, str) else None,
            model=model if isinstance(model, str) and model else self.model,
            raw=body,
        )


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
    prompt = _count(value.get("prompt_tokens"))
    completion = _count(value.get("completion_tokens"))
    total = _count(value.get("total_tokens"))
    if total is None and prompt is not None and completion is not None:
        total = prompt + completion
    return Usage(input_tokens=prompt, output_tokens=completion, total_tokens=total)


def _count(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None
