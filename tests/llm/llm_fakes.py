"""A fake provider over httpx.MockTransport: scripted responses, recorded requests, no sleeping."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import httpx

Reply = httpx.Response | Exception | Callable[[httpx.Request], httpx.Response]


class FakeProvider:
    """Answers each request with the next scripted response (or raises the scripted error)."""

    def __init__(self, *replies: Reply) -> None:
        self.replies = list(replies)
        self.requests: list[httpx.Request] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        if not self.replies:
            raise AssertionError(f"unexpected request #{len(self.requests)}: {request.url}")
        reply = self.replies.pop(0)
        if isinstance(reply, Exception):
            raise reply
        if isinstance(reply, httpx.Response):
            return reply
        return reply(request)

    @property
    def transport(self) -> httpx.MockTransport:
        return httpx.MockTransport(self)

    @property
    def bodies(self) -> list[Any]:
        return [json.loads(request.content) for request in self.requests]

    @property
    def body(self) -> Any:
        (request,) = self.requests
        return json.loads(request.content)


class Sleeps:
    """An injectable sleep that records the delays instead of waiting."""

    def __init__(self) -> None:
        self.delays: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.delays.append(seconds)


def ok(body: Any, headers: dict[str, str] | None = None) -> httpx.Response:
    """A 200 with a JSON body."""
    return httpx.Response(200, json=body, headers=headers)


def status(code: int, body: Any, headers: dict[str, str] | None = None) -> httpx.Response:
    """Any status, with a JSON body (or a text one, given a str)."""
    if isinstance(body, str):
        return httpx.Response(code, text=body, headers=headers)
    return httpx.Response(code, json=body, headers=headers)


class WeatherTool:
    """A tool definition shaped like weft's MemoryTool: read-only name/description/parameters."""

    @property
    def name(self) -> str:
        return "get_weather"

    @property
    def description(self) -> str:
        return "Get the current weather in a given location"

    @property
    def parameters(self) -> dict[str, Any]:
        return {
            "type": "object",
            "properties": {"location": {"type": "string", "description": "City and state"}},
            "required": ["location"],
        }
