"""ToolAgent.astream: the events of a run as they happen (the model's deltas, tool results
as each call finishes, iteration boundaries), and the result last."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence
from typing import Any

from weft.agent import (
    IterationFinished,
    IterationStarted,
    RunFinished,
    ToolAgent,
    ToolAgentResult,
    ToolCallFinished,
)
from weft.graph import Paused, interrupt
from weft.llm import (
    AssistantMessage,
    ChatMessage,
    ChatModelBase,
    MessageDone,
    ScriptedChatModel,
    TextDelta,
    ToolCall,
    ToolCallDelta,
    ToolCallStarted,
)
from weft.llm.tools import ToolLike
from weft.store import Store

call = ScriptedChatModel.tool_call


def add(a: int, b: int) -> int:
    return a + b


async def collect(events: AsyncIterator[Any]) -> list[Any]:
    return [event async for event in events]


async def test_the_events_of_a_run_come_in_order_and_end_with_the_result() -> None:
    model = ScriptedChatModel([call("add", {"a": 2, "b": 3}, id="c1"), "It is 5."])
    events = await collect(ToolAgent(model, tools=[add]).astream("2 + 3?"))
    kinds = [type(e).__name__ for e in events]
    assert kinds == [
        "IterationStarted",
        "ToolCallStarted",
        "ToolCallDelta",
        "MessageDone",
        "ToolCallFinished",
        "IterationFinished",
        "IterationStarted",
        "TextDelta",
        "MessageDone",
        "RunFinished",
    ]
    assert events[0] == IterationStarted(1, False)
    assert events[1] == ToolCallStarted(0, "c1", "add")
    assert events[2] == ToolCallDelta(0, '{"a": 2, "b": 3}')
    assert events[4] == ToolCallFinished(1, 0, "c1", "add", "5", False)
    assert events[5] == IterationFinished(1, None)
    assert events[7] == TextDelta("It is 5.")
    result = events[-1].result
    assert isinstance(result, ToolAgentResult) and result.answer == "It is 5."


class Typing(ChatModelBase):
    """A model that streams its answer in pieces, waiting for a go-ahead between them."""

    def __init__(self) -> None:
        self.go = asyncio.Event()

    async def astream(
        self,
        messages: Sequence[ChatMessage | AssistantMessage],
        *,
        tools: Sequence[ToolLike] | None = None,
        **options: Any,
    ) -> AsyncIterator[Any]:
        yield TextDelta("Hel")
        await asyncio.wait_for(self.go.wait(), 5)  # the caller saw "Hel" before this
        yield TextDelta("lo")
        yield MessageDone(AssistantMessage(content="Hello"))

    async def achat(self, *args: Any, **kwargs: Any) -> AssistantMessage:
        raise AssertionError("a streaming run asks astream")


async def test_text_deltas_reach_the_caller_while_the_model_still_writes() -> None:
    model = Typing()
    seen: list[Any] = []
    async for event in ToolAgent(model).astream("hi"):
        seen.append(event)
        if event == TextDelta("Hel"):
            model.go.set()
    assert [e for e in seen if isinstance(e, TextDelta)] == [TextDelta("Hel"), TextDelta("lo")]
    assert seen[-1].result.answer == "Hello"


async def test_each_tool_result_is_told_as_soon_as_its_call_finishes() -> None:
    release = asyncio.Event()

    async def fast() -> str:
        return "fast"

    async def slow() -> str:
        await asyncio.wait_for(release.wait(), 5)  # only once the caller saw fast's result
        return "slow"

    reply = AssistantMessage(
        tool_calls=(ToolCall.create("slow", {}, id="s"), ToolCall.create("fast", {}, id="f"))
    )
    agent = ToolAgent(ScriptedChatModel([reply, "both done"]), tools=[fast, slow])
    finished: list[str] = []
    async for event in agent.astream("go"):
        if isinstance(event, ToolCallFinished):
            finished.append(event.name)
            release.set()
        if isinstance(event, RunFinished):
            result = event.result
    assert finished == ["fast", "slow"]
    assert isinstance(result, ToolAgentResult)
    assert [m.content for m in result.messages if m.role == "tool"] == ["slow", "fast"]


async def test_a_pause_ends_the_stream_with_paused_and_a_resume_replays_the_record() -> None:
    def confirm() -> str:
        return "yes" if interrupt("Go ahead?") else "no"

    store = Store()
    model = ScriptedChatModel([call("confirm", id="c"), "confirmed"])
    agent = ToolAgent(model, tools=[confirm], store=store)
    first = await collect(agent.astream("go", run_id="r"))
    paused = first[-1].result
    assert isinstance(paused, Paused) and paused.question == "Go ahead?"
    assert not any(isinstance(e, ToolCallFinished) for e in first)

    second = await collect(agent.astream(run_id="r", answers=paused.answer(True)))
    assert [type(e).__name__ for e in second[:4]] == [
        "IterationStarted",
        "ToolCallStarted",
        "ToolCallDelta",
        "MessageDone",  # the recorded reply, replayed: the model is not asked again
    ]
    assert ToolCallFinished(1, 0, "c", "confirm", "yes", False) in second
    assert second[-1].result.answer == "confirmed"
    assert len(model.calls) == 2


async def test_a_caller_that_stops_listening_leaves_no_tool_running() -> None:
    cancelled = asyncio.Event()

    async def fast() -> str:
        return "fast"

    async def slow() -> str:
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            cancelled.set()
            raise
        return "never"

    reply = AssistantMessage(
        tool_calls=(ToolCall.create("slow", {}, id="s"), ToolCall.create("fast", {}, id="f"))
    )
    stream = ToolAgent(ScriptedChatModel([reply]), tools=[fast, slow]).astream("go")
    async for event in stream:
        if isinstance(event, ToolCallFinished):  # fast is done, slow still runs
            break
    await stream.aclose()  # type: ignore[attr-defined]
    await asyncio.sleep(0)
    assert cancelled.is_set()
