"""ToolAgent runs in the one run model: recorded with a run id, resumed without making a
finished model call or tool call again (after an exception, and after a real process died
on SQLite), paused by a tool that asks a person and resumed with the answer."""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from weft.agent import ToolAgent, ToolAgentResult
from weft.errors import AgentBuildError, AgentError
from weft.graph import Paused, interrupt
from weft.llm import AssistantMessage, ChatMessage, ScriptedChatModel, ToolCall
from weft.persist import DurableRun, SQLiteBackend
from weft.store import RunLog, RunRecord, StepRecord, Store

WORKER = Path(__file__).with_name("tool_agent_crash_worker.py")
call = ScriptedChatModel.tool_call


class Crash(BaseException):
    """Stands for the process dying: nothing in weft catches it."""


def two_calls(k: int) -> AssistantMessage:
    return AssistantMessage(
        tool_calls=(
            ToolCall.create("step", {"k": k}, id=f"s{k}"),
            ToolCall.create("note", {"k": k}, id=f"n{k}"),
        )
    )


class Job:
    """Three replies of two calls each, then an answer; every call counted, and the one
    named by ``crash`` raises ``Crash`` the first time."""

    def __init__(self, crash: tuple[str, int] | None = None) -> None:
        self.ran: Counter[tuple[str, int]] = Counter()
        self.crash = crash

    def fire(self, what: str, k: int) -> None:
        self.ran[(what, k)] += 1
        if self.crash == (what, k):
            self.crash = None
            raise Crash(f"{what} {k}")

    def script(self, messages: list[ChatMessage], tools: Any) -> AssistantMessage | str:
        k = sum(1 for m in messages if m.role == "assistant")
        self.fire("model", k)
        return two_calls(k) if k < 3 else "all done"

    def agent(self, store: Store) -> ToolAgent:
        def step(k: int) -> int:
            self.fire("step", k)
            return k * 10

        async def note(k: int) -> str:
            self.fire("note", k)
            return f"note {k}"

        return ToolAgent(ScriptedChatModel(self.script), tools=[step, note], store=store)


def result_of(value: object) -> ToolAgentResult:
    assert isinstance(value, ToolAgentResult), value
    return value


def test_a_run_with_a_run_id_records_every_model_call_and_tool_result() -> None:
    job, store = Job(), Store()
    result = result_of(job.agent(store).run("go", run_id="job-1"))
    assert result.run_id == "job-1"
    log = RunLog(store, "job-1")
    run = log.run()
    assert isinstance(run, RunRecord)
    assert (run.kind, run.status, run.units) == ("tool_agent", "completed", ("tool_agent",))
    assert run.output == {"answer": "all done", "stop_reason": "answered", "iterations": 4}
    records = log.recorded()
    assert sorted(records) == sorted(
        ["start"]
        + [f"iter/{n}/reply" for n in range(1, 5)]
        + [f"iter/{n}/tool/{k}" for n in range(1, 4) for k in (0, 1)]
    )
    reply = records["iter/1/reply"]
    assert reply.kind == "reply" and isinstance(reply.result["message"], AssistantMessage)
    action = records["iter/2/tool/0"]
    assert (action.kind, action.label) == ("action", "step")
    assert action.result == {"id": "s1", "content": "10", "is_error": False, "problem": None}


def test_a_run_without_a_run_id_records_nothing() -> None:
    job, store = Job(), Store()
    result_of(job.agent(store).run("go"))
    assert len(store) == 0


@pytest.mark.parametrize("crash", [("model", 2), ("step", 1), ("note", 2), ("step", 0)])
def test_a_resumed_run_makes_no_finished_call_again(crash: tuple[str, int]) -> None:
    clean = Job()
    expected = result_of(clean.agent(Store()).run("go", run_id="job"))

    job, store = Job(crash), Store()
    with pytest.raises(Crash):
        job.agent(store).run("go", run_id="job")
    result = result_of(job.agent(store).run(run_id="job"))  # the task is recorded

    assert result.messages == expected.messages
    assert (result.answer, result.iterations) == (expected.answer, expected.iterations)
    again = {key: n for key, n in job.ran.items() if n > 1}
    # the call that never finished is made again; so may be a call that ran beside it and
    # did not finish first (a crash interrupts it too); nothing else is
    what, k = crash
    beside = {("step", k), ("note", k)} if what != "model" else set()
    assert crash in again and set(again) <= {crash} | beside
    assert all(n == 2 for n in again.values())


def test_a_run_that_ended_calls_nothing_when_run_again() -> None:
    job, store = Job(), Store()
    first = result_of(job.agent(store).run("go", run_id="job"))
    made = sum(job.ran.values())
    second = result_of(job.agent(store).run("go", run_id="job"))
    assert sum(job.ran.values()) == made
    assert second == first


def test_a_run_stopped_by_a_limit_is_replayed_with_its_stop_reason() -> None:
    def add(a: int, b: int) -> int:
        return a + b

    store = Store()
    model = ScriptedChatModel(lambda messages, tools: call("add", {"a": 1, "b": 1}))
    agent = ToolAgent(model, tools=[add], store=store, max_iterations=2)
    first = result_of(agent.run("go", run_id="limited"))
    assert first.stop_reason == "max_iterations"
    second = result_of(agent.run(run_id="limited"))
    assert len(model.calls) == 2 and second == first


def test_resuming_with_another_task_is_refused() -> None:
    store = Store()
    job = Job(("step", 0))
    with pytest.raises(Crash):
        job.agent(store).run("go", run_id="job")
    with pytest.raises(AgentError, match="began with another task"):
        job.agent(store).run("something else", run_id="job")


def test_a_run_id_of_another_kind_of_run_is_refused() -> None:
    store = Store()
    RunLog(store, "job").begin("graph", ("a",))
    with pytest.raises(AgentError, match="was recorded for a graph"):
        Job().agent(store).run("go", run_id="job")


def test_answers_need_the_run_id_of_a_paused_run() -> None:
    agent = Job().agent(Store())
    with pytest.raises(AgentBuildError, match="pass them with its run_id"):
        agent.run("go", answers={"x": 1})
    with pytest.raises(AgentError, match="which never began"):
        agent.run("go", run_id="new", answers={"x": 1})


# -------------------------------------------------------------------- pauses


def test_a_tool_asks_a_person_and_the_run_goes_on_with_the_answer() -> None:
    sent: list[str] = []
    looked: list[str] = []

    def look_up(name: str) -> str:
        looked.append(name)
        return f"{name} is a customer"

    def send(text: str) -> str:
        verdict = interrupt({"send?": text})
        if verdict != "yes":
            return "not sent: the person said no"
        sent.append(text)
        return "sent"

    replies = [
        AssistantMessage(
            tool_calls=(
                ToolCall.create("send", {"text": "Hello Ada"}, id="a"),
                ToolCall.create("look_up", {"name": "Ada"}, id="b"),
            )
        ),
        "Sent the mail.",
    ]
    model = ScriptedChatModel(replies)
    store = Store()
    agent = ToolAgent(model, tools=[send, look_up], store=store)

    first = agent.run("Mail Ada", run_id="mail")
    assert isinstance(first, Paused)
    assert first.question == {"send?": "Hello Ada"}
    assert first.questions[0].id == "mail/iter/1/tool/0/pauses/0"
    assert RunLog(store, "mail").run().status == "paused"  # type: ignore[union-attr]
    assert looked == ["Ada"] and sent == []  # the other call of the reply finished

    again = agent.run(run_id="mail")  # no answer yet: it asks again
    assert isinstance(again, Paused) and again.question == {"send?": "Hello Ada"}

    result = result_of(agent.run(run_id="mail", answers=first.answer("yes")))
    assert (result.answer, result.stop_reason) == ("Sent the mail.", "answered")
    assert sent == ["Hello Ada"] and looked == ["Ada"]
    assert len(model.calls) == 2  # the first reply was recorded: the model was not asked again
    assert [m.content for m in result.messages if m.role == "tool"] == ["sent", "Ada is a customer"]


async def test_a_paused_async_run_resumes_from_another_agent_object() -> None:
    def approve(amount: int) -> str:
        return "approved" if interrupt(f"Pay {amount}?") else "refused"

    store = Store()
    first = ToolAgent(
        ScriptedChatModel([call("approve", {"amount": 5})]), tools=[approve], store=store
    )
    paused = await first.arun("pay", run_id="pay")
    assert isinstance(paused, Paused)
    # another process, say: the first reply is on record, so this model only answers
    resumed = ToolAgent(ScriptedChatModel(["done"]), tools=[approve], store=store)
    result = result_of(await resumed.arun(run_id="pay", answers=paused.answer(True)))
    assert [m.content for m in result.messages if m.role == "tool"] == ["approved"]
    assert result.answer == "done"
    assert len(resumed.model.calls) == 1  # type: ignore[attr-defined]


# ------------------------------------------------------ a real process dies


def test_a_process_that_dies_inside_a_tool_resumes_on_sqlite(tmp_path: Path) -> None:
    database, counter = tmp_path / "weft.db", tmp_path / "counter.txt"
    command = [sys.executable, str(WORKER), str(database), str(counter), "2"]
    first = subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)
    assert first.returncode == 3, first.stderr
    assert "done" not in first.stdout
    second = subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)
    assert second.returncode == 0, second.stderr
    summary = json.loads(second.stdout.split("done ", 1)[1])
    assert summary["answer"] == "done after 5"
    assert summary["iterations"] == 6 and summary["tool_calls"] == 10
    assert summary["results"][4:6] == ['{"step": 2}', "noted 2"]

    lines = [line.split(" ", 1) for line in counter.read_text().splitlines()]
    pids = list(dict.fromkeys(pid for pid, _ in lines))
    assert len(pids) == 2
    made = Counter(what for _, what in lines)
    assert all(made[f"model {n}"] == 1 for n in range(1, 7)), made  # no model call again
    assert made["step 2"] == 2  # the call the process died in is made again
    for k in (0, 1, 3, 4):
        assert made[f"step {k}"] == made[f"note {k}"] == 1, made
    assert made["note 2"] in (1, 2)  # it ran beside the crash: done or not, it is at least once
    second_process = [what for pid, what in lines if pid == pids[1]]
    before = second_process[: second_process.index("model 4")]
    assert "step 2" in before and set(before) <= {"step 2", "note 2"}  # unfinished calls first

    backend = SQLiteBackend(database)
    try:
        with DurableRun.open(backend, "thread-1") as run:
            log = RunLog(run.store, "job")
            assert log.run().status == "completed"  # type: ignore[union-attr]
            record = log.get("iter/3/tool/0")
            assert isinstance(record, StepRecord) and record.result["content"] == '{"step": 2}'
    finally:
        backend.close()
