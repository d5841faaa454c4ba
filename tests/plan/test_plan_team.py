"""TeamExecutor: a shared board and message bus, results mirrored into memory."""

from __future__ import annotations

import contextlib
import json
import threading
from pathlib import Path

import pytest
from plan_helpers import call, tool_results

from weft.errors import ExecutorError
from weft.llm import ScriptedChatModel
from weft.memory import AgentMemory
from weft.persist import DurableRun, SQLiteBackend
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


def test_a_member_allowed_a_tool_the_team_was_not_given_is_refused_before_any_write() -> None:
    memory = AgentMemory()
    member = TeamMember(name="ann", model=ScriptedChatModel([]), tools=("search",))
    with pytest.raises(ExecutorError, match=r"ann: it may use the tools search.*it has: none"):
        TeamExecutor("Go.", members=[member], memory=memory, tasks=[BoardTask(id="t", title="T")])
    assert not memory.store.entries()


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
    board = TaskBoard(tasks=[BoardTask(id="t", title="T")])
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


def test_every_board_move_and_message_is_an_event_of_the_store() -> None:
    memory = AgentMemory()
    board = TaskBoard(memory.store, tasks=[BoardTask(id="t", title="T")])
    bus = MessageBus(memory.store)
    bus.register("ann")
    bus.register("bob")
    board.claim("t", "ann")
    bus.send("ann", "bob", "on it")
    board.complete("t", "ann", {"answer": 42})
    moves = [
        (e.source, (e.meta or {}).get("move"), e.value["status"])
        for e in memory.store.events()
        if e.path == "team/board/t"
    ]
    assert moves == [
        (None, "task_added", "open"),
        ("ann", "task_claimed", "claimed"),
        ("ann", "task_completed", "completed"),
    ]
    assert memory.store.value("state", "team/board/t")["result"] == {"answer": 42}
    assert memory.store.value("state", "team/bus") == [
        {"sender": "ann", "to": "bob", "content": "on it", "seq": 1}
    ]
    assert memory.list() == []  # the board is state, which memory and its tools never see


def test_a_refused_move_writes_nothing() -> None:
    board = TaskBoard(tasks=[BoardTask(id="t", title="T")])
    before = board.store.last_seq
    with pytest.raises(ExecutorError, match="is open; only the agent that claimed it"):
        board.complete("t", "ann", 1)
    with pytest.raises(ExecutorError, match="the board has no task 'x'; its tasks: t"):
        board.claim("x", "ann")
    assert board.store.last_seq == before


def test_views_over_one_store_share_the_board_and_its_events() -> None:
    first = TaskBoard(tasks=[BoardTask(id="t", title="T")])
    second = TaskBoard(first.store)
    heard: list[tuple[str, str | None]] = []
    first.on_event(lambda e: heard.append((e.type, e.agent)))
    second.claim("t", "ann")
    with pytest.raises(ExecutorError, match="is claimed by ann, not open"):
        first.claim("t", "bob")
    assert heard == [("task_claimed", "ann")]


def test_a_fork_of_the_store_has_its_own_board() -> None:
    board = TaskBoard(tasks=[BoardTask(id="a", title="A"), BoardTask(id="b", title="B")])
    board.claim("a", "ann")
    fork = TaskBoard(board.store.fork(name="what-if"))
    fork.complete("a", "ann", "done in the fork")
    fork.add("c", "C", agent="ann")
    assert [(t.id, t.status) for t in fork.list()] == [
        ("a", "completed"),
        ("b", "open"),
        ("c", "open"),
    ]
    assert [(t.id, t.status) for t in board.list()] == [("a", "claimed"), ("b", "open")]


def test_a_team_on_a_durable_store_continues_after_a_restart(tmp_path: Path) -> None:
    database = tmp_path / "team.db"
    tasks = [
        BoardTask(id="research", title="Research"),
        BoardTask(id="write", title="Write", depends_on=("research",)),
    ]
    lead = ScriptedChatModel(
        [
            call("board_claim", {"task_id": "research"}),
            call("board_complete", {"task_id": "research", "result": {"facts": ["f-9d1"]}}),
            call("send_message", {"to": "writer", "content": "research is on the board"}),
            "Done for now.",
        ]
    )
    writer = ScriptedChatModel(["Waiting for research."])
    backend = SQLiteBackend(database)
    run = DurableRun.open(backend, "team-1")
    first = TeamExecutor(
        "Write a report.",
        members=[TeamMember(name="writer", model=writer), TeamMember(name="lead", model=lead)],
        memory=AgentMemory(run.store),
        tasks=tasks,
        max_rounds=1,
    ).execute()
    assert first.stop_reason == "max_rounds" and first.unfinished == ("write",)
    fork = TaskBoard(run.store.fork())
    run.close()
    backend.close()
    del run, backend

    backend = SQLiteBackend(database)  # a fresh process would do exactly this
    run = DurableRun.open(backend, "team-1")
    memory = AgentMemory(run.store)
    board = TaskBoard(run.store)
    assert [(t.id, t.status, t.assignee) for t in board.list()] == [
        ("research", "completed", "lead"),
        ("write", "open", None),
    ]
    assert memory.get_value("task:research") == {"facts": ["f-9d1"]}
    assert [m.content for m in MessageBus(run.store).history] == ["research is on the board"]

    lead = ScriptedChatModel(["Nothing left for me."] * 3)
    writer = ScriptedChatModel(
        [
            call("board_claim", {"task_id": "write"}),
            call("board_complete", {"task_id": "write", "result": "report with f-9d1"}),
            "Report written.",
        ]
    )
    report = TeamExecutor(
        "Write a report.",
        members=[TeamMember(name="writer", model=writer), TeamMember(name="lead", model=lead)],
        memory=memory,
        tasks=tasks,  # given again: the board keeps what it holds
    ).execute()
    assert report.ok and report.completed == ("research", "write")
    assert "research is on the board" in (writer.calls[0].messages[-1].content or "")
    assert [m.content for m in report.messages] == ["research is on the board"]
    assert memory.get_value("task:write") == "report with f-9d1"
    run.close()
    backend.close()

    # the fork taken before the restart still has the board as it was then
    assert [(t.id, t.status) for t in fork.list()] == [("research", "completed"), ("write", "open")]


def test_one_claim_wins_when_threads_race_through_separate_views() -> None:
    store = TaskBoard(tasks=[BoardTask(id="t", title="T")]).store
    barrier = threading.Barrier(8)
    winners: list[str] = []

    def claim(agent: str) -> None:
        board = TaskBoard(store)
        barrier.wait()
        with contextlib.suppress(ExecutorError):
            board.claim("t", agent)
            winners.append(agent)

    threads = [threading.Thread(target=claim, args=(f"agent-{i}",)) for i in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(winners) == 1
    assert TaskBoard(store).get("t").assignee == winners[0]  # type: ignore[union-attr]
