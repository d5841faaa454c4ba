"""TeamExecutor: a shared board and message bus, results mirrored into memory."""

from __future__ import annotations

import json

import pytest
from plan_helpers import call, tool_results

from weft.errors import ExecutorError
from weft.llm import ScriptedChatModel
from weft.memory import AgentMemory
from weft.plan import BoardTask, MessageBus, TaskBoard, TeamExecutor, TeamMember


def team_of(
    lead: list[object], writer: list[object]
) -> tuple[ScriptedChatModel, ScriptedChatModel]:
    return ScriptedChatModel(lead), ScriptedChatModel(writer)  # type: ignore[arg-type]


def test_two_agents_share_a_board_and_read_each_other_through_memory() -> None:
    lead, writer = team_of(
        [
            call("board_claim", {"task_id": "research"}),
            call("board_complete", {"task_id": "research", "result": {"facts": ["f-9d1"]}}),
            "Research is done.",
            "Nothing left for me.",
        ],
        [
            call("board_claim", {"task_id": "write"}),  # refused: research is not done yet
            "Waiting for research.",
            call("memory_read", {"keys": ["task:research"]}),
            call("board_claim", {"task_id": "write"}),
            call("board_complete", {"task_id": "write", "result": "report with f-9d1"}),
            "Report written.",
        ],
    )
    memory = AgentMemory()
    executor = TeamExecutor(
        "Write a report.",
        # the writer's first turn starts first, so its early claim is refused
        members=[TeamMember(name="writer", model=writer), TeamMember(name="lead", model=lead)],
        memory=memory,
        tasks=[
            BoardTask(id="research", title="Research"),
            BoardTask(id="write", title="Write", depends_on=("research",)),
        ],
    )
    report = executor.execute()
    assert report.ok and report.stop_reason == "finished"
    assert report.completed == ("research", "write")
    assert memory.get_value("task:research") == {"facts": ["f-9d1"]}
    assert memory.get("task:research").source == "research"  # type: ignore[union-attr]
    assert memory.get_value("task:write") == "report with f-9d1"
    refusal = json.loads(tool_results(writer.calls[1])[0])
    assert refusal["ok"] is False and "waits for research" in refusal["error"]
    read = json.loads(tool_results(writer.calls[3])[-1])
    assert read["entries"]["task:research"]["value"] == {"facts": ["f-9d1"]}


def test_memory_tools_are_in_the_team_tool_set() -> None:
    model = ScriptedChatModel(["idle"])
    TeamExecutor("x", members=[TeamMember(name="solo", model=model)]).execute()
    names = model.calls[0].tool_names
    for tool in ("memory_list", "memory_read", "memory_write", "board_claim", "send_message"):
        assert tool in names
    assert "## Shared Memory (progressive disclosure)" in (model.calls[0].messages[0].content or "")


def test_a_round_where_nobody_acts_ends_the_run() -> None:
    model = ScriptedChatModel(["nothing to do"])
    report = TeamExecutor(
        "x", members=[TeamMember(name="solo", model=model)], max_rounds=50
    ).execute()
    assert report.stop_reason == "idle" and report.rounds == 1
    assert report.unfinished == ("objective",)
    assert not report.ok


def test_a_message_reaches_its_recipient_in_its_next_briefing() -> None:
    a = ScriptedChatModel([call("send_message", {"to": "b", "content": "hello b"}), "sent", "idle"])
    b = ScriptedChatModel(["first turn", "idle"])
    executor = TeamExecutor(
        "x", members=[TeamMember(name="a", model=a), TeamMember(name="b", model=b)]
    )
    report = executor.execute()
    briefings = [c.messages[-1].content or "" for c in b.calls]
    assert sum("hello b" in text for text in briefings) == 1  # delivered once
    assert [m.content for m in report.messages] == ["hello b"]


def test_the_board_refuses_finishing_a_task_someone_else_claimed() -> None:
    board = TaskBoard([BoardTask(id="t", title="T")])
    board.claim("t", "ann")
    with pytest.raises(ExecutorError, match="only the agent that claimed it"):
        board.complete("t", "bob", 1)


def test_board_events_are_heard_in_order() -> None:
    board = TaskBoard()
    heard: list[str] = []
    board.on_event(lambda e: heard.append(f"{e.type}:{e.task_id}"))
    board.add("t", "T")
    board.claim("t", "ann")
    board.complete("t", "ann", "r")
    assert heard == ["task_added:t", "task_claimed:t", "task_completed:t"]


def test_broadcast_reaches_everyone_but_the_sender() -> None:
    bus = MessageBus()
    for name in ("a", "b", "c"):
        bus.register(name)
    bus.send("a", "*", "hi all")
    assert [m.content for m in bus.receive("b")] == ["hi all"]
    assert bus.receive("a") == []
    assert bus.receive("b") == []  # read once


def test_a_message_to_a_stranger_is_refused() -> None:
    bus = MessageBus()
    bus.register("a")
    with pytest.raises(ExecutorError, match="no teammate is named 'zed'"):
        bus.send("a", "zed", "hi")
