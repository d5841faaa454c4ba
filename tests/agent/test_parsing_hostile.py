"""A hostile reply is a ``ResponseProblem`` (a weft error) that gets the corrective retry:
never a RecursionError or a bare ValueError out of the agent loop."""

from __future__ import annotations

import json

import pytest

from weft.agent import Agent, ResponseProblem, parse_structured_response
from weft.agent.xmlish import Scanner
from weft.errors import AgentError, WeftError
from weft.llm import ScriptedReasoner
from weft.store import MAX_DEPTH

DONE = json.dumps({"instant_response": "done", "task_status": "Completed"})


def deep_args(depth: int) -> str:
    """A JSON reply whose one action's ``args`` nest lists ``depth`` deep."""
    return '{"next_actions": [[{"type": "A", "args": {"x": ' + "[" * depth + "]" * depth + "}}]]}"


@pytest.mark.parametrize(
    ("reply", "problem"),
    [
        (deep_args(100_000), "the reply nests too deeply to be read as JSON"),
        (deep_args(MAX_DEPTH + 1), "nested more than 100 deep"),
        ('{"next_actions": [[{"type": "A", "args": {"x": NaN}}]]}', "NaN is not a JSON number"),
        ('{"instant_response": Infinity}', "Infinity is not a JSON number"),
        ('{"instant_response": "\\ud800"}', "surrogates not allowed"),
        ('{"task_status": ' + "9" * 5000 + "}", "4300"),
        (
            "<NextActions><Action><Type>A</Type><Args><q>\ud800</q></Args></Action></NextActions>",
            "lone",
        ),
    ],
)
def test_a_hostile_reply_is_a_response_problem(reply: str, problem: str) -> None:
    with pytest.raises(ResponseProblem, match=problem):
        parse_structured_response(reply)


def test_a_reply_nested_past_the_parser_gets_the_corrective_retry() -> None:
    reasoner = ScriptedReasoner([deep_args(100_000), DONE])
    result = Agent(reasoner, actor={"A": lambda x: x}).run("go")
    assert result.stop_reason == "completed"
    assert "nests too deeply" in reasoner.prompts[1]


def test_reply_problems_and_xml_problems_are_weft_errors() -> None:
    assert issubclass(ResponseProblem, AgentError) and issubclass(ResponseProblem, ValueError)
    scanner = Scanner(containers=frozenset({"A"}), texts=frozenset({"B"}))
    with pytest.raises(ResponseProblem, match="<A> is opened but never closed"):
        scanner.scan("<A><B>x</B>")
    with pytest.raises(WeftError, match="DTDs and entity declarations are not accepted"):
        parse_structured_response('<!DOCTYPE x [<!ENTITY e "x">]><StructuredResponse/>')


@pytest.mark.parametrize(
    "reply",
    ["no structure \ud800 here", '{"instant_response": "hi \ud800", "task_status": "Completed"}'],
)
def test_a_reply_with_a_lone_surrogate_gets_the_retry_and_the_store_keeps_it_escaped(
    reply: str,
) -> None:
    reasoner = ScriptedReasoner([reply, DONE])
    agent = Agent(reasoner)
    result = agent.run("go")
    assert (result.stop_reason, result.instant_response) == ("completed", "done")
    assert "the reply holds a lone surrogate ('\\ud800'" in reasoner.prompts[1]
    retry = [e.value for e in agent.store.events() if e.op == "note"]
    assert retry[0]["raw"] == reply.replace("\ud800", "\\ud800")
