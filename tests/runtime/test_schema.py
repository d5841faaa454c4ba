"""Reading state schemas: lifecycles, nested fields, and the mistakes found at build time."""

from __future__ import annotations

import operator
from typing import Annotated, Any, NotRequired, TypedDict

import pytest
from pydantic import BaseModel
from runtime_helpers import AgentOutput, ChatState, reply, triage

from weft.errors import SchemaError
from weft.persist import InMemoryBackend
from weft.runtime import (
    Input,
    Loaded,
    Reducer,
    StateSchema,
    Transcript,
    TurnRuntime,
    TurnScoped,
    node,
)
from weft.store import reducers


class MemoryControl(TypedDict, total=False):
    pending_action: Annotated[dict[str, Any] | None, Reducer(reducers.replace)]
    action: Annotated[dict[str, Any], TurnScoped]


class Grounded(TypedDict, total=False):
    query: str
    status: str


class MixedState(TypedDict):
    message: Annotated[str, Input]
    memory_control: MemoryControl
    grounded_lookup: Annotated[Grounded, TurnScoped]
    count: NotRequired[Annotated[int, Reducer(operator.add)]]


class PydanticState(BaseModel):
    message: Annotated[str, Input]
    session_id: Annotated[str, Input]
    history: Annotated[list[dict[str, Any]], Reducer(operator.add)] = []
    response_style: Annotated[str, TurnScoped] = "supportive"
    response_text: Annotated[str, TurnScoped] = ""


class NoLifecycle(TypedDict):
    message: Annotated[str, Input]
    mood: str


class TwoLifecycles(TypedDict):
    mood: Annotated[str, Input, TurnScoped]


class Inner(TypedDict):
    a: Annotated[int, Reducer(operator.add)]


class LoadedGroup(TypedDict):
    inner: Annotated[Inner, Loaded(lambda context, state: {})]


class BareReducer(TypedDict):
    count: Annotated[int, Reducer]


class FoldFromNothing(TypedDict):
    score: Annotated[int, TurnScoped(reducer=reducers.add)]


def lifecycles(schema: type) -> dict[str, str]:
    return {path: leaf.lifecycle for path, leaf in StateSchema(schema).leaves.items()}


def test_each_field_gets_its_lifecycle() -> None:
    assert lifecycles(ChatState) == {
        "message": "input",
        "session_id": "input",
        "user_id": "input",
        "history": "reducer",
        "transcript": "reducer",
        "session_progress.turn_count": "reducer",
        "session_progress.last_route": "reducer",
        "notes": "reducer",
        "facts": "loaded",
        "route": "turn_scoped",
        "scratchpad": "turn_scoped",
        "response_text": "turn_scoped",
        "diagnostics": "reducer",
    }


def test_a_groups_unmarked_subfields_take_its_lifecycle_last_write_wins() -> None:
    leaves = StateSchema(ChatState).leaves
    assert leaves["session_progress.turn_count"].reducer_name == "operator.add"
    assert leaves["session_progress.last_route"].reducer_name == "replace"


def test_one_group_may_mix_lifecycles_per_subfield() -> None:
    assert lifecycles(MixedState) == {
        "message": "input",
        "memory_control.pending_action": "reducer",
        "memory_control.action": "turn_scoped",
        "grounded_lookup": "turn_scoped",
        "count": "reducer",
    }


def test_a_typeddict_without_marked_subfields_is_one_field_holding_a_dict() -> None:
    schema = StateSchema(MixedState)
    assert "grounded_lookup" in schema.leaves
    assert "grounded_lookup.query" not in schema.nodes


def test_a_pydantic_model_is_a_schema_and_its_defaults_are_the_fields_defaults() -> None:
    schema = StateSchema(PydanticState)
    assert schema.leaves["response_style"].default == "supportive"
    assert schema.leaves["history"].lifecycle == "reducer"


def test_a_pydantic_schema_runs_turns() -> None:
    @node(writes=["response_text"])
    def answer(state: Any) -> dict[str, Any]:
        return {"response_text": f"{state['response_style']}: {state['message']}"}

    with TurnRuntime(PydanticState, [answer], InMemoryBackend()) as runtime:
        out = runtime.run_turn({"message": "hi", "session_id": "p"})
        assert out == {"response_style": "supportive", "response_text": "supportive: hi"}
        assert len(runtime.thread_state("p")["history"]) == 2


def test_describe_lists_every_leaf_with_its_lifecycle_and_reducer() -> None:
    text = StateSchema(ChatState).describe()
    assert "session_progress.turn_count  reducer (operator.add)" in text
    assert "route" in text


@pytest.mark.parametrize(
    ("schema", "message"),
    [
        (NoLifecycle, r"NoLifecycle\.mood has no lifecycle"),
        (TwoLifecycles, r"TwoLifecycles\.mood has 2 lifecycles"),
        (LoadedGroup, r"LoadedGroup\.inner is a group .* and Loaded"),
        (BareReducer, r"Reducer needs an argument"),
        (FoldFromNothing, r"FoldFromNothing\.score is TurnScoped with the reducer 'add' and no"),
        (TypedDict("Dotted", {"a.b": Annotated[int, Input]}), "may not contain '.'"),
        (TypedDict("Dunder", {"__v": Annotated[int, Input]}), "start with '__'"),
        (int, "is not a state schema"),
    ],
    ids=[
        "no-lifecycle",
        "two-lifecycles",
        "loaded-group",
        "bare-reducer",
        "fold-without-default",
        "dot",
        "dunder",
        "int",
    ],
)
def test_a_wrong_schema_is_a_schema_error_naming_the_field(schema: Any, message: str) -> None:
    with pytest.raises(SchemaError, match=message):
        StateSchema(schema)


def test_marker_arguments_are_checked() -> None:
    with pytest.raises(SchemaError, match="a reducer is a function"):
        Reducer("add")  # type: ignore[arg-type]
    with pytest.raises(SchemaError, match="not both"):
        TurnScoped(default=1, default_factory=int)


@pytest.mark.parametrize(
    ("writes", "message"),
    [
        (["respons_text"], r"'reply' declares .*'respons_text'.*did you mean 'response_text'"),
        (["message"], r"'reply' declares that it writes 'message', an Input field"),
    ],
)
def test_a_wrong_node_declaration_is_refused_when_the_runtime_is_built(
    writes: list[str], message: str
) -> None:
    with pytest.raises(SchemaError, match=message):
        TurnRuntime(ChatState, [triage, reply], InMemoryBackend(), writes={"reply": writes})


def test_a_node_that_declares_nothing_is_refused_when_built() -> None:
    def silent(state: Any) -> None:
        return None

    with pytest.raises(SchemaError, match=r"node 'silent' does not declare the fields it writes"):
        TurnRuntime(ChatState, [silent], InMemoryBackend())


def test_writes_naming_no_node_is_refused() -> None:
    with pytest.raises(SchemaError, match="'ghost', which is no node"):
        TurnRuntime(ChatState, [triage], InMemoryBackend(), writes={"ghost": []})


def test_an_input_model_with_a_reducer_field_is_refused() -> None:
    class BadInput(BaseModel):
        message: str
        history: list[dict[str, Any]]

    with pytest.raises(SchemaError, match="'history', which is not an Input or Loaded field"):
        TurnRuntime(ChatState, [triage], InMemoryBackend(), input_model=BadInput)


def test_an_output_model_with_a_field_the_schema_lacks_is_refused() -> None:
    class BadOutput(AgentOutput):
        mood: str = ""

    with pytest.raises(SchemaError, match="the output field 'mood'"):
        TurnRuntime(ChatState, [triage], InMemoryBackend(), output_model=BadOutput)


def test_a_transcript_field_must_be_a_reducer_field() -> None:
    with pytest.raises(SchemaError, match="transcript field 'route' must be a Reducer"):
        TurnRuntime(
            ChatState, [triage], InMemoryBackend(), transcript=Transcript(fields=("route",))
        )
