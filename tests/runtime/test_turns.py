"""The seed's cases, on SQLite and PostgreSQL: history, lifecycles, views, ownership."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from runtime_helpers import (
    AgentInput,
    AgentOutput,
    ChatContext,
    ChatState,
    Make,
    ScoreState,
    TurnDiagnosticsState,
    reply,
    say,
    triage,
)

from weft.errors import ChannelOwnershipError, TurnError
from weft.graph import WorkGraph, WorkGraphNode
from weft.runtime import node
from weft.store import DELETE


async def test_three_turns_give_six_alternating_history_entries(make: Make, tid: str) -> None:
    runtime = make()
    for text in ("hello", "how are you", "bye"):
        await runtime.arun_turn(say(text, tid))
    history = runtime.thread_state(tid)["history"]
    assert [e["role"] for e in history] == ["user", "assistant"] * 3
    assert [e["content"] for e in history[::2]] == ["hello", "how are you", "bye"]
    assert history[5] == {"role": "assistant", "content": "reply 3 to bye"}


def test_the_sync_entry_point_runs_the_same_turn(make: Make, tid: str) -> None:
    runtime = make()
    first = runtime.run_turn(say("hello", tid))
    second = runtime.run_turn(say("again", tid))
    assert (first["response_text"], second["response_text"]) == (
        "reply 1 to hello",
        "reply 2 to again",
    )
    assert runtime.turns(tid) == 2


async def test_transcript_gets_the_same_pair_as_history(make: Make, tid: str) -> None:
    runtime = make()
    await runtime.arun_turn(say("hello", tid))
    state = runtime.thread_state(tid)
    assert state["transcript"] == state["history"]
    assert len(state["transcript"]) == 2


async def test_turn_scoped_fields_of_the_last_turn_are_gone_at_the_next(
    make: Make, tid: str
) -> None:
    runtime = make()
    first = await runtime.arun_turn(say("one", tid))
    second = await runtime.arun_turn(say("two", tid))
    assert first["scratchpad"] == "turn 1, scratchpad before: None"
    assert second["scratchpad"] == "turn 2, scratchpad before: None"  # not turn 1's value
    assert "scratchpad" not in runtime.thread_state(tid)
    assert "route" not in runtime.thread_state(tid)


async def test_turn_scoped_fields_never_reach_the_event_log(make: Make, tid: str) -> None:
    runtime = make()
    await runtime.arun_turn(say("one", tid))
    paths = {logged.event.path for logged in runtime.backend.history(tid)}
    assert {"route", "scratchpad", "response_text", "facts"}.isdisjoint(paths)
    assert {"history", "notes", "message"} <= paths


async def test_turn_scoped_fields_are_visible_for_the_whole_turn(make: Make, tid: str) -> None:
    seen: list[str] = []

    @node(writes=[])
    def last(state: Any) -> None:
        seen.append(state["route"])

    runtime = make(ChatState, [triage, reply, last])
    await runtime.arun_turn(say("one", tid))
    assert seen == ["chat"]


async def test_turn_scoped_defaults_are_reseeded_each_turn(make: Make, tid: str) -> None:
    @node(writes=["route"])
    def route_once(state: Any, context: Any) -> dict[str, Any] | None:
        return {"route": "first"} if context.turn == 1 else None

    @node(writes=["response_text"])
    def echo(state: Any) -> dict[str, Any]:
        return {"response_text": state["route"]}

    runtime = make(ChatState, [route_once, echo])
    assert (await runtime.arun_turn(say("a", tid)))["response_text"] == "first"
    assert (await runtime.arun_turn(say("b", tid)))["response_text"] == "none"


async def test_reducer_fields_accumulate_across_turns(make: Make, tid: str) -> None:
    runtime = make()
    for text in ("a", "b", "c"):
        await runtime.arun_turn(say(text, tid))
    state = runtime.thread_state(tid)
    assert state["notes"] == ["note 1", "note 2", "note 3"]
    assert state["session_progress"] == {"turn_count": 3, "last_route": "chat"}


async def test_a_nested_field_keeps_its_own_reducer_at_its_own_path(make: Make, tid: str) -> None:
    runtime = make()
    await runtime.arun_turn(say("a", tid))
    await runtime.arun_turn(say("b", tid))
    writes = [
        e.event for e in runtime.backend.history(tid) if e.event.path.startswith("session_progress")
    ]
    assert {(e.path, e.reducer) for e in writes} == {
        ("session_progress.turn_count", "operator.add"),
        ("session_progress.last_route", "replace"),
    }
    assert [e.value for e in writes if e.path.endswith("turn_count")] == [1, 1]


async def test_a_history_append_logs_only_the_new_entries(make: Make, tid: str) -> None:
    runtime = make()
    for text in ("a", "b", "c"):
        await runtime.arun_turn(say(text, tid))
    appends = [e.event.value for e in runtime.backend.history(tid) if e.event.path == "history"]
    assert [len(v) for v in appends] == [2, 2, 2]


async def test_loaded_fields_are_refetched_each_turn(make: Make, tid: str) -> None:
    facts = ["likes tea"]

    @node(writes=["response_text"])
    def show(state: Any) -> dict[str, Any]:
        return {"response_text": "; ".join(state["facts"])}

    runtime = make(ChatState, [show], context=ChatContext(facts=facts))
    assert (await runtime.arun_turn(say("a", tid)))["response_text"] == "likes tea (for a)"
    facts.append("has a dog")
    second = await runtime.arun_turn(say("b", tid))
    assert second["response_text"] == "likes tea (for b); has a dog (for b)"
    assert "facts" not in runtime.thread_state(tid)


async def test_a_loaded_field_given_in_the_input_replaces_its_loader(make: Make, tid: str) -> None:
    @node(writes=["response_text"])
    def show(state: Any) -> dict[str, Any]:
        return {"response_text": ",".join(state["facts"])}

    runtime = make(ChatState, [show])
    out = await runtime.arun_turn(say("a", tid, facts=["given"]))
    assert out["response_text"] == "given"


async def test_the_output_view_has_exactly_the_output_fields(make: Make, tid: str) -> None:
    runtime = make(output_model=AgentOutput, input_model=AgentInput)
    out = await runtime.arun_turn(AgentInput(message="hi", session_id=tid))
    assert isinstance(out, AgentOutput)
    assert set(out.model_dump()) == {"response_text", "route", "diagnostics"}
    assert (out.response_text, out.route) == ("reply 1 to hi", "chat")


async def test_the_default_output_is_the_turn_scoped_fields_and_diagnostics(
    make: Make, tid: str
) -> None:
    out = await make().arun_turn(say("hi", tid))
    assert set(out) == {"route", "scratchpad", "response_text", "diagnostics"}


async def test_a_merge_reducer_deletes_a_stale_diagnostics_key(make: Make, tid: str) -> None:
    @node(writes=["diagnostics", "response_text"])
    def gate(state: Any, context: Any) -> dict[str, Any]:
        if context.turn == 1:
            return {"diagnostics": {"crisis_gate_ms": 1.5, "retrieval_path": "token_recall"}}
        return {"diagnostics": {"retrieval_path": DELETE}, "response_text": "ok"}

    runtime = make(ChatState, [gate])
    first = await runtime.arun_turn(say("a", tid))
    assert first["diagnostics"]["retrieval_path"] == "token_recall"
    second = await runtime.arun_turn(say("b", tid))
    assert "retrieval_path" not in second["diagnostics"]
    assert second["diagnostics"]["crisis_gate_ms"] == 1.5
    assert "retrieval_path" not in runtime.thread_state(tid)["diagnostics"]


async def test_the_runtime_stamps_each_stage_and_the_turn_total(make: Make, tid: str) -> None:
    out = await make().arun_turn(say("a", tid))
    diagnostics = out["diagnostics"]
    assert diagnostics["turn"] == 1
    assert diagnostics["turn_total_ms"] > 0
    assert set(diagnostics["stage_ms"]) == {"load", "loaders", "graph"}
    assert set(diagnostics["node_ms"]) == {"triage", "reply"}
    assert set(diagnostics["loaded"]) == {"facts"}
    assert diagnostics["triage_path"] == "rules"


async def test_a_write_to_an_undeclared_field_names_the_node_and_the_field(
    make: Make, tid: str
) -> None:
    @node(writes=["response_text"])
    def sneaky(state: Any) -> dict[str, Any]:
        return {"response_text": "hi", "route": "elsewhere"}

    runtime = make(ChatState, [sneaky])
    with pytest.raises(ChannelOwnershipError, match="'sneaky' wrote 'route'") as caught:
        await runtime.arun_turn(say("a", tid))
    assert (caught.value.writer, caught.value.field) == ("sneaky", "route")


async def test_a_delta_with_an_unknown_field_names_the_node_and_the_field(
    make: Make, tid: str
) -> None:
    @node(writes=["response_text"])
    def typo(state: Any) -> dict[str, Any]:
        return {"respone_text": "hi"}

    runtime = make(ChatState, [typo])
    with pytest.raises(
        ChannelOwnershipError, match=r"'typo' wrote 'respone_text'.*'response_text'"
    ):
        await runtime.arun_turn(say("a", tid))


async def test_nothing_of_a_turn_with_an_ownership_error_is_stored(make: Make, tid: str) -> None:
    @node(writes=["response_text", "notes"])
    def bad(state: Any) -> dict[str, Any]:
        if state["message"] == "b":
            return {"notes": ["two"], "route": "x"}
        return {"notes": ["one"], "response_text": "ok"}

    runtime = make(ChatState, [bad])
    await runtime.arun_turn(say("a", tid))
    steps = runtime.backend.last_step(tid)
    with pytest.raises(ChannelOwnershipError):
        await runtime.arun_turn(say("b", tid))
    assert runtime.backend.last_step(tid) == steps
    assert runtime.thread_state(tid)["notes"] == ["one"]
    assert len(runtime.thread_state(tid)["history"]) == 2
    out = await runtime.arun_turn(say("c", tid))
    assert (out["diagnostics"]["turn"], runtime.turns(tid)) == (2, 2)


async def test_history_is_appended_once_even_when_a_node_retries(make: Make, tid: str) -> None:
    calls: list[int] = []

    @node(writes=["response_text"], retry=3)
    def flaky(state: Any) -> dict[str, Any]:
        calls.append(1)
        if len(calls) % 2:
            raise ConnectionError("the model timed out")
        return {"response_text": "finally"}

    runtime = make(ChatState, [flaky])
    await runtime.arun_turn(say("a", tid))
    await runtime.arun_turn(say("b", tid))
    assert len(calls) == 4
    assert [e["content"] for e in runtime.thread_state(tid)["history"]] == [
        "a",
        "finally",
        "b",
        "finally",
    ]


async def test_parallel_nodes_merge_by_reducers_in_graph_order(make: Make, tid: str) -> None:
    @node(writes=["notes"])
    async def slow(state: Any) -> dict[str, Any]:
        await asyncio.sleep(0.02)
        return {"notes": ["slow"]}

    @node(writes=["notes"])
    async def fast(state: Any) -> dict[str, Any]:
        return {"notes": ["fast"]}

    @node(writes=["response_text"])
    def join(state: Any) -> dict[str, Any]:
        return {"response_text": ",".join(state["notes"])}

    a, b, c = WorkGraphNode(slow), WorkGraphNode(fast), WorkGraphNode(join)
    a.add_next(c)
    b.add_next(c)
    runtime = make(ChatState, WorkGraph(start_nodes=[a, b]))
    out = await runtime.arun_turn(say("x", tid))
    assert out["response_text"] == "slow,fast"


async def test_a_node_failure_stores_nothing_and_raises_the_node_error(
    make: Make, tid: str
) -> None:
    @node(writes=["response_text"])
    def broken(state: Any) -> dict[str, Any]:
        raise ValueError("no reply")

    runtime = make(ChatState, [broken])
    with pytest.raises(Exception, match="no reply"):
        await runtime.arun_turn(say("a", tid))
    assert runtime.backend.last_step(tid) == 0
    assert runtime.turns(tid) == 0


async def test_an_input_missing_a_required_field_is_refused_before_the_turn(
    make: Make, tid: str
) -> None:
    runtime = make()
    with pytest.raises(TurnError, match="'message' is required"):
        await runtime.arun_turn({"session_id": tid})
    assert runtime.backend.last_step(tid) == 0


async def test_the_context_carries_the_thread_turn_and_owner(make: Make, tid: str) -> None:
    seen: list[tuple[Any, ...]] = []

    @node(writes=[])
    def look(state: Any, context: ChatContext) -> None:
        assert context.owner is not None
        seen.append((context.thread_id, context.turn, context.owner.key, context.facts))

    runtime = make(ChatState, [look])
    await runtime.arun_turn(say("a", tid, user_id="ada"))
    await runtime.arun_turn(say("b", tid))
    assert seen == [
        (tid, 1, "user:ada", ["likes tea"]),
        (tid, 2, f"session:{tid}", ["likes tea"]),
    ]


async def test_a_restarted_runtime_continues_the_thread(make: Make, tid: str) -> None:
    first = make()
    for text in ("a", "b", "c"):
        await first.arun_turn(say(text, tid))
    first.close()
    second = make()
    out = await second.arun_turn(say("d", tid))
    assert out["response_text"] == "reply 4 to d"
    state = second.thread_state(tid)
    assert len(state["history"]) == 8
    assert state["session_progress"]["turn_count"] == 4
    assert state["notes"] == ["note 1", "note 2", "note 3", "note 4"]


async def test_a_runtime_sees_turns_another_runtime_stored_meanwhile(make: Make, tid: str) -> None:
    one, two = make(), make()
    await one.arun_turn(say("a", tid))
    await two.arun_turn(say("b", tid))
    out = await one.arun_turn(say("c", tid))
    assert out["response_text"] == "reply 3 to c"
    assert len(one.thread_state(tid)["history"]) == 6


async def test_thread_state_reads_the_thread_as_it_was_after_a_turn(make: Make, tid: str) -> None:
    runtime = make()
    for text in ("a", "b", "c"):
        await runtime.arun_turn(say(text, tid))
    assert runtime.thread_state(tid, turn=1)["notes"] == ["note 1"]
    assert len(runtime.thread_state(tid, turn=2)["history"]) == 4


async def test_an_input_left_out_reads_its_default_not_an_earlier_turns(
    make: Make, tid: str
) -> None:
    seen: list[Any] = []

    @node(writes=[])
    def look(state: Any) -> None:
        seen.append(state["user_id"])

    runtime = make(ChatState, [look])
    await runtime.arun_turn(say("a", tid, user_id="ada"))
    await runtime.arun_turn(say("b", tid))
    assert seen == ["ada", None]


async def test_a_turn_scoped_field_that_folds_starts_from_its_default_each_turn(
    make: Make, tid: str
) -> None:
    @node(writes=["score"])
    def one(state: Any) -> dict[str, Any]:
        return {"score": 2}

    @node(writes=["score", "response_text"])
    def two(state: Any) -> dict[str, Any]:
        return {"score": 3, "response_text": str(state["score"])}

    runtime = make(ScoreState, [one, two], output_model=["score", "response_text"])
    for _ in range(3):
        assert await runtime.arun_turn(say("a", tid)) == {"score": 5, "response_text": "2"}
    paths = {logged.event.path for logged in runtime.backend.history(tid)}
    assert "score" not in paths


async def test_parallel_nodes_taking_the_context_merge_in_graph_order(make: Make, tid: str) -> None:
    @node(writes=["notes"])
    async def slow(state: Any, context: ChatContext) -> dict[str, Any]:
        await asyncio.sleep(0.02)
        return {"notes": [f"slow {context.turn}"]}

    @node(writes=["notes"])
    def fast(state: Any, context: ChatContext) -> dict[str, Any]:
        return {"notes": [f"fast {context.turn}"]}

    @node(writes=["response_text"])
    def join(state: Any, context: ChatContext) -> dict[str, Any]:
        return {"response_text": ",".join(state["notes"])}

    a, b, c = WorkGraphNode(slow), WorkGraphNode(fast), WorkGraphNode(join)
    a.add_next(c)
    b.add_next(c)
    runtime = make(ChatState, WorkGraph(start_nodes=[a, b]))
    out = await runtime.arun_turn(say("x", tid))
    assert out["response_text"] == "slow 1,fast 1"


async def test_a_turn_scoped_diagnostics_field_gets_the_runtimes_stamp(
    make: Make, tid: str
) -> None:
    runtime = make(TurnDiagnosticsState, [node(writes=[])(lambda state: None)])
    for turn in (1, 2):
        out = await runtime.arun_turn(say("a", tid))
        assert out["diagnostics"]["turn"] == turn
        assert set(out["diagnostics"]["stage_ms"]) == {"load", "loaders", "graph"}
    assert "diagnostics" not in runtime.thread_state(tid)
