"""Runs that pause to ask a person, and go on in a new process when the answer comes: a
graph node (two parallel branches asking independently), a call of a plan, an agent's
action, a tool of an executor's step and a node of a turn, on SQLite and PostgreSQL."""

from __future__ import annotations

import json
import subprocess
import sys
import uuid
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from weft.errors import AgentBuildError, GraphError, PauseError, TurnError
from weft.graph import (
    Paused,
    ResultPassDownMode,
    RetryPolicy,
    WorkGraph,
    WorkGraphNode,
    interrupt,
)
from weft.store import Pause, RunLog, Store

WORKER = Path(__file__).with_name("pause_worker.py")
PG = "postgresql://postgres@127.0.0.1:5432/weft_test"
FIRST = ResultPassDownMode.ResultAsFirstArg


@pytest.fixture(params=["sqlite", "postgres"])
def spec(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    if request.param == "sqlite":
        yield f"sqlite:{tmp_path / 'pauses.db'}"
        return
    import psycopg

    schema = f"p_{uuid.uuid4().hex[:12]}"
    yield f"postgres:{schema}"
    with psycopg.connect(PG, autocommit=True) as conn:
        conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


class Worker:
    """Runs ``pause_worker.py`` in a new process each time, like a restart."""

    def __init__(self, spec: str, kind: str, tmp_path: Path) -> None:
        self.spec, self.kind = spec, kind
        self.counter = tmp_path / f"{kind}.effects"

    def __call__(self, answers: dict[str, Any] | None = None) -> dict[str, Any]:
        argv = [sys.executable, str(WORKER), self.spec, self.kind, str(self.counter)]
        argv += ["ask"] if answers is None else ["answer", json.dumps(answers)]
        done = subprocess.run(argv, capture_output=True, text=True, timeout=120, check=False)
        assert done.returncode == 0, done.stderr
        out: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
        return out

    def effects(self) -> Counter[str]:
        return Counter(self.counter.read_text().split("\n")[:-1])


def questions(out: dict[str, Any]) -> dict[str, Any]:
    assert "paused" in out, out
    return dict(out["paused"])


def test_graph_branches_ask_and_are_answered_independently(spec: str, tmp_path: Path) -> None:
    worker = Worker(spec, "graph", tmp_path)
    asked = questions(worker())
    assert asked == {
        "job-graph/A#1/pauses/0": {"reviewer": "A", "draft": 2},
        "job-graph/B#2/pauses/0": {"reviewer": "B", "draft": 2},
    }
    again = questions(worker({"job-graph/A#1/pauses/0": "ok"}))  # B still waits
    assert again == {"job-graph/B#2/pauses/0": {"reviewer": "B", "draft": 2}}
    assert worker({"job-graph/B#2/pauses/0": "no"}) == {"result": ["A:ok", "B:no"]}
    # prepare ran once; each review ran once to ask, once more with its answer (and B
    # once more while only A was answered); publish once
    assert worker.effects() == Counter({"prepare": 1, "review A": 2, "review B": 3, "publish": 1})


@pytest.mark.parametrize(
    ("kind", "question", "answer", "result", "effects"),
    [
        (
            "plan",
            {"publish": "DRAFT"},
            True,
            {"approved": True},
            {"fetch": 1, "approve": 2},
        ),
        (
            "agent",
            {"wire": 50},
            True,
            {"instant_response": "sent", "action_results": {"wired": True}},
            {"wire": 2, "wired": 1},
        ),
        ("executor", {"send to": "bob"}, "yes", "mailed", {"send": 2}),
    ],
)
def test_a_unit_pauses_and_resumes_in_a_new_process(
    spec: str,
    tmp_path: Path,
    kind: str,
    question: Any,
    answer: Any,
    result: Any,
    effects: dict[str, int],
) -> None:
    worker = Worker(spec, kind, tmp_path)
    asked = questions(worker())
    assert list(asked.values()) == [question]
    (qid,) = asked
    assert worker({qid: answer}) == {"result": result}
    assert worker.effects() == Counter(effects)


def test_a_turn_pauses_stores_nothing_else_and_resumes_with_its_input(
    spec: str, tmp_path: Path
) -> None:
    worker = Worker(spec, "turn", tmp_path)
    asked = questions(worker())
    assert asked == {"turn-2/turn/pauses/0": {"confirm": "delete everything"}}
    done = worker({"turn-2/turn/pauses/0": True})
    assert done["result"]["out"] == {"response_text": "deleted=True"}
    assert done["result"]["turns"] == 2
    contents = [entry["content"] for entry in done["result"]["history"]]
    assert contents == ["hi", "turn 1: hi", "delete everything", "deleted=True"]
    assert worker.effects() == Counter({"reply": 3})


# ------------------------------------------------------------- in one process


def asking_graph(calls: Counter[str], *, retry: RetryPolicy | None = None) -> WorkGraph:
    def ask(x: int) -> Any:
        calls["ask"] += 1
        first = interrupt("first?")
        try:  # a unit's own `except Exception` does not swallow a pause
            second = interrupt("second?")
        except Exception:  # pragma: no cover - the point of the test
            second = "swallowed"
        return [x, first, second]

    node = WorkGraphNode(ask, id="ask", retry=retry)
    return WorkGraph(start_nodes=[node])


def test_a_unit_pauses_at_each_point_in_order() -> None:
    calls: Counter[str] = Counter()
    graph, store = asking_graph(calls), Store()
    paused = graph.run(1, run_id="r", store=store)
    assert isinstance(paused, Paused)
    assert paused.question == "first?"
    paused = graph.run(1, run_id="r", store=store, answers=paused.answer("a"))
    assert isinstance(paused, Paused) and paused.question == "second?"
    assert graph.run(1, run_id="r", store=store, answers=paused.answer("b")) == [1, "a", "b"]
    assert calls["ask"] == 3
    record = RunLog(store, "r").run()
    assert record is not None and record.status == "completed"
    stored = store.value("step", "r/ask#0/pauses/0")
    assert isinstance(stored, Pause) and stored.answered and stored.answer == "a"


def test_retries_do_not_retry_a_pause() -> None:
    calls: Counter[str] = Counter()
    graph = asking_graph(calls, retry=RetryPolicy(attempts=3, retry_on=(BaseException,)))
    assert isinstance(graph.run(1, run_id="r", store=Store()), Paused)
    assert calls["ask"] == 1


def test_a_paused_run_is_marked_paused_and_running_again_asks_again() -> None:
    calls: Counter[str] = Counter()
    graph, store = asking_graph(calls), Store()
    first = graph.run(1, run_id="r", store=store)
    record = RunLog(store, "r").run()
    assert record is not None and record.status == "paused"
    again = graph.run(1, run_id="r", store=store)  # no answer: the same question
    assert again == first


async def test_an_async_node_pauses_too() -> None:
    async def ask(x: int) -> Any:
        return [x, interrupt("go?")]

    graph, store = WorkGraph(start_nodes=[WorkGraphNode(ask, id="ask")]), Store()
    paused = await graph.arun(1, run_id="r", store=store)
    assert isinstance(paused, Paused)
    assert await graph.arun(1, run_id="r", store=store, answers=paused.answer("y")) == [1, "y"]


def test_interrupt_outside_a_recorded_run_is_a_clear_error() -> None:
    with pytest.raises(PauseError, match="outside a unit of a recorded run"):
        interrupt("hello?")
    graph = WorkGraph(start_nodes=[WorkGraphNode(lambda: interrupt("?"), id="n")])
    with pytest.raises(GraphError, match="run_id"):
        graph.run()  # no run id: nothing could resume it


def test_a_question_that_cannot_be_stored_fails_its_node_clearly() -> None:
    graph = WorkGraph(start_nodes=[WorkGraphNode(lambda: interrupt(object()), id="n")])
    with pytest.raises(GraphError, match="question cannot be stored"):
        graph.run(run_id="r", store=Store())


def test_answers_must_name_a_question_waiting() -> None:
    calls: Counter[str] = Counter()
    graph, store = asking_graph(calls), Store()
    paused = graph.run(1, run_id="r", store=store)
    with pytest.raises(PauseError, match=r"no question waits.*'r/ask#0/pauses/0'"):
        graph.run(1, run_id="r", store=store, answers={"r/nope/pauses/0": 1})
    with pytest.raises(PauseError, match="non-empty dict"):
        graph.run(1, run_id="r", store=store, answers=["yes"])  # type: ignore[arg-type]
    with pytest.raises(PauseError, match="run_id"):
        graph.run(1, store=store, answers=paused.answer("x"))
    with pytest.raises(PauseError, match="cannot be stored"):
        graph.run(1, run_id="r", store=store, answers=paused.answer(object()))
    assert calls["ask"] == 1  # nothing ran for a refused answer
    with pytest.raises(PauseError, match="waits for 2 answers"):
        _ = Paused("r", (*paused.questions, *paused.questions)).question


def test_an_agent_without_a_run_id_refuses_answers() -> None:
    from weft.agent import Agent

    with pytest.raises(AgentBuildError, match="run_id"):
        Agent(lambda _p: "{}").run("x", answers={"a": 1})


def test_a_turn_refuses_answers_with_an_input_or_for_no_paused_turn(tmp_path: Path) -> None:
    from pause_worker import State, reply

    from weft.persist import InMemoryBackend
    from weft.runtime import TurnRuntime

    with TurnRuntime(State, [reply], InMemoryBackend()) as runtime:
        with pytest.raises(TurnError, match="no input"):
            runtime.run_turn({"message": "x", "session_id": "c"}, answers={"a": 1})
        with pytest.raises(TurnError, match="no paused turn"):
            runtime.run_turn(thread_id="c", answers={"a": 1})


def test_a_step_replays_its_model_replies_and_runs_only_the_tool_that_asked() -> None:
    from weft.calls import Tool
    from weft.llm import ScriptedChatModel
    from weft.memory import AgentMemory
    from weft.plan import Step, Task, TaskExecutor

    calls: Counter[str] = Counter()

    def lookup(q: str) -> dict[str, str]:
        calls["lookup"] += 1
        return {"found": q}

    def send(to: str) -> dict[str, Any]:
        calls["send"] += 1
        return {"sent": interrupt({"send to": to})}

    def script(messages: Any, tools: Any) -> Any:
        calls["model"] += 1
        tool_results = [m for m in messages if m.role == "tool"]
        if not tool_results:
            return ScriptedChatModel.tool_call("lookup", {"q": "bob"})
        if len(tool_results) == 1:
            return ScriptedChatModel.tool_call("send", {"to": "bob"})
        return ScriptedChatModel.tool_call("finish_step", {"result": tool_results[-1].content})

    open_object = {"type": "object"}
    tools = [
        Tool(name="lookup", fn=lookup, parameters=open_object),
        Tool(name="send", fn=send, parameters=open_object),
    ]
    task = Task(id="mail", steps=[Step(id="send", instructions="Send it.")])
    memory = AgentMemory()
    executor = TaskExecutor(task, model=ScriptedChatModel(script), memory=memory, tools=tools)
    paused = executor.execute(run_id="job")
    assert isinstance(paused, Paused)
    assert calls == Counter({"model": 2, "lookup": 1, "send": 1})
    done = executor.execute(run_id="job", answers=paused.answer("yes"))
    assert not isinstance(done, Paused) and done.ok
    # the two replies and lookup's result are replayed; only send runs again, then the
    # model is asked for the one reply it never gave
    assert calls == Counter({"model": 3, "lookup": 1, "send": 2})
    assert memory.get_value("step:send") == '{"sent": "yes"}'


def test_pause_records_are_never_listed_as_memory() -> None:
    from weft.memory import AgentMemory

    calls: Counter[str] = Counter()
    store = Store()
    assert isinstance(asking_graph(calls).run(1, run_id="r", store=store), Paused)
    assert store.has("step", "r/ask#0/pauses/0")
    memory = AgentMemory(store)
    assert [entry.key for entry in memory.list()] == []
    assert len(memory) == 0


def test_an_agents_parallel_branches_ask_and_are_answered_independently() -> None:
    from weft.agent import Agent

    calls: Counter[Any] = Counter()

    def reasoner(prompt: str) -> str:
        if '"branch"' in prompt:
            return json.dumps({"instant_response": "branch done", "task_status": "Completed"})
        if "approved" in prompt:
            return json.dumps({"instant_response": "done", "task_status": "Completed"})
        ask = [{"type": "ask", "args": {"who": w}} for w in ("alice", "bob")]
        return json.dumps({"next_actions": [ask, [{"type": "finish", "args": {}}]]})

    def ask(who: str) -> dict[str, Any]:
        calls[who] += 1
        return {"branch": who, "reply": interrupt(f"{who}: approve?")}

    def finish() -> str:
        calls["finish"] += 1
        return "approved"

    agent = Agent(reasoner, actor={"ask": ask, "finish": finish}, store=Store(), name="ag")
    first = agent.run("go", run_id="j")
    assert isinstance(first, Paused)
    assert [q.question for q in first.questions] == ["alice: approve?", "bob: approve?"]
    alice, bob = (q.id for q in first.questions)
    second = agent.run("go", run_id="j", answers={alice: "yes"})
    assert isinstance(second, Paused) and [q.id for q in second.questions] == [bob]
    done = agent.run("go", run_id="j", answers={bob: "yes"})
    assert not isinstance(done, Paused) and done.stop_reason == "completed"
    assert calls == Counter({"alice": 2, "bob": 3, "finish": 1})


def test_a_plan_or_an_executor_refuses_answers_without_a_run_id() -> None:
    from weft.calls import Plan, Tool
    from weft.errors import ExecutorError
    from weft.llm import ScriptedChatModel
    from weft.memory import AgentMemory
    from weft.plan import Step, Task, TaskExecutor

    plan = Plan([{"_id": "a", "_tool": "echo", "x": 1, "_outputPath": "†state.x"}])
    tools = [Tool(name="echo", fn=lambda x: x)]
    with pytest.raises(PauseError, match="run_id"):
        plan.run(tools, answers={"p/a#0/pauses/0": 1})
    task = Task(id="t", steps=[Step(id="s", instructions="Do it.")])
    executor = TaskExecutor(task, model=ScriptedChatModel([]), memory=AgentMemory())
    with pytest.raises(ExecutorError, match="run_id"):
        executor.execute(answers={"t/s/pauses/0": 1})
    with pytest.raises(ExecutorError, match="no question waits"):
        executor.execute(run_id="job", answers={"job/s/pauses/0": 1})
