"""The structured reply: the seed's XML, JSON, tolerance, and the exact problems."""

from __future__ import annotations

import contextlib
import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from weft.agent import AgentAction, AgentTaskStatusFlags, ResponseProblem
from weft.agent.parsing import parse_structured_response
from weft.agent.types import escape_xml

FULL = """Sure! Here is my answer:
<StructuredResponse>
  <InstantResponse>I will open the page & read it.</InstantResponse>
  <InstantLearnings>The user likes <b>bold</b> text.</InstantLearnings>
  <TaskStatus>ongoing</TaskStatus>
  <TaskStatusDescription>Opening the page</TaskStatusDescription>
  <TaskStatusDescriptionExtended>Opening example.org to read it</TaskStatusDescriptionExtended>
  <NextActions>
    <ActionGroup>
      <Action>
        <ActionType>Navigation.VisitURL</ActionType>
        <Target>https://example.org</Target>
        <Args>{"timeout": 5}</Args>
        <Reasoning>The answer is there.</Reasoning>
      </Action>
    </ActionGroup>
    <ActionGroup>
      <Action><Type>Search</Type><Args><query>a &lt; b</query></Args></Action>
      <Action><ActionType>Search</ActionType></Action>
    </ActionGroup>
    <Action><ActionType>Summarize</ActionType></Action>
  </NextActions>
</StructuredResponse>
Let me know!"""


def test_the_xml_format_reads_every_field() -> None:
    response, graph = parse_structured_response(FULL)
    assert graph is None
    assert response.instant_response == "I will open the page & read it."
    assert response.instant_learnings == "The user likes <b>bold</b> text."
    assert response.task_status is AgentTaskStatusFlags.Ongoing
    assert response.task_status_description == "Opening the page"
    assert response.task_status_description_extended == "Opening example.org to read it"
    visit, (search1, search2), (summarize,) = response.next_actions
    assert visit == (
        AgentAction(
            type="Navigation.VisitURL",
            target="https://example.org",
            args={"timeout": 5},
            reasoning="The answer is there.",
        ),
    )
    assert search1.args == {"query": "a < b"}
    assert (search2.type, summarize.type) == ("Search", "Summarize")


def test_the_json_format_reads_the_same_fields() -> None:
    reply = {
        "instant_response": "ok",
        "task_status": "Pending",
        "next_actions": [[{"type": "A", "args": {"x": 1}}], [{"type": "B"}, {"type": "C"}]],
    }
    response, _ = parse_structured_response("```json\n" + json.dumps(reply) + "\n```")
    assert response.task_status is AgentTaskStatusFlags.Pending
    assert [[a.type for a in g] for g in response.next_actions] == [["A"], ["B", "C"]]
    assert response.next_actions[0][0].args == {"x": 1}


def test_a_missing_status_is_ongoing_with_work_and_completed_without() -> None:
    busy, _ = parse_structured_response('{"next_actions": [[{"type": "A"}]]}')
    idle, _ = parse_structured_response(
        "<StructuredResponse><InstantResponse>hi</InstantResponse></StructuredResponse>"
    )
    assert busy.task_status is AgentTaskStatusFlags.Ongoing
    assert idle.task_status is AgentTaskStatusFlags.Completed


def test_fields_without_their_wrapper_are_accepted() -> None:
    response, _ = parse_structured_response("<InstantResponse>hi</InstantResponse>")
    assert response.instant_response == "hi"


@pytest.mark.parametrize(
    ("reply", "problem"),
    [
        ("", "the reply is empty"),
        ("just prose", "the reply has no <StructuredResponse> element and is not a JSON object"),
        ("{not json", "the reply is not valid JSON: Expecting property name"),
        ("[1, 2]", "no <StructuredResponse> element"),
        (
            "<StructuredResponse><TaskStatus>Done</TaskStatus></StructuredResponse>",
            "<TaskStatus> is 'Done', which is not one of Completed, Ongoing, Pending",
        ),
        (
            "<StructuredResponse><NextActions><Action><Target>x</Target></Action></NextActions>"
            "</StructuredResponse>",
            "<Action> 1 of <NextActions> has no <ActionType>",
        ),
        (
            "<StructuredResponse><NextActions><ActionGroup></ActionGroup></NextActions>"
            "</StructuredResponse>",
            "<ActionGroup> 1 of <NextActions> holds no <Action>",
        ),
        (
            "<StructuredResponse><NextActions><Action><ActionType>A</ActionType><Args>[1]</Args>"
            "</Action></NextActions></StructuredResponse>",
            "the <Args> of <Action> 1 of <NextActions> (A) is neither a JSON object",
        ),
        (
            "<StructuredResponse><NextActions><Action></NextActions></StructuredResponse>",
            "<Action> is not closed before </NextActions>",
        ),
        (
            "<StructuredResponse></Action></StructuredResponse>",
            "</Action> closes a <Action> that was never opened",
        ),
        (
            "<StructuredResponse><InstantResponse>hi</StructuredResponse>",
            "<InstantResponse> is opened but never closed",
        ),
        ('{"next_actions": [[{"args": {}}]]}', 'action 1 of group 1 has no "type"'),
        ('{"next_actions": {"type": "A"}}', '"next_actions" must be a list of groups'),
        ('{"next_actions": [[]]}', 'group 1 of "next_actions" is []'),
    ],
)
def test_a_malformed_reply_names_its_problem(reply: str, problem: str) -> None:
    with pytest.raises(ResponseProblem) as caught:
        parse_structured_response(reply)
    assert problem in str(caught.value)


def test_a_dtd_or_entity_declaration_is_refused() -> None:
    reply = (
        '<!DOCTYPE r [<!ENTITY x "boom">]>'
        "<StructuredResponse><InstantResponse>&x;</InstantResponse></StructuredResponse>"
    )
    with pytest.raises(ResponseProblem, match="DTDs and entity declarations are not accepted"):
        parse_structured_response(reply)


def test_unknown_action_types_are_a_problem_when_types_are_known() -> None:
    with pytest.raises(ResponseProblem) as caught:
        parse_structured_response(
            '{"next_actions": [[{"type": "Serch"}]]}', action_types={"Search"}
        )
    assert str(caught.value) == (
        "NextActions names the action type Serch, which is not one of the action types: Search"
    )


def test_problems_and_their_graph_text_are_read() -> None:
    reply = (
        "<StructuredResponse><Problems><Problem><Request>Find</Request><ProblemID>FIND</ProblemID>"
        "</Problem></Problems><ProblemGraph>FIND -&gt; X</ProblemGraph></StructuredResponse>"
    )
    response, graph = parse_structured_response(reply)
    assert response.problems == (
        AgentAction(type="Problem", id="FIND", target="FIND", args={"request": "Find"}),
    )
    assert graph == "FIND -> X"


@pytest.mark.parametrize(
    ("problems", "problem"),
    [
        ([{"request": "a"}], 'problem 1 has no "problem_id"'),
        ([{"problem_id": "A"}], 'problem 1 (A) has no "request"'),
        ([{"request": "a", "problem_id": "two words"}], "a ProblemID is one word"),
        (
            [{"request": "a", "problem_id": "A"}, {"request": "b", "problem_id": "A"}],
            "the ProblemID A is used by problem 1 and problem 2",
        ),
    ],
)
def test_bad_problems_are_named(problems: list[dict[str, Any]], problem: str) -> None:
    with pytest.raises(ResponseProblem) as caught:
        parse_structured_response(json.dumps({"problems": problems}))
    assert problem in str(caught.value)


text = st.text(st.characters(blacklist_categories=("Cs",)), max_size=40)
words = st.from_regex(r"[A-Za-z][A-Za-z0-9_.]{0,12}", fullmatch=True)


@given(
    say=text,
    groups=st.lists(
        st.lists(
            st.tuples(words, text, st.dictionaries(words, text, max_size=3)), min_size=1, max_size=3
        ),
        max_size=3,
    ),
)
def test_any_rendered_xml_reply_parses_back(say: str, groups: list[Any]) -> None:
    body = "".join(
        "<ActionGroup>"
        + "".join(
            f"<Action><ActionType>{t}</ActionType><Reasoning>{escape_xml(why)}</Reasoning>"
            f"<Args>{escape_xml(json.dumps(args))}</Args></Action>"
            for t, why, args in group
        )
        + "</ActionGroup>"
        for group in groups
    )
    reply = (
        f"<StructuredResponse><InstantResponse>{escape_xml(say)}</InstantResponse>"
        f"<NextActions>{body}</NextActions></StructuredResponse>"
    )
    response, _ = parse_structured_response(reply)
    assert response.instant_response == (say.strip() or None)
    assert [
        [(a.type, a.reasoning or "", dict(a.args)) for a in g] for g in response.next_actions
    ] == [[(t, why.strip(), args) for t, why, args in g] for g in groups]


@given(st.text(max_size=200))
def test_any_text_parses_or_raises_a_response_problem(reply: str) -> None:
    with contextlib.suppress(ResponseProblem):
        parse_structured_response(reply)


@given(
    st.lists(
        st.sampled_from(
            [
                "<StructuredResponse>",
                "</StructuredResponse>",
                "<NextActions>",
                "</NextActions>",
                "<Action>",
                "</Action>",
                "<ActionType>A",
                "</ActionType>",
                "<ActionGroup>",
                "</ActionGroup>",
                "{",
                "x",
            ]
        ),
        max_size=12,
    )
)
def test_any_tag_soup_parses_or_raises_a_response_problem(parts: list[str]) -> None:
    with contextlib.suppress(ResponseProblem):
        parse_structured_response("".join(parts))
