"""Retries as the official SDKs do them, against a real HTTP server on 127.0.0.1."""

from __future__ import annotations

import email.utils
import time
from typing import Any

import pytest
from llm_fakes import Sleeps
from local_server import LocalServer, Reply, closed_port, json_reply, sse_reply

import weft
from weft.errors import ProviderError
from weft.llm import AnthropicChatModel, ChatMessage, OpenAIChatModel
from weft.llm._http import HTTPChatModel

COMPLETION = {
    "id": "chatcmpl-1",
    "object": "chat.completion",
    "model": "gpt-4o-mini",
    "choices": [
        {"index": 0, "message": {"role": "assistant", "content": "ok"}, "finish_reason": "stop"}
    ],
}
MESSAGE = {
    "id": "msg_1",
    "type": "message",
    "role": "assistant",
    "model": "claude-sonnet-4-5",
    "content": [{"type": "text", "text": "ok"}],
    "stop_reason": "end_turn",
}
HI = [ChatMessage.user("Hi")]


def openai(server: LocalServer, sleeps: Sleeps, **kwargs: Any) -> OpenAIChatModel:
    return OpenAIChatModel("gpt-4o-mini", base_url=server.url + "/v1", sleep=sleeps, **kwargs)


def anthropic(server: LocalServer, sleeps: Sleeps, **kwargs: Any) -> AnthropicChatModel:
    return AnthropicChatModel(
        "claude-sonnet-4-5", base_url=server.url, api_key="k", sleep=sleeps, **kwargs
    )


async def ask(model: HTTPChatModel) -> Any:
    """One call, the model's connections closed after it (no socket left to the GC)."""
    async with model:
        return await model.achat(HI)


def failure(status: int, headers: dict[str, str] | None = None) -> Reply:
    return json_reply(status, {"error": {"message": f"status {status}"}}, headers)


@pytest.mark.parametrize("status", [408, 409, 429, 500, 502, 503, 504])
async def test_openai_retries_the_statuses_the_sdk_retries(status: int, sleeps: Sleeps) -> None:
    with LocalServer(failure(status), json_reply(200, COMPLETION)) as server:
        reply = await ask(openai(server, sleeps))
    assert reply.content == "ok"
    assert len(server.requests) == 2
    assert len(sleeps.delays) == 1


async def test_anthropic_retries_529_overloaded(sleeps: Sleeps) -> None:
    overloaded = json_reply(529, {"type": "error", "error": {"type": "overloaded_error"}})
    with LocalServer(overloaded, json_reply(200, MESSAGE)) as server:
        reply = await ask(anthropic(server, sleeps))
    assert reply.content == "ok"
    assert [seen.path for seen in server.requests] == ["/v1/messages", "/v1/messages"]


@pytest.mark.parametrize("status", [400, 401, 403, 404, 413, 422])
async def test_other_client_errors_fail_at_the_first_answer(status: int, sleeps: Sleeps) -> None:
    server = LocalServer(failure(status), json_reply(200, COMPLETION))
    with server, pytest.raises(ProviderError) as info:
        await ask(openai(server, sleeps))
    assert info.value.status == status
    assert info.value.attempts == 1
    assert len(server.requests) == 1
    assert sleeps.delays == []


async def test_x_should_retry_true_retries_even_a_400(sleeps: Sleeps) -> None:
    with LocalServer(
        failure(400, {"x-should-retry": "true"}), json_reply(200, COMPLETION)
    ) as server:
        reply = await ask(openai(server, sleeps))
    assert reply.content == "ok"
    assert len(server.requests) == 2


async def test_x_should_retry_false_forbids_retrying_even_a_503(sleeps: Sleeps) -> None:
    with (
        LocalServer(
            failure(503, {"x-should-retry": "false"}), json_reply(200, COMPLETION)
        ) as server,
        pytest.raises(ProviderError, match="answered 503: status 503"),
    ):
        await ask(anthropic(server, sleeps))
    assert len(server.requests) == 1


@pytest.mark.parametrize(
    ("headers", "expected"),
    [
        ({"retry-after-ms": "250"}, 0.25),
        ({"retry-after": "2"}, 2.0),
        ({"retry-after": "1.5", "retry-after-ms": "700"}, 0.7),  # the finer one wins
        ({"retry-after": "60"}, 60.0),
    ],
)
async def test_the_wait_the_server_asks_for_is_honoured(
    headers: dict[str, str], expected: float, sleeps: Sleeps
) -> None:
    with LocalServer(failure(429, headers), json_reply(200, COMPLETION)) as server:
        await ask(openai(server, sleeps))
    assert sleeps.delays == [pytest.approx(expected)]


async def test_retry_after_as_an_http_date(sleeps: Sleeps) -> None:
    when = email.utils.formatdate(time.time() + 30, usegmt=True)
    with LocalServer(failure(503, {"retry-after": when}), json_reply(200, COMPLETION)) as server:
        await ask(openai(server, sleeps))
    (delay,) = sleeps.delays
    assert 28 <= delay <= 30


@pytest.mark.parametrize("value", ["0", "-3", "3600", "soon"])
async def test_a_retry_after_of_nothing_too_long_or_unreadable_gives_way_to_backoff(
    value: str, sleeps: Sleeps
) -> None:
    with LocalServer(failure(429, {"retry-after": value}), json_reply(200, COMPLETION)) as server:
        await ask(openai(server, sleeps))
    (delay,) = sleeps.delays
    assert 0.375 <= delay <= 0.5


async def test_backoff_doubles_with_jitter_until_the_retries_run_out(sleeps: Sleeps) -> None:
    with LocalServer(*[failure(500)] * 4) as server, pytest.raises(ProviderError) as info:
        await ask(openai(server, sleeps, max_retries=3))
    assert info.value.attempts == 4
    assert "answered 500 after 4 attempts" in str(info.value)
    low, high = zip(*[(0.375, 0.5), (0.75, 1.0), (1.5, 2.0)], strict=True)
    assert all(lo <= d <= hi for lo, d, hi in zip(low, sleeps.delays, high, strict=True))


async def test_a_refused_connection_is_retried_then_reported_without_status(
    sleeps: Sleeps,
) -> None:
    model = OpenAIChatModel("m", base_url=closed_port() + "/v1", max_retries=2, sleep=sleeps)
    with pytest.raises(ProviderError, match=r"could not be reached .* after 3 attempts") as info:
        await ask(model)
    assert info.value.status is None
    assert info.value.error_type == "ConnectError"
    assert len(sleeps.delays) == 2


async def test_a_read_timeout_is_retried(sleeps: Sleeps) -> None:
    slow = Reply(200, b"{}", {"content-type": "application/json"}, delay=1.0)
    with LocalServer(slow, json_reply(200, COMPLETION)) as server:
        reply = await ask(openai(server, sleeps, timeout=0.2))
    assert reply.content == "ok"
    assert len(sleeps.delays) == 1


async def test_a_read_timeout_every_time_names_the_timeout(sleeps: Sleeps) -> None:
    slow = Reply(200, b"{}", {"content-type": "application/json"}, delay=0.6)
    server = LocalServer(slow, slow)
    with server, pytest.raises(ProviderError, match=r"ReadTimeout.*The timeout is 0.2s"):
        await ask(anthropic(server, sleeps, timeout=0.2, max_retries=1))


@pytest.mark.parametrize("make", [openai, anthropic])
async def test_every_request_names_weft_and_its_version(make: Any, sleeps: Sleeps) -> None:
    body = COMPLETION if make is openai else MESSAGE
    with LocalServer(json_reply(200, body)) as server:
        await ask(make(server, sleeps))
    agent = server.requests[0].headers["user-agent"]
    assert agent.startswith(f"weft/{weft.__version__} (python ")
    assert "httpx" in agent


async def test_a_stream_is_retried_before_its_first_event(sleeps: Sleeps) -> None:
    with LocalServer(failure(529), sse_reply("anthropic_text.sse")) as server:
        async with anthropic(server, sleeps) as model:
            events = [e async for e in model.astream(HI)]
    assert events[-1].message.content == "Hello!"  # type: ignore[union-attr]
    assert len(sleeps.delays) == 1
