"""Following a turn: stage events while it runs, then the result."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import pytest
from runtime_helpers import ChatState, Make, say, triage

from weft.errors import NodeError
from weft.runtime import StageEvent, TurnResult, node


async def test_a_streamed_turn_yields_each_stage_then_the_result(make: Make, tid: str) -> None:
    runtime = make()
    items = [item async for item in runtime.astream_turn(say("hi", tid))]
    events, result = items[:-1], items[-1]
    assert all(isinstance(e, StageEvent) for e in events)
    assert [(e.label, e.phase) for e in events] == [
        ("load", "started"),
        ("load", "finished"),
        ("loaders", "started"),
        ("loaders", "finished"),
        ("graph", "started"),
        ("triage", "started"),
        ("triage", "finished"),
        ("reply", "started"),
        ("reply", "finished"),
        ("graph", "finished"),
        ("finalise", "started"),
        ("finalise", "finished"),
        ("persist", "started"),
        ("persist", "finished"),
    ]
    assert {e.kind for e in events if e.label in ("triage", "reply")} == {"node"}
    assert all(e.thread_id == tid for e in events)
    assert isinstance(result, TurnResult)
    assert (result.turn, result.output["response_text"]) == (1, "reply 1 to hi")


async def test_a_node_event_arrives_while_the_turn_still_runs(make: Make, tid: str) -> None:
    release = asyncio.Event()

    @node(writes=["response_text"])
    async def waits(state: Any) -> dict[str, Any]:
        await release.wait()
        return {"response_text": "done"}

    runtime = make(ChatState, [triage, waits])
    stream = runtime.astream_turn(say("hi", tid))
    async for item in stream:
        if isinstance(item, StageEvent) and (item.label, item.phase) == ("waits", "started"):
            break
    assert runtime.turns(tid) == 0  # the turn is still running
    release.set()
    rest = [item async for item in stream]
    assert isinstance(rest[-1], TurnResult)
    assert runtime.turns(tid) == 1


async def test_on_event_gets_the_same_events(make: Make, tid: str) -> None:
    seen: list[StageEvent] = []
    await make().arun_turn(say("hi", tid), on_event=seen.append)
    assert [e.label for e in seen if e.phase == "finished"] == [
        "load",
        "loaders",
        "triage",
        "reply",
        "graph",
        "finalise",
        "persist",
    ]
    finished = [e for e in seen if e.phase == "finished"]
    assert all(e.elapsed_ms >= 0 and e.at_ms >= 0 for e in finished)


def test_on_event_works_with_the_sync_entry_point(make: Make, tid: str) -> None:
    seen: list[StageEvent] = []
    make().run_turn(say("hi", tid), on_event=seen.append)
    assert ("persist", "finished") in [(e.label, e.phase) for e in seen]


async def test_leaving_the_stream_early_cancels_the_turn_and_stores_nothing(
    make: Make, tid: str
) -> None:
    @node(writes=["response_text"])
    async def slow(state: Any) -> dict[str, Any]:
        await asyncio.sleep(10)
        return {"response_text": "never"}

    runtime = make(ChatState, [slow])
    stream = runtime.astream_turn(say("hi", tid))
    async for item in stream:
        if isinstance(item, StageEvent) and item.label == "slow":
            break
    await stream.aclose()
    assert runtime.turns(tid) == 0
    assert runtime.backend.last_step(tid) == 0


async def test_a_failing_node_is_reported_then_raised(make: Make, tid: str) -> None:
    @node(writes=["response_text"])
    def broken(state: Any) -> dict[str, Any]:
        raise RuntimeError("model down")

    runtime = make(ChatState, [broken])
    seen: list[tuple[str, str]] = []

    async def follow() -> None:
        async for item in runtime.astream_turn(say("hi", tid)):
            assert isinstance(item, StageEvent)
            seen.append((item.label, item.phase))

    with pytest.raises(NodeError, match="model down"):
        await follow()
    assert ("broken", "failed") in seen
    assert ("graph", "failed") in seen


async def test_a_listener_that_raises_does_not_break_the_turn(
    make: Make, tid: str, caplog: pytest.LogCaptureFixture
) -> None:
    def bad_listener(event: StageEvent) -> None:
        raise ValueError("ui gone")

    with caplog.at_level(logging.ERROR, logger="weft.runtime"):
        out = await make().arun_turn(say("hi", tid), on_event=bad_listener)
    assert out["response_text"] == "reply 1 to hi"
    assert "event listener raised" in caplog.text
