"""AgentStepExecutor: WorkGraph nodes that run agent steps on one memory."""

from __future__ import annotations

import json

import pytest
from plan_helpers import call, finish, tool_results

from weft.errors import NodeError
from weft.graph import WorkGraph
from weft.llm import ScriptedChatModel
from weft.memory import AgentMemory
from weft.plan import AgentStepExecutor, Step


def test_edge_inputs_become_input_keys_and_results_step_keys() -> None:
    memory = AgentMemory()
    outline = AgentStepExecutor(
        Step(id="outline", instructions="Outline the topic."),
        model=ScriptedChatModel([finish(["intro", "end"])]),
        memory=memory,
    )
    writer_model = ScriptedChatModel([call("memory_list"), finish("the essay")])
    write = AgentStepExecutor(
        Step(id="write", instructions="Write."), model=writer_model, memory=memory
    )
    first = outline.node("plan")
    first.add_next(write.node())
    result = WorkGraph(start_nodes=[first]).run(topic="otters")
    assert result == "the essay"
    assert memory.get_value("input:outline.topic") == "otters"
    assert memory.get("input:outline.topic").source == "outline"  # type: ignore[union-attr]
    assert memory.get_value("input:write.plan") == ["intro", "end"]
    assert memory.get_value("step:outline") == ["intro", "end"]
    assert memory.get_value("step:write") == "the essay"
    listing = json.loads(tool_results(writer_model.calls[1])[0])
    assert "step:outline" in [e["key"] for e in listing["entries"]]
    assert "- input:write.plan" in (writer_model.calls[0].messages[1].content or "")


def test_positional_inputs_are_numbered_and_none_is_skipped() -> None:
    memory = AgentMemory()
    node = AgentStepExecutor(
        Step(id="n", instructions="."), model=ScriptedChatModel([finish(1)]), memory=memory
    ).node()
    WorkGraph(start_nodes=[node]).run("first", None)
    assert memory.get_value("input:n.arg0") == "first"
    assert not memory.has("input:n.arg1")


def test_a_failed_step_fails_the_node() -> None:
    node = AgentStepExecutor(
        Step(id="n", instructions="."), model=ScriptedChatModel([]), memory=AgentMemory()
    ).node()
    with pytest.raises(NodeError, match="agent step 'n' failed"):
        WorkGraph(start_nodes=[node]).run()
