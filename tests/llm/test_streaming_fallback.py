"""Any chat model streams: one without its own ``astream`` gives its whole reply as events."""

from __future__ import annotations

from weft.llm import (
    AssistantMessage,
    ChatMessage,
    MessageDone,
    ScriptedChatModel,
    TextDelta,
    Thinking,
    ThinkingDelta,
    ToolCall,
    ToolCallDelta,
    ToolCallStarted,
    astream,
)


async def test_a_reply_without_native_streaming_arrives_as_events_ending_in_the_message() -> None:
    call = ToolCall.create("memory_read", {"key": "shared:a"}, id="call_1")
    reply = AssistantMessage(content="looking", tool_calls=(call,))
    model = ScriptedChatModel([reply])
    events = [e async for e in astream(model, [ChatMessage.user("go")])]
    assert events == [
        TextDelta("looking"),
        ToolCallStarted(0, "call_1", "memory_read"),
        ToolCallDelta(0, '{"key": "shared:a"}'),
        MessageDone(events[-1].message),  # type: ignore[union-attr]
    ]
    assert isinstance(events[-1], MessageDone)
    assert events[-1].message.tool_calls == (call,)
    assert events[-1].message.content == "looking"


async def test_a_model_with_its_own_astream_is_streamed_by_it() -> None:
    class Native:
        async def astream(self, messages, *, tools=None, **options):  # type: ignore[no-untyped-def]
            yield TextDelta("a")
            yield TextDelta("b")
            yield MessageDone(AssistantMessage(content="ab"))

        async def achat(self, messages, *, tools=None, **options):  # type: ignore[no-untyped-def]
            raise AssertionError("a streaming model is not asked twice")

    events = [e async for e in astream(Native(), [ChatMessage.user("go")])]
    assert [type(e).__name__ for e in events] == ["TextDelta", "TextDelta", "MessageDone"]


async def test_a_whole_reply_replays_its_thinking_first() -> None:
    reply = AssistantMessage(
        content="4", thinking=(Thinking(text="2 + 2", signature="s"), Thinking(data="x"))
    )
    events = [e async for e in astream(ScriptedChatModel([reply]), [ChatMessage.user("?")])]
    assert events[:2] == [ThinkingDelta("2 + 2"), TextDelta("4")]
    assert isinstance(events[2], MessageDone)
