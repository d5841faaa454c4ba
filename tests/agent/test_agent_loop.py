"""The loop of ``Agent``: stop reasons, sync and async paths, errors, retries, the store."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from weft.agent import Agent, AgentAction, AgentResponse, AgentStateItem, PromptBasedActionAgent
from weft.errors import AgentBuildError, AgentError, AgentResponseError, ScriptExhaustedError
from weft.llm import Completion, ScriptedReasoner
from weft.store import Store


def act(*types: str, status: str | None = None, **args: Any) -> str:
    """A JSON reply running the actions ``types`` in sequence."""
    reply: dict[str, Any] = {"next_actions": [[{"type": t, "args": args}] for t in types]}
    if status:
        reply["task_status"] = status
    return json.dumps(reply)


def done(text: str = "done") -> str:
    return json.dumps({"instant_response": text, "task_status": "Completed"})


def test_a_completed_reply_ends_the_loop() -> None:
    agent = Agent(ScriptedReasoner([done("hi")]))
    result = agent.run("hello")
    assert (result.stop_reason, result.iterations, result.instant_response) == (
        "completed",
        1,
        "hi",
    )


def test_a_reply_without_actions_waits_for_the_user() -> None:
    reply = json.dumps({"instant_response": "Which city?", "task_status": "Pending"})
    result = Agent(ScriptedReasoner([reply])).run("Book a hotel")
    assert result.stop_reason == "no_actions"


def test_the_loop_stops_after_max_iterations() -> None:
    reasoner = ScriptedReasoner(lambda _prompt: act("tick"))
    agent = Agent(reasoner, actor={"tick": lambda: 1}, max_iterations=3)
    result = agent.run("go")
    assert (result.stop_reason, result.iterations, len(reasoner.prompts)) == (
        "max_iterations",
        3,
        3,
    )


def test_completed_with_actions_runs_them_then_stops() -> None:
    ran: list[str] = []
    agent = Agent(
        ScriptedReasoner([act("send", status="Completed")]),
        actor={"send": lambda: ran.append("sent") or "ok"},
    )
    result = agent.run("send it")
    assert ran == ["sent"]
    assert result.stop_reason == "completed"
    assert result.action_results.result == "ok"


async def test_async_reasoner_and_async_actor() -> None:
    replies = iter([act("fetch", url="u"), done()])

    async def reasoner(prompt: str) -> str:
        await asyncio.sleep(0)
        return next(replies)

    async def fetch(url: str) -> dict[str, str]:
        await asyncio.sleep(0)
        return {"fetched": url}

    result = await Agent(reasoner, actor={"fetch": fetch}).arun("get u")
    assert result.states[0].action_results.result == {"fetched": "u"}


async def test_the_sync_wrapper_works_inside_a_running_loop() -> None:
    agent = Agent(ScriptedReasoner([done("from a thread")]))
    assert agent.run("hi").instant_response == "from a thread"


def test_a_reasoner_returning_a_completion_is_accepted() -> None:
    agent = Agent(lambda prompt: Completion(done("ok")))
    assert agent.run("x").instant_response == "ok"


def test_a_single_actor_receives_the_action() -> None:
    seen: list[AgentAction] = []

    def actor(action: AgentAction, target: str | None) -> str:
        seen.append(action)
        return f"{action.type} on {target}"

    reply = json.dumps({"next_actions": [[{"type": "Click", "target": "#ok"}]]})
    result = Agent(ScriptedReasoner([reply, done()]), actor=actor).run("click ok")
    assert seen[0].type == "Click"
    assert result.action_results.result == "Click on #ok"


def test_an_actor_that_raises_becomes_an_error_result_the_reasoner_sees() -> None:
    def broken() -> None:
        raise ValueError("the page is gone")

    reasoner = ScriptedReasoner([act("Visit"), done()])
    result = Agent(reasoner, actor={"Visit": broken}).run("visit")
    executed = result.states[0].action_results
    assert executed.result == {"error": "ValueError: the page is gone", "type": "Visit"}
    assert executed.error == "ValueError: the page is gone"
    assert "ValueError: the page is gone" in reasoner.prompts[1]
    assert result.stop_reason == "completed"


def test_an_actor_result_the_store_cannot_keep_becomes_an_error_result() -> None:
    result = Agent(ScriptedReasoner([act("make"), done()]), actor={"make": object}).run("x")
    error = result.states[0].action_results.result["error"]
    assert "the actor for make returned a value that cannot be stored" in error


def test_wrong_arguments_are_an_error_result_not_a_crash() -> None:
    reasoner = ScriptedReasoner([act("add", a=1), done()])
    result = Agent(reasoner, actor={"add": lambda a, b: a + b}).run("add")
    assert "TypeError" in result.states[0].action_results.result["error"]


def test_an_unknown_action_type_gets_one_corrective_retry() -> None:
    reasoner = ScriptedReasoner([act("Serch"), act("Search"), done()])
    agent = Agent(reasoner, actor={"Search": lambda: "hits", "Fetch": lambda: "page"})
    result = agent.run("find")
    assert (
        "Your previous reply could not be used: NextActions names the action type Serch, "
        "which is not one of the action types: Fetch, Search" in reasoner.prompts[1]
    )
    assert result.states[0].action_results.result == "hits"
    assert result.states[0].raw_response == act("Search")
    retry = [e.value for e in agent.store.events() if e.op == "note"]
    assert retry[0]["event"] == "corrective_retry"


def test_a_second_unusable_reply_raises_with_the_raw_reply() -> None:
    reasoner = ScriptedReasoner(["no structure here", "<StructuredResponse><NextActions>"])
    with pytest.raises(AgentResponseError) as caught:
        Agent(reasoner).run("x")
    assert caught.value.raw == "<StructuredResponse><NextActions>"
    assert caught.value.problem == "<NextActions> is opened but never closed; add </NextActions>"
    assert "after one corrective retry" in str(caught.value)
    assert "no <StructuredResponse> element" in reasoner.prompts[1]


def test_a_reasoner_error_propagates() -> None:
    with pytest.raises(ScriptExhaustedError):
        Agent(ScriptedReasoner([act("x")]), actor={"x": lambda: 1}).run("go")


def test_one_agent_runs_one_loop_at_a_time() -> None:
    async def scenario() -> None:
        gate = asyncio.Event()

        async def slow(prompt: str) -> str:
            await gate.wait()
            return done()

        agent = Agent(slow)
        first = asyncio.ensure_future(agent.arun("a"))
        await asyncio.sleep(0)
        with pytest.raises(AgentError, match="already running"):
            await agent.arun("b")
        gate.set()
        await first

    asyncio.run(scenario())


def test_every_iteration_writes_its_state_action_and_result_as_events() -> None:
    store = Store()
    agent = Agent(
        ScriptedReasoner([act("add", a=1, b=2), done("3")]),
        actor={"add": lambda a, b: a + b},
        store=store,
        name="calc",
    )
    agent.run("1 + 2")
    writes = [(e.key, e.reducer) for e in store.events() if e.op == "write"]
    assert writes == [
        ("state:agent/calc/current", "replace"),
        ("state:agent/calc/actions", "append"),
        ("state:agent/calc/states", "append"),
        ("state:agent/calc/current", "replace"),
        ("state:agent/calc/states", "append"),
    ]
    record = store.value("state", "agent/calc/actions")[0]
    assert record == {
        "agent": "calc",
        "iteration": 0,
        "group": 0,
        "index": 0,
        "action": {"type": "add", "args": {"a": 1, "b": 2}, "result": 3},
    }
    assert json.loads(json.dumps(store.to_dict()))  # every stored value is JSON


def test_states_come_back_from_a_replayed_event_log() -> None:
    agent = Agent(ScriptedReasoner([act("add", a=1, b=2), done("3")]), actor={"add": max})
    agent.run("1 + 2")
    replayed = Store.from_events(agent.store.events())
    again = Agent(ScriptedReasoner([done("again")]), store=replayed)
    assert list(again.states) == list(agent.states)
    again.run("once more")
    assert [s.iteration for s in again.states] == [0, 1, 2]


def test_a_state_item_round_trips_through_a_dict() -> None:
    item = AgentStateItem(
        iteration=0,
        new_task=True,
        task_status=AgentResponse().task_status,
        task_status_description="d",
        task_status_description_extended=None,
        user_input="u",
        reasoner_input="p",
        raw_response="r",
        response=AgentResponse(next_actions=((AgentAction(type="A", args={"x": [1]}),),)),
        action_results=[AgentAction(type="A").with_result({"k": 1}), "plain"],
    )
    assert AgentStateItem.from_dict(item.to_dict()) == item


def test_the_prompt_agent_records_states_across_runs() -> None:
    agent = PromptBasedActionAgent(ScriptedReasoner([done("a"), done("b")]))
    agent.run("one")
    agent.run("two")
    assert [(s.iteration, s.user_input, s.new_task) for s in agent.states] == [
        (0, "one", True),
        (1, "two", True),
    ]


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"name": "has space"}, "an agent name is letters"),
        ({"max_iterations": 0}, "max_iterations=0"),
        ({"summarizer": 3}, "summarizer=3 is not callable"),
        ({"actor": {"Search": "nope"}}, "the actor for 'Search' is 'nope'"),
        ({"actor": {"A": print}, "action_types": ["B"]}, "action_types names B"),
    ],
)
def test_a_misconfigured_agent_fails_when_built(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(AgentBuildError, match=message):
        Agent(ScriptedReasoner([]), **kwargs)


def test_a_non_reasoner_fails_when_built() -> None:
    with pytest.raises(AgentBuildError, match="is not a reasoner"):
        Agent("gpt")


def test_user_input_must_be_storable() -> None:
    with pytest.raises(Exception, match="user_input of agent 'agent'"):
        Agent(ScriptedReasoner([done()])).run(object())


class GraphAgent(Agent):
    """An agent whose next actions are a prebuilt WorkGraph or a plain callable."""

    def __init__(self, reasoner: Any, work: Any) -> None:
        super().__init__(reasoner)
        self.work = work

    def create_next_actions(self, response: AgentResponse, context: Any) -> Any:
        return self.work if response.task_status is not response.task_status.Completed else ()


def test_callable_next_actions_run_as_they_are() -> None:
    from weft.graph import ResultPassDownMode, WorkGraph, WorkGraphNode

    first = WorkGraphNode(lambda: 20, ResultPassDownMode.ResultAsFirstArg)
    first.add_next(WorkGraphNode(lambda x: x + 22))
    reasoner = ScriptedReasoner([json.dumps({"task_status": "Ongoing"}), done()])
    assert GraphAgent(reasoner, WorkGraph(start_nodes=[first])).run("x").action_results == 42

    async def plain() -> str:
        return "from a coroutine function"

    reasoner = ScriptedReasoner([json.dumps({"task_status": "Ongoing"}), done()])
    assert GraphAgent(reasoner, plain).run("x").action_results == "from a coroutine function"
