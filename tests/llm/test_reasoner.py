"""areason/reason: every shape of reasoner becomes a Completion, from sync and async code."""

from __future__ import annotations

import asyncio
import threading

import pytest

from weft.llm import AssistantMessage, Completion, Usage, areason, reason


def sync_fn(prompt: str) -> str:
    return f"sync: {prompt}"


async def async_fn(prompt: str) -> str:
    await asyncio.sleep(0)
    return f"async: {prompt}"


def with_usage(prompt: str) -> Completion:
    return Completion(prompt.upper(), usage=Usage(input_tokens=1, output_tokens=2, total_tokens=3))


class CallableObject:
    def __call__(self, prompt: str) -> str:
        return f"object: {prompt}"


class AsyncCallableObject:
    async def __call__(self, prompt: str) -> Completion:
        return Completion(f"async object: {prompt}")


class WithMethods:
    """An object offering both paths: the helpers prefer them over __call__."""

    def __call__(self, prompt: str) -> str:
        raise AssertionError("the helpers should use reason/areason")

    def reason(self, prompt: str) -> Completion:
        return Completion(f"reason: {prompt}")

    async def areason(self, prompt: str) -> Completion:
        return Completion(f"areason: {prompt}")


CASES = [
    (sync_fn, Completion("sync: hi")),
    (async_fn, Completion("async: hi")),
    (with_usage, Completion("HI", usage=Usage(input_tokens=1, output_tokens=2, total_tokens=3))),
    (CallableObject(), Completion("object: hi")),
    (AsyncCallableObject(), Completion("async object: hi")),
    (
        lambda prompt: AssistantMessage(content=prompt, usage=Usage(total_tokens=1)),
        Completion("hi", usage=Usage(total_tokens=1)),
    ),
]


@pytest.mark.parametrize(("reasoner", "expected"), CASES)
async def test_areason_normalises_every_kind_of_reasoner(
    reasoner: object, expected: Completion
) -> None:
    assert await areason(reasoner, "hi") == expected


@pytest.mark.parametrize(("reasoner", "expected"), CASES)
def test_reason_normalises_every_kind_of_reasoner(reasoner: object, expected: Completion) -> None:
    assert reason(reasoner, "hi") == expected


def test_the_objects_own_methods_are_preferred() -> None:
    assert reason(WithMethods(), "x") == Completion("reason: x")
    assert asyncio.run(areason(WithMethods(), "x")) == Completion("areason: x")


async def test_a_sync_reasoner_runs_on_the_callers_thread() -> None:
    seen: list[threading.Thread] = []

    def record(prompt: str) -> str:
        seen.append(threading.current_thread())
        return prompt

    await areason(record, "p")
    reason(record, "p")
    assert seen == [threading.current_thread()] * 2


async def test_reason_on_an_async_reasoner_works_inside_a_running_loop() -> None:
    assert reason(async_fn, "in loop") == Completion("async: in loop")


def test_reason_on_an_async_reasoner_works_from_a_thread_without_a_loop() -> None:
    results: list[Completion] = []
    thread = threading.Thread(target=lambda: results.append(reason(async_fn, "t")))
    thread.start()
    thread.join()
    assert results == [Completion("async: t")]


async def test_a_wrong_return_type_says_what_a_reasoner_returns() -> None:
    with pytest.raises(TypeError, match=r"returned a int; a reasoner returns the text \(str\)"):
        await areason(lambda prompt: 42, "p")


def test_something_not_callable_is_not_a_reasoner() -> None:
    with pytest.raises(TypeError, match="is not a reasoner"):
        reason("not callable", "p")


def test_usage_adds_up_and_unknown_stays_unknown_only_when_unknown_on_both_sides() -> None:
    total = Usage(input_tokens=3, output_tokens=None) + Usage(input_tokens=4, total_tokens=2)
    assert total == Usage(input_tokens=7, output_tokens=None, total_tokens=2)
