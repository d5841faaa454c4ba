"""``HTTPChatModel``: what the provider adapters share, one POST (whole or streamed as
server-sent events) with retries and clear errors.

Retries follow the official OpenAI and Anthropic SDKs: a response with ``x-should-retry:
true`` is retried and one with ``x-should-retry: false`` is not, whatever its status;
otherwise 408, 409, 429 and every 5xx (Anthropic's 529 "overloaded" too) are retried, as are
network failures (connect and read timeouts, refused or dropped connections). The wait is the
provider's ``retry-after-ms`` or ``retry-after`` (seconds or an HTTP date) when it asks for
more than 0 and at most 60 seconds, else exponential backoff from 0.5 s doubling to at most
8 s, less up to a quarter at random (jitter) so clients do not retry in lockstep. A stream is
retried only until its first byte: events already handed out are never repeated.
httpx is imported only when a request is about to be made.
"""

from __future__ import annotations

import asyncio
import email.utils
import functools
import logging
import os
import platform
import random
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, ClassVar, Final, Protocol, Self

from weft.errors import ModelConfigError, ProviderError
from weft.llm.messages import (
    AssistantMessage,
    ChatMessage,
    MessageLike,
    Thinking,
    ToolCall,
    Usage,
    as_chat_messages,
    json_kind,
)
from weft.llm.protocols import ChatModelBase
from weft.llm.sse import ServerSentEvent, aiter_events
from weft.llm.streaming import MessageDone, StreamEvent, replay
from weft.llm.tools import ToolLike, ToolSpec, as_tool_specs

if TYPE_CHECKING:
    import httpx

logger: Final = logging.getLogger("weft.llm")

RETRY_STATUSES: Final = frozenset({408, 409, 429})
"""Retried besides every 5xx: request timeout, lock conflict, rate limit."""
INITIAL_BACKOFF: Final = 0.5
MAX_BACKOFF: Final = 8.0
MAX_RETRY_AFTER: Final = 60.0
"""A ``retry-after`` longer than this is not waited for: the backoff is used instead."""
_MESSAGE_CHARS: Final = 500
_NOT_JSON: Final = object()

Sleep = Callable[[float], Awaitable[object]]


@dataclass(frozen=True, slots=True, kw_only=True)
class JsonReply:
    """A decoded 2xx JSON object, with what an error about its shape needs to say."""

    body: dict[str, Any]
    status: int
    attempts: int
    request_id: str | None


def backoff_delay(retry: int, rand: Callable[[], float] = random.random) -> float:
    """Seconds to wait before retry number ``retry`` (0-based): doubling from 0.5 s, capped at
    8 s, and jittered to between three quarters and all of the step."""
    step: float = min(MAX_BACKOFF, INITIAL_BACKOFF * 2.0 ** min(retry, 32))
    return step * (1 - 0.25 * rand())


def should_retry(status: int, headers: Mapping[str, str]) -> bool:
    """Whether a failed response is worth another attempt: the server's ``x-should-retry``
    when it says ``true`` or ``false``, else whether the status is 408, 409, 429 or 5xx."""
    verdict = headers.get("x-should-retry")
    if verdict in ("true", "false"):
        return verdict == "true"
    return status in RETRY_STATUSES or status >= 500


def retry_delay(headers: Mapping[str, str], retry: int) -> float:
    """The wait before retry number ``retry``: what the server asked for, when that is more
    than 0 and at most ``MAX_RETRY_AFTER`` seconds, else :func:`backoff_delay`."""
    asked = retry_after(headers)
    return asked if asked is not None and 0 < asked <= MAX_RETRY_AFTER else backoff_delay(retry)


@functools.cache
def user_agent() -> str:
    """``weft/<version>``, with the Python and httpx versions, sent with every request."""
    import importlib.metadata

    import httpx

    try:
        version = importlib.metadata.version("weft")
    except importlib.metadata.PackageNotFoundError:
        version = "unknown"
    return f"weft/{version} (python {platform.python_version()}; httpx {httpx.__version__})"


class StreamShapeError(Exception):
    """Raised by a stream assembler: an event that is not what the API documents."""


class StreamErrorEvent(Exception):
    """Raised by a stream assembler: the provider sent an error in the stream."""

    def __init__(self, message: str, error_type: str | None) -> None:
        super().__init__(message)
        self.message = message
        self.error_type = error_type


class StreamAssembler(Protocol):
    """Turns one provider's server-sent events into weft's stream events, and keeps what
    they said as the body a whole (non-streamed) response would have had."""

    @property
    def done(self) -> bool:
        """The provider sent its end-of-stream event."""
        ...

    @property
    def finished(self) -> bool:
        """The provider said why the reply stopped (a stream cut after this lost nothing)."""
        ...

    def feed(self, event: ServerSentEvent) -> list[StreamEvent]: ...

    def body(self) -> dict[str, Any]: ...


def retry_after(headers: Mapping[str, str], *, now: float | None = None) -> float | None:
    """The wait a provider asked for, in seconds: ``retry-after-ms``, else ``retry-after``.

    ``retry-after`` may be seconds or an HTTP date; anything unreadable counts as absent.
    """
    millis = headers.get("retry-after-ms")
    if millis is not None:
        try:
            return max(0.0, float(millis) / 1000)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - (time.time() if now is None else now))


class HTTPChatModel(ChatModelBase):
    """A chat model over one provider's HTTP JSON API; a subclass gives the wire format.

    The subclass names its provider (class attributes) and writes ``_body`` (the
    request for some messages and tools) and ``_parse`` (the answer of a 2xx body).
    Connections are pooled in one ``httpx.AsyncClient``, bound to the event loop that
    first uses it (or the next one, once that loop has closed); a call from another
    loop (including the private loop of a sync ``chat()``) gets a client of its own for
    that call, so a pooled connection is never used from a loop it does not belong to.
    """

    provider: ClassVar[str]
    api: ClassVar[str]
    default_base_url: ClassVar[str]
    env: ClassVar[str]
    """The prefix of the environment variables ``<env>_BASE_URL`` and ``<env>_API_KEY``."""
    endpoint: ClassVar[str]
    no_key_help: ClassVar[str] = ""
    _reserved_options: ClassVar[frozenset[str]] = frozenset(
        {"model", "messages", "tools", "stream"}
    )

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
        provider, env = self.provider, self.env
        if not isinstance(model, str) or not model:
            raise ModelConfigError(f"{provider}: model must be a non-empty name, not {model!r}")
        self.model = model
        url = base_url or os.environ.get(f"{env}_BASE_URL") or self.default_base_url
        self.base_url = url.rstrip("/")
        key = api_key if api_key is not None else os.environ.get(f"{env}_API_KEY")
        if not key and self.base_url == self.default_base_url:
            raise ModelConfigError(
                f"{provider}: no API key for {self.default_base_url}; pass api_key= or set "
                f"{env}_API_KEY{self.no_key_help}"
            )
        self.url = self.base_url + self.endpoint
        if not self.url.startswith(("http://", "https://")):
            raise ModelConfigError(
                f"{provider}: base URL {self.url!r} is not an http(s) URL; pass "
                "base_url='https://...'"
            )
        if not isinstance(max_retries, int) or isinstance(max_retries, bool) or max_retries < 0:
            raise ModelConfigError(
                f"{provider}: max_retries must be a whole number >= 0, not {max_retries!r}"
            )
        if not isinstance(timeout, int | float) or timeout <= 0:
            raise ModelConfigError(f"{provider}: timeout must be seconds > 0, not {timeout!r}")
        self.timeout = float(timeout)
        self.max_retries = max_retries
        self.default_options: dict[str, Any] = dict(default_options or {})
        self._options({})
        self._headers = {"accept": "application/json", **self._auth_headers(key or None)}
        self._transport = transport
        self._sleep: Sleep = sleep or asyncio.sleep
        self._client: httpx.AsyncClient | None = None
        self._client_loop: asyncio.AbstractEventLoop | None = None

    # ------------------------------------------------------------ the wire format

    def _auth_headers(self, key: str | None) -> dict[str, str]:
        raise NotImplementedError

    def _body(self, messages: list[ChatMessage], tools: list[ToolSpec]) -> dict[str, Any]:
        raise NotImplementedError

    def _parse(self, reply: JsonReply) -> AssistantMessage:
        raise NotImplementedError

    def _stream_fields(self) -> dict[str, Any]:
        """What a streamed request adds to the body."""
        return {"stream": True}

    def _assembler(self) -> StreamAssembler:
        raise NotImplementedError

    # ------------------------------------------------------------------- the API

    async def achat(
        self,
        messages: Sequence[MessageLike],
        *,
        tools: Sequence[ToolLike] | None = None,
        **options: Any,
    ) -> AssistantMessage:
        """One request to the provider; its answer as an AssistantMessage."""
        body = self.request_body(messages, tools=tools, **options)
        client = self._pooled_client()
        if client is not None:
            return self._parse(self._decode(*await self._send(client, body, stream=False)))
        async with self._new_client() as own:
            return self._parse(self._decode(*await self._send(own, body, stream=False)))

    async def astream(
        self,
        messages: Sequence[MessageLike],
        *,
        tools: Sequence[ToolLike] | None = None,
        **options: Any,
    ) -> AsyncIterator[StreamEvent]:
        """The reply as it is made, over server-sent events: text, thinking and tool-call
        events as they arrive, then ``MessageDone`` with what :meth:`achat` would return."""
        body = self.request_body(messages, tools=tools, **options)
        body.update(self._stream_fields())
        client = self._pooled_client()
        if client is not None:
            async for event in self._stream(client, body):
                yield event
            return
        async with self._new_client() as own:
            async for event in self._stream(own, body):
                yield event

    def request_body(
        self,
        messages: Sequence[MessageLike],
        *,
        tools: Sequence[ToolLike] | None = None,
        **options: Any,
    ) -> dict[str, Any]:
        """The JSON body :meth:`achat` would send: for logging, caching or a test's eye."""
        body = self._body(as_chat_messages(messages), as_tool_specs(tools))
        body.update(self._options(options))
        return body

    async def aclose(self) -> None:
        """Close pooled connections (a later call opens new ones); ``async with model:``
        does it on exit."""
        client, self._client, self._client_loop = self._client, None, None
        if client is not None:
            await client.aclose()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    def __repr__(self) -> str:  # never shows the API key
        return f"{type(self).__name__}(model={self.model!r}, base_url={self.base_url!r})"

    # ------------------------------------------------- what the adapters share

    def _options(self, options: Mapping[str, Any]) -> dict[str, Any]:
        merged = {**self.default_options, **options}
        clash = sorted(self._reserved_options & merged.keys())
        if clash:
            raise ModelConfigError(
                f"{self.provider}: option(s) {clash} are set by weft itself; pass the "
                "conversation as messages=, the tools as tools=, and the model to the constructor;"
                " to stream, call astream() instead of achat()"
            )
        return merged

    def _shape_error(self, reply: JsonReply, what: str, *, body: str = "") -> ProviderError:
        """The error for a 2xx body that is not what the API documents: says what was missing
        (``body``: what the body is instead of a response of the API)."""
        body = body or f"not a response of the {self.api} API"
        return self._error(
            reply,
            f"{self._who()} answered {reply.status} with a body that is {body}: {what}. Check "
            f"that the base URL ({self.url}) points at a server that speaks the {self.api} API",
        )

    def _error(self, reply: JsonReply, message: str, **detail: Any) -> ProviderError:
        return ProviderError(
            message,
            provider=self.provider,
            model=self.model,
            status=reply.status,
            attempts=reply.attempts,
            request_id=reply.request_id,
            **detail,
        )

    def _no_list(self, reply: JsonReply, key: str) -> ProviderError:
        """The error for a body without its ``key`` list: the provider's error if it sent one."""
        error = reply.body.get("error")
        if isinstance(error, Mapping) and isinstance(error.get("message"), str):
            return self._shape_error(reply, f"an error came back: {error['message']}")
        found = ", ".join(sorted(reply.body)) or "nothing"
        return self._shape_error(reply, f'no "{key}" list (found: {found})')

    def _message(
        self,
        reply: JsonReply,
        content: str | None,
        calls: list[ToolCall],
        usage: Usage | None,
        stop: object,
        *,
        thinking: Sequence[Thinking] = (),
        refusal: str | None = None,
    ) -> AssistantMessage:
        model = reply.body.get("model")
        return AssistantMessage(
            content=content,
            tool_calls=tuple(calls),
            usage=usage,
            stop_reason=stop if isinstance(stop, str) else None,
            model=model if isinstance(model, str) and model else self.model,
            raw=reply.body,
            thinking=tuple(thinking),
            refusal=refusal,
        )

    # ------------------------------------------------------------------ the HTTP

    def _pooled_client(self) -> httpx.AsyncClient | None:
        loop = asyncio.get_running_loop()
        stale = self._client_loop is not None and self._client_loop.is_closed()
        if self._client is None or self._client.is_closed or stale:
            # a client of a closed loop cannot be closed any more; its connections died with it
            self._client, self._client_loop = self._new_client(), loop
            return self._client
        return self._client if self._client_loop is loop else None

    def _new_client(self) -> httpx.AsyncClient:
        import httpx

        return httpx.AsyncClient(
            headers={"user-agent": user_agent(), **self._headers},
            timeout=httpx.Timeout(self.timeout),
            transport=self._transport,
        )

    async def _send(
        self, client: httpx.AsyncClient, body: Mapping[str, Any], *, stream: bool
    ) -> tuple[httpx.Response, int]:
        """POST ``body``, retrying as the module says; the 2xx response and the attempt that
        got it. A streamed response is open (its body unread): the caller closes it."""
        import httpx

        attempts = self.max_retries + 1
        for attempt in range(1, attempts + 1):
            request = client.build_request("POST", self.url, json=body)
            try:
                response = await client.send(request, stream=stream)
                if stream and not response.is_success:
                    try:
                        await response.aread()
                    finally:
                        await response.aclose()
            except httpx.TransportError as exc:
                if attempt == attempts:
                    raise self._transport_error(exc, attempt) from exc
                what, delay = _describe(exc), backoff_delay(attempt - 1)
            else:
                if response.is_success:
                    return response, attempt
                status = response.status_code
                if attempt == attempts or not should_retry(status, response.headers):
                    raise self._status_error(response, attempt)
                what, delay = f"answered {status}", retry_delay(response.headers, attempt - 1)
            logger.info(
                "%s: %s, retrying in %.2fs (attempt %d of %d)",
                self._who(),
                what,
                delay,
                attempt,
                attempts,
            )
            await self._sleep(delay)
        raise AssertionError("unreachable: the last attempt returns or raises")

    async def _stream(
        self, client: httpx.AsyncClient, body: Mapping[str, Any]
    ) -> AsyncIterator[StreamEvent]:
        """POST ``body`` for a stream; its events, the assembled final message last."""
        import httpx

        response, attempt = await self._send(client, body, stream=True)
        try:
            kind = response.headers.get("content-type", "")
            if not kind.startswith("text/event-stream"):
                # a server that ignores "stream": true answers with the whole reply at once
                await response.aread()
                async for event in replay(self._parse(self._decode(response, attempt))):
                    yield event
                return
            meta = JsonReply(
                body={},
                status=response.status_code,
                attempts=attempt,
                request_id=_request_id(response, None),
            )
            assembler = self._assembler()
            try:
                async for sse in aiter_events(response.aiter_lines()):
                    for event in assembler.feed(sse):
                        yield event
                    if assembler.done:
                        break
            except httpx.TransportError as exc:
                raise self._cut_error(meta, _describe(exc)) from exc
            except StreamShapeError as exc:
                raise self._shape_error(
                    meta, str(exc), body=f"a stream not of the {self.api} API"
                ) from None
            except StreamErrorEvent as exc:
                raise self._stream_error(meta, exc) from None
            if not (assembler.done or assembler.finished):
                raise self._cut_error(meta, "the stream ended before the reply said it was done")
            yield MessageDone(self._parse(replace(meta, body=assembler.body())))
        finally:
            await response.aclose()

    def _cut_error(self, meta: JsonReply, what: str) -> ProviderError:
        return self._error(
            meta,
            f"{self._who()} broke off its stream: {what}. The events already received stand;"
            " ask again for the whole reply",
        )

    def _stream_error(self, meta: JsonReply, exc: StreamErrorEvent) -> ProviderError:
        kind = f" [{exc.error_type}]" if exc.error_type else ""
        return self._error(
            meta,
            f"{self._who()} sent an error in its stream: {_truncate(exc.message)}{kind}. "
            "The events already received stand; ask again for the whole reply",
            provider_message=exc.message,
            error_type=exc.error_type,
        )

    def _decode(self, response: httpx.Response, attempt: int) -> JsonReply:
        """The JSON object of a 2xx answer, else a ProviderError."""
        try:
            body = response.json()
        except (ValueError, RecursionError):  # not JSON, or nested past Python's limit
            body = _NOT_JSON
        reply = JsonReply(
            body=body if isinstance(body, dict) else {},
            status=response.status_code,
            attempts=attempt,
            request_id=_request_id(response, body),
        )
        if body is _NOT_JSON:
            preview = _truncate(response.text.strip()) or "(empty)"
            raise self._shape_error(reply, repr(preview), body="not JSON")
        if not isinstance(body, dict):
            raise self._shape_error(reply, f"expected a JSON object, got a JSON {json_kind(body)}")
        return reply

    def _status_error(self, response: httpx.Response, attempts: int) -> ProviderError:
        status = response.status_code
        message, error_type, body = _error_detail(response)
        tries = f" after {attempts} attempts" if attempts > 1 else ""
        kind = f" [{error_type}]" if error_type else ""
        hint = self._hint(status)
        hint = f". {hint}" if hint else ""
        return ProviderError(
            f"{self._who()} answered {status}{tries}: {message}{kind}{hint}",
            provider=self.provider,
            model=self.model,
            status=status,
            provider_message=message,
            error_type=error_type,
            attempts=attempts,
            request_id=_request_id(response, body),
        )

    def _transport_error(self, exc: Exception, attempts: int) -> ProviderError:
        import httpx

        hint = "Check the base URL and that the server is running"
        if isinstance(exc, httpx.TimeoutException):
            hint = f"The timeout is {self.timeout:g}s: for a slow model pass a larger timeout="
        return ProviderError(
            f"{self._who()} could not be reached at {self.url} after {attempts} "
            f"attempt{'s' if attempts > 1 else ''}: {_describe(exc)}. {hint}",
            provider=self.provider,
            model=self.model,
            status=None,
            provider_message=str(exc) or None,
            error_type=type(exc).__name__,
            attempts=attempts,
        )

    def _hint(self, status: int) -> str:
        if status in RETRY_STATUSES or status >= 500:
            return (
                f"The provider is rate-limiting or failing; retried {self.max_retries} times: "
                "raise max_retries= or try again later"
            )
        refused = "The provider refused the request: check the messages, tools and options sent"
        return {
            401: f"Check the API key (api_key= or {self.env}_API_KEY)",
            403: "The API key is not allowed to use this model or endpoint",
            404: f"Check the model name and the base URL ({self.url})",
            413: "The request is too large: send fewer or shorter messages",
            400: refused,
            422: refused,
        }.get(status, "")

    def _who(self) -> str:
        return f"{self.provider} model {self.model!r}"


def _error_detail(response: httpx.Response) -> tuple[str, str | None, Any]:
    """The provider's own message and error type, from any of the error shapes in use.

    OpenAI ``{"error": {"message", "type", "param", "code"}}``, Anthropic
    ``{"type": "error", "error": {"type", "message"}}``, and the variants of
    compatible servers: ``{"error": "text"}`` (Ollama, llama.cpp), a top-level
    ``message``/``type`` (vLLM), ``{"detail": ...}`` (FastAPI-based servers).
    """
    try:
        body: Any = response.json()
    except (ValueError, RecursionError):  # not JSON, or nested past Python's limit
        body = None
    message: object = None
    error_type: object = None
    if isinstance(body, dict):
        error = body.get("error")
        if isinstance(error, dict):
            message = error.get("message")
            error_type = error.get("type") or error.get("code")
        elif isinstance(error, str):
            message = error
        elif isinstance(body.get("message"), str):
            message, error_type = body["message"], body.get("type")
        elif "detail" in body:
            message = body["detail"]
    if not isinstance(message, str) or not message.strip():
        message = _truncate(response.text.strip()) if message is None else str(message)
    text = message or response.reason_phrase or "(no message)"
    return _truncate(text), (str(error_type) if error_type else None), body


def _request_id(response: httpx.Response, body: Any) -> str | None:
    if isinstance(body, dict) and isinstance(body.get("request_id"), str):
        return str(body["request_id"])
    found: str | None = response.headers.get("request-id") or response.headers.get("x-request-id")
    return found


def _describe(exc: Exception) -> str:
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _truncate(text: str) -> str:
    return text if len(text) <= _MESSAGE_CHARS else text[:_MESSAGE_CHARS] + "..."


def count(value: object) -> int | None:
    """A token count of a provider's usage, if it is one."""
    return value if isinstance(value, int) and not isinstance(value, bool) else None
