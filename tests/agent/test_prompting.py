"""Templates, placeholders and how each is rendered."""

from __future__ import annotations

import pytest

from weft.agent import (
    AgentAction,
    AgentAttachment,
    AgentResponse,
    AgentStateItem,
    AgentTaskStatusFlags,
    PromptBasedActionAgent,
    PromptBasedAgent,
)
from weft.agent.prompting import (
    PLACEHOLDERS,
    action_memory_string,
    action_results_xml,
    conversation_string,
    state_strings,
    template_fields,
)
from weft.errors import AgentBuildError
from weft.llm import ScriptedReasoner


def state(
    status: AgentTaskStatusFlags,
    short: str | None,
    extended: str | None = None,
    user_input: object = None,
    reply: str | None = None,
) -> AgentStateItem:
    return AgentStateItem(
        iteration=0,
        new_task=False,
        task_status=status,
        task_status_description=short,
        task_status_description_extended=extended,
        user_input=user_input,
        reasoner_input="",
        raw_response="",
        response=AgentResponse(instant_response=reply, task_status=status),
    )


def test_an_unknown_placeholder_fails_when_the_agent_is_built() -> None:
    with pytest.raises(AgentBuildError) as caught:
        PromptBasedAgent(ScriptedReasoner([]), template="Hi {user_inptu}")
    message = str(caught.value)
    assert "names the unknown placeholder {user_inptu}" in message
    assert "{user_input}, {conversation}" in message
    assert "{{" in message


@pytest.mark.parametrize(
    ("template", "message"),
    [
        ("{user_input.upper}", "attribute or index access is not allowed"),
        ("{}", "has an empty placeholder"),
        ("{context!r}", "with a conversion or format spec"),
        ("{oops", "is not a valid format string"),
    ],
)
def test_bad_templates_are_build_errors(template: str, message: str) -> None:
    with pytest.raises(AgentBuildError, match=message):
        template_fields(template)


def test_every_seed_placeholder_is_known() -> None:
    template = " ".join("{" + p + "}" for p in PLACEHOLDERS) + " {{literal}}"
    assert template_fields(template) == frozenset(PLACEHOLDERS)


def test_an_empty_placeholder_renders_as_nothing() -> None:
    reasoner = ScriptedReasoner(["ok"])
    agent = PromptBasedAgent(
        reasoner, template="[{user_profile}|{context}|{attachments}] {user_input}"
    )
    agent.run("hi")
    assert reasoner.prompts == ["[||] hi"]


def test_profile_context_and_attachments_are_rendered() -> None:
    reasoner = ScriptedReasoner(["ok"])
    agent = PromptBasedAgent(reasoner, template="{user_profile}\n{context}\n{attachments}")
    agent.run(
        "hi",
        user_profile={"name": "Ada"},
        context="in a hurry",
        attachments=[AgentAttachment(id="f", description="a file", content="x < y")],
    )
    assert reasoner.prompts[0] == (
        '{"name": "Ada"}\nin a hurry\n<Attachment>\n  <ID>f</ID>\n  <Description>a file'
        "</Description>\n  <Content>x &lt; y</Content>\n</Attachment>"
    )


def test_action_results_xml_renders_plain_values_without_a_type() -> None:
    assert action_results_xml(["text", {"k": 1}]) == (
        "<ActionResults>\n"
        "  <Action>\n    <ActionResult>text</ActionResult>\n  </Action>\n"
        '  <Action>\n    <ActionResult>{"k": 1}</ActionResult>\n  </Action>\n'
        "</ActionResults>"
    )


def test_action_results_xml_shows_the_action_id_when_there_is_one() -> None:
    done = AgentAction(type="Problem", id="ORDER").with_result("ok")
    assert "<ActionID>ORDER</ActionID>" in action_results_xml(done)


def test_action_memory_is_read_through_the_action_and_through_lists() -> None:
    one = AgentAction(type="A").with_result({"action_memory": {"memory": "m1"}})
    two = AgentAction(type="B").with_result({"action_memory": {"memory": "m2"}})
    assert action_memory_string(one) == "m1"
    assert action_memory_string([one, "plain", two]) == "m1\nm2"
    assert action_memory_string({"action_memory": "not a mapping"}) is None
    assert action_memory_string(None) is None


def test_pending_states_are_skipped_in_the_state_strings() -> None:
    states = [
        state(AgentTaskStatusFlags.Ongoing, "searched"),
        state(AgentTaskStatusFlags.Pending, "waiting for the user"),
        state(AgentTaskStatusFlags.Ongoing, "read the page"),
        state(AgentTaskStatusFlags.Ongoing, "summarizing", "summarizing the page for Ada"),
        state(AgentTaskStatusFlags.Pending, "waiting again", "waiting again for the user"),
    ]
    assert state_strings(states) == ("summarizing the page for Ada", "searched\nread the page")


def test_the_short_description_stands_in_for_a_missing_extended_one() -> None:
    assert state_strings([state(AgentTaskStatusFlags.Completed, "done")]) == ("done", "")


def test_conversation_lists_inputs_and_replies_then_the_current_input() -> None:
    states = [
        state(AgentTaskStatusFlags.Completed, None, user_input=["a", "b"], reply="r1"),
        state(AgentTaskStatusFlags.Ongoing, None, user_input=None, reply=None),
    ]
    assert conversation_string(states, "c") == "User: a\nUser: b\nAgent: r1\nUser: c"


def test_the_conversation_placeholder_is_filled_even_without_the_flag() -> None:
    reasoner = ScriptedReasoner(["one", "two"])
    agent = PromptBasedAgent(reasoner, template="{conversation}||{user_input}")
    agent.run("hi")
    agent.run("again")
    assert reasoner.prompts[1] == "User: hi\nAgent: one\nUser: again||again"


def test_the_action_agent_default_template_lists_its_action_types() -> None:
    agent = PromptBasedActionAgent(ScriptedReasoner([]), actor={"Search": str, "Fetch": str})
    assert "Action types: Fetch, Search" in agent.template
    assert '<Args>{"name": "value"}</Args>' in agent.construct_reasoner_input(_inputs())


def _inputs() -> object:
    from weft.agent import AgentInputs, AgentStates

    return AgentInputs(
        iteration=0,
        user_input="hi",
        user_profile=None,
        context=None,
        action_results=None,
        attachments=(),
        states=AgentStates(),
    )


def test_a_text_agent_refuses_an_empty_reply_once() -> None:
    reasoner = ScriptedReasoner(["  ", "Hello"])
    assert PromptBasedAgent(reasoner, template="{user_input}").run("hi").instant_response == "Hello"
    assert "the reply is empty" in reasoner.prompts[1]
