"""Prompt-based agents: a template with the seed's placeholders, filled every iteration."""

from __future__ import annotations

from typing import Any, Final

from weft.agent.agent import Agent
from weft.agent.context import AgentInputs
from weft.agent.parsing import ResponseProblem
from weft.agent.prompting import (
    action_memory_string,
    action_results_xml,
    attachments_string,
    conversation_string,
    render,
    state_strings,
    template_fields,
    value_string,
)
from weft.agent.types import AgentResponse, AgentTaskStatusFlags

CONVERSATION_TEMPLATE: Final = """{user_profile}
{context}
{attachments}
{conversation}
Agent:"""

ACTION_FORMAT: Final = """Reply with exactly one <StructuredResponse> element:
<StructuredResponse>
  <InstantResponse>what you tell the user now</InstantResponse>
  <TaskStatus>Completed, Ongoing or Pending</TaskStatus>
  <TaskStatusDescription>one line on where the task stands</TaskStatusDescription>
  <NextActions>
    <ActionGroup>
      <Action>
        <ActionType>one of the action types</ActionType>
        <Target>what the action acts on (optional)</Target>
        <Args>{{"name": "value"}}</Args>
        <Reasoning>why this action</Reasoning>
      </Action>
    </ActionGroup>
  </NextActions>
</StructuredResponse>
Groups run one after another; the actions of one group run in parallel, each in its own
branch. Leave <NextActions> empty when there is nothing left to do."""

ACTION_TEMPLATE: Final = (
    """You complete the user's task by choosing actions, one step at a time.
{user_profile}
{context}
Conversation:
{conversation}

Current state: {current_state}
Earlier states:
{previous_states}

Results of your last actions:
{action_result}
Memory from those actions: {action_memory}

Attachments:
{attachments}

Action types: ACTION_TYPES
"""
    + ACTION_FORMAT
)
"""The default template of ``PromptBasedActionAgent`` (``ACTION_TYPES`` is replaced by the
agent's action types when it is built)."""


class PromptBasedAgent(Agent):
    """An agent whose reasoner input is a template filled with the seed's placeholders.

    ``template`` names placeholders of ``weft.agent.prompting``. With
    ``use_conversational_user_input`` ``{user_input}`` holds the whole conversation, as
    ``{conversation}`` always does. The reply is plain text: the instant response, and the
    task is completed.

    >>> from weft.llm import ScriptedReasoner
    >>> reasoner = ScriptedReasoner(["Hello, Ada.", "You are Ada."])
    >>> agent = PromptBasedAgent(reasoner, template="{conversation}")
    >>> agent.run("I am Ada.").instant_response
    'Hello, Ada.'
    >>> _ = agent.run("Who am I?")
    >>> print(reasoner.prompts[-1])
    User: I am Ada.
    Agent: Hello, Ada.
    User: Who am I?
    """

    default_template: str = CONVERSATION_TEMPLATE

    def __init__(
        self,
        reasoner: Any,
        *,
        template: str | None = None,
        use_conversational_user_input: bool = False,
        user_prefix: str = "User: ",
        agent_prefix: str = "Agent: ",
        **options: Any,
    ) -> None:
        super().__init__(reasoner, **options)
        self.template = self._default_template() if template is None else template
        self.template_fields = template_fields(self.template)
        self.use_conversational_user_input = use_conversational_user_input
        self.user_prefix = user_prefix
        self.agent_prefix = agent_prefix

    def _default_template(self) -> str:
        return self.default_template

    def construct_reasoner_input(self, inputs: AgentInputs) -> str:
        """The template, filled with the placeholders it names (only those are computed)."""
        fields = self.template_fields
        feed: dict[str, str] = {}
        conversational = self.use_conversational_user_input and "user_input" in fields
        if "conversation" in fields or conversational:
            conversation = conversation_string(
                inputs.states,
                inputs.user_input,
                user_prefix=self.user_prefix,
                agent_prefix=self.agent_prefix,
            )
            feed["conversation"] = conversation
            if conversational:
                feed["user_input"] = conversation
        if "user_input" in fields and not conversational:
            feed["user_input"] = value_string(inputs.user_input)
        if "user_profile" in fields:
            feed["user_profile"] = value_string(inputs.user_profile)
        if "context" in fields:
            feed["context"] = value_string(inputs.context)
        results = inputs.action_results
        if results is not None:
            if "action_result" in fields:
                feed["action_result"] = action_results_xml(results)
            if "action_memory" in fields:
                feed["action_memory"] = action_memory_string(results) or ""
        if "attachments" in fields and inputs.attachments:
            feed["attachments"] = attachments_string(inputs.attachments)
        if "current_state" in fields or "previous_states" in fields:
            feed["current_state"], feed["previous_states"] = state_strings(inputs.states)
        return render(self.template, feed)

    def parse_response(self, raw: str) -> AgentResponse:
        """A text reply: the instant response; the task is completed."""
        text = raw.strip()
        if not text:
            raise ResponseProblem("the reply is empty; answer the user in plain text")
        return AgentResponse(instant_response=text, task_status=AgentTaskStatusFlags.Completed)


class PromptBasedActionAgent(PromptBasedAgent):
    """A prompt-based agent that answers in the structured format (``weft.agent.parsing``)
    and runs actions; the README's "Agents" section has an example."""

    default_template: str = ACTION_TEMPLATE

    def _default_template(self) -> str:
        types = self.action_types
        listed = ", ".join(sorted(types)) if types is not None else "any"
        return self.default_template.replace(
            "ACTION_TYPES", listed.replace("{", "{{").replace("}", "}}")
        )

    def parse_response(self, raw: str) -> AgentResponse:
        """The structured reply (XML or JSON), action types checked."""
        return Agent.parse_response(self, raw)
