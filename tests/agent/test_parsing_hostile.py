"""A hostile reply is a ``ResponseProblem`` (a weft error) that gets the corrective retry:
never a RecursionError or a bare ValueError out of the agent loop."""

from __future__ import annotations

import json
import signal

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


def _within(seconds: int, reply: str) -> str:
    """The problem ``reply`` is (or "ok"), failing the test if reading it does not end in
    ``seconds`` (a reading that is not linear in the reply takes hours at these sizes)."""

    def stop(*_: object) -> None:
        raise TimeoutError(f"reading a {len(reply):,}-character reply did not end in {seconds} s")

    previous = signal.signal(signal.SIGALRM, stop)
    signal.alarm(seconds)
    try:
        parse_structured_response(reply)
        return "ok"
    except ResponseProblem as problem:
        return str(problem)
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


N = 10_000
BIG = 100_000  # a reply of about 1 MB: hours to read if each tag searched the rest of it
ACTION = "<Action><ActionType>A</ActionType>"


@pytest.mark.parametrize(
    ("reply", "problem"),
    [
        (
            "<StructuredResponse>" + "<NextActions>" * BIG,
            "<NextActions> is opened but never closed",
        ),
        ("<StructuredResponse>" + "<TaskStatus>" * BIG, "<TaskStatus> is opened but never closed"),
        (
            "<NextActions>" + "<Action>" * N + "</Action>" * N + "</NextActions>",
            "<Action> 1 of <NextActions> has no <ActionType>",
        ),
        ("<NextActions>" + "<Action>" * N + "</NextActions>", "<Action> is not closed before"),
        ("</ActionGroup>" * BIG, "</ActionGroup> closes a <ActionGroup> that was never opened"),
        (
            "<NextActions>" + ACTION + "<Args>" + "<q>" * BIG + "</Args></Action></NextActions>",
            "is neither a JSON object nor <name>value</name> elements",
        ),
        (
            "<NextActions>" + ACTION + "<Args>" + "<q1>x" * BIG + "</Args></Action></NextActions>",
            "is neither a JSON object nor <name>value</name> elements",
        ),
        ("<StructuredResponse" + " a" * BIG, "has no <StructuredResponse> element"),
        (
            "<InstantResponse>" + "</instantresponsex>" * BIG,
            "<InstantResponse> is opened but never",
        ),
    ],
)
def test_a_pathological_reply_is_a_response_problem_read_in_one_pass(
    reply: str, problem: str
) -> None:
    assert problem in _within(20, reply)


def test_tags_nested_ten_thousand_deep_are_read_without_recursion() -> None:
    reply = (
        "<StructuredResponse><InstantResponse>deep</InstantResponse>"
        + "<Problems>" * N
        + "</Problems>" * N
        + "</StructuredResponse>"
    )
    assert _within(20, reply) == "ok"
    response, _ = parse_structured_response(reply)
    assert (response.instant_response, response.problems) == ("deep", ())


def test_a_one_megabyte_reply_is_read_whole() -> None:
    text = "x &lt; y " * 120_000  # about 1 MB of text in one field
    reply = (
        f"<StructuredResponse><InstantResponse>{text}</InstantResponse>"
        "<TaskStatus>Completed</TaskStatus></StructuredResponse>"
    )
    assert len(reply) > 1_000_000
    assert _within(20, reply) == "ok"
    response, _ = parse_structured_response(reply)
    assert response.instant_response == ("x < y " * 120_000).strip()


def test_many_text_fields_closed_in_another_case_are_read_in_one_pass() -> None:
    # each closing tag is spelled otherwise than its opening: found without searching the
    # rest of the reply for the spelling that is not there, once per field
    field = "<InstantResponse>hi</instantresponse>"
    reply = "<StructuredResponse>" + field * 160_000 + "</StructuredResponse>"
    assert len(reply) > 4_000_000
    assert _within(20, reply) == "ok"
    assert parse_structured_response(reply)[0].instant_response == "hi"


def test_a_hostile_reply_to_the_agent_gets_the_corrective_retry() -> None:
    reasoner = ScriptedReasoner(["<NextActions>" + "<Action>" * N, DONE])
    result = Agent(reasoner, actor={"A": lambda: 1}).run("go")
    assert result.stop_reason == "completed"
    assert "<Action> is opened but never closed" in reasoner.prompts[1]
