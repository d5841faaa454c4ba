"""The two ways weft talks to a model: a reasoner (prompt in, text out) and a chat model
(messages and tools in, an ``AssistantMessage`` out), as the README's "Models" describes."""

from __future__ import annotations

import inspect
import time
from collections.abc import Awaitable, Callable, Sequence
from inspect import CO_COROUTINE
from time import perf_counter
from types import FunctionType, MethodType
from typing import Any, Protocol, TypeAlias, TypeGuard, runtime_checkable

from weft._sync import run_sync
from weft.llm.messages import AssistantMessage, ChatMessage, Completion, MessageLike
from weft.llm.tools import ToolLike
from weft.llm.watch import achat, tell, watched
from weft.store.notes import watching

ReasonerResult: TypeAlias = str | Completion | AssistantMessage


class Reasoner(Protocol):
    """Prompt text in, text (or a Completion) out, synchronously or as an awaitable.

    An object may also offer ``areason(prompt)`` (async) and ``reason(prompt)`` (sync),
    which :func:`areason` and :func:`reason` prefer: that is how the adapters give async
    code a native path while ``model(prompt)`` stays a plain blocking call.
    """

    def __call__(self, prompt: str, /) -> ReasonerResult | Awaitable[ReasonerResult]: ...


@runtime_checkable
class ChatModel(Protocol):
    """Messages and tool definitions in, one assistant message out; ``options`` are passed
    to the provider as request fields (``temperature=0``, ``tool_choice=...``)."""

    async def achat(
        self,
        messages: Sequence[MessageLike],
        *,
        tools: Sequence[ToolLike] | None = None,
        **options: Any,
    ) -> AssistantMessage: ...

    def chat(
        self,
        messages: Sequence[MessageLike],
        *,
        tools: Sequence[ToolLike] | None = None,
        **options: Any,
    ) -> AssistantMessage: ...


class ChatModelBase:
    """A chat model written as one ``achat``; this adds ``chat`` (from any thread, with or
    without a running loop) and the reasoner methods (the prompt as one user message)."""

    async def achat(
        self,
        messages: Sequence[MessageLike],
        *,
        tools: Sequence[ToolLike] | None = None,
        **options: Any,
    ) -> AssistantMessage:
        raise NotImplementedError(f"{type(self).__name__} must implement achat()")

    def chat(
        self,
        messages: Sequence[MessageLike],
        *,
        tools: Sequence[ToolLike] | None = None,
        **options: Any,
    ) -> AssistantMessage:
        """The blocking form of :meth:`achat`."""
        return run_sync(self.achat(messages, tools=tools, **options))

    async def areason(self, prompt: str) -> Completion:
        """Send ``prompt`` as one user message; the answer's text and usage."""
        reply = await achat(self, [ChatMessage.user(prompt)])
        return Completion(reply.text, usage=reply.usage)

    def reason(self, prompt: str) -> Completion:
        """The blocking form of :meth:`areason`."""
        return run_sync(self.areason(prompt))

    def __call__(self, prompt: str) -> Completion:
        """A chat model is a reasoner: ``model(prompt)`` blocks and returns a Completion."""
        return self.reason(prompt)


def as_completion(result: object, *, reasoner: object = None) -> Completion:
    """A reasoner's return value as a Completion (``str``, Completion or AssistantMessage)."""
    if isinstance(result, Completion):
        return result
    if isinstance(result, str):
        return Completion(result)
    if isinstance(result, AssistantMessage):
        return Completion(result.text, usage=result.usage)
    who = f"the reasoner {reasoner!r}" if reasoner is not None else "a reasoner"
    raise TypeError(
        f"{who} returned a {type(result).__name__}; a reasoner returns the text (str) or a "
        "weft.llm.Completion(text, usage=...), directly or from an async function"
    )


async def areason(reasoner: Reasoner | Any, prompt: str) -> Completion:
    """Ask any reasoner, from async code; the answer as a Completion.

    A synchronous reasoner runs on the loop's thread (no worker thread): fine for scripts
    and fast functions; wrap a slow blocking one in ``asyncio.to_thread`` yourself.
    """
    if watching() and not isinstance(reasoner, ChatModelBase):  # a chat model tells itself
        return await watched(reasoner, "text_completion", _areason(reasoner, prompt))
    method = getattr(reasoner, "areason", None)
    if _async_method(method):  # the common case of _areason, without its coroutine
        reply = await method(prompt)
        return reply if reply.__class__ is Completion else as_completion(reply, reasoner=reasoner)
    return await _areason(reasoner, prompt)


async def _areason(reasoner: Reasoner | Any, prompt: str) -> Completion:
    method = getattr(reasoner, "areason", None)
    if method is not None and (
        _async_method(method) or (callable(method) and inspect.iscoroutinefunction(method))
    ):
        return as_completion(await method(prompt), reasoner=reasoner)
    _check_callable(reasoner)
    result = reasoner(prompt)
    if inspect.isawaitable(result):
        result = await result
    return as_completion(result, reasoner=reasoner)


def _async_method(method: Any) -> TypeGuard[Callable[[str], Awaitable[Any]]]:
    """Whether ``method`` is a bound ``async def`` method: ``inspect.iscoroutinefunction``'s
    answer in its common case, read without its unwrapping (once per model call)."""
    return (
        method.__class__ is MethodType
        and method.__func__.__class__ is FunctionType
        and bool(method.__func__.__code__.co_flags & CO_COROUTINE)
    )


def reason(reasoner: Reasoner | Any, prompt: str) -> Completion:
    """Ask any reasoner, from synchronous code; the answer as a Completion (an awaitable
    result is run to completion, as ``ChatModelBase.chat`` does)."""
    if not watching() or isinstance(reasoner, ChatModelBase):  # a chat model tells itself
        return _reason(reasoner, prompt)
    started_at, began = time.time(), perf_counter()
    try:
        reply = _reason(reasoner, prompt)
    except BaseException as exc:
        tell(reasoner, "text_completion", started_at, began, None, f"{type(exc).__name__}: {exc}")
        raise
    tell(reasoner, "text_completion", started_at, began, reply, None)
    return reply


def _reason(reasoner: Reasoner | Any, prompt: str) -> Completion:
    method = getattr(reasoner, "reason", None)
    if callable(method) and not inspect.iscoroutinefunction(method):
        return as_completion(method(prompt), reasoner=reasoner)
    _check_callable(reasoner)
    result = reasoner(prompt)
    if inspect.isawaitable(result):
        result = run_sync(_await(result))
    return as_completion(result, reasoner=reasoner)


async def _await(awaitable: Awaitable[Any]) -> Any:
    return await awaitable


def _check_callable(reasoner: object) -> None:
    if not callable(reasoner):
        raise TypeError(
            f"{reasoner!r} is not a reasoner; expected a callable taking the prompt (a function, "
            "an async function, a ScriptedReasoner or a chat model adapter)"
        )
