"""The three views: the graph input, the internal TurnState, the output; and node deltas."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel
from runtime_helpers import ChatContext, ChatState, say

from weft.errors import ChannelOwnershipError, NodeError, TurnError
from weft.persist import InMemoryBackend
from weft.runtime import StateSchema, TurnRuntime, TurnState, node
from weft.store import DELETE, MISSING


def view(values: dict[str, Any]) -> TurnState:
    schema = StateSchema(ChatState)
    return TurnState(schema, lambda leaf: values.get(leaf.path, MISSING))


def runtime_with(*nodes: Any, **kwargs: Any) -> TurnRuntime:
    kwargs.setdefault("context", ChatContext())
    return TurnRuntime(ChatState, list(nodes), InMemoryBackend(), **kwargs)


def test_a_group_reads_as_a_dict_and_its_subfields_by_path() -> None:
    state = view({"session_progress.turn_count": 3})
    assert state["session_progress"] == {"turn_count": 3}
    assert state["session_progress.turn_count"] == 3


def test_a_field_with_no_value_reads_as_its_default() -> None:
    state = view({})
    assert (state["route"], state["notes"], state.get("scratchpad")) == ("none", [], None)


def test_a_field_with_neither_value_nor_default_is_a_key_error_naming_it() -> None:
    with pytest.raises(KeyError, match="'scratchpad' has no value yet this turn"):
        view({})["scratchpad"]


def test_a_name_that_is_no_field_is_a_key_error_listing_the_fields() -> None:
    with pytest.raises(KeyError, match="'mood' is not a field of the state schema ChatState"):
        view({})["mood"]


def test_iterating_gives_the_fields_that_have_a_value() -> None:
    state = view({"message": "hi"})
    assert list(state) == ["message", "user_id", "session_progress", "notes", "facts", "route"]


def test_build_initial_state_fills_input_defaults_and_keeps_supplied_loaded_fields() -> None:
    with runtime_with(node(writes=[])(lambda s: None)) as runtime:
        initial = runtime.build_initial_state(say("hi", "t1", facts=["given"]))
    assert initial == {"message": "hi", "session_id": "t1", "user_id": None, "facts": ["given"]}


def test_an_input_that_writes_a_reducer_field_names_the_caller() -> None:
    with runtime_with(node(writes=[])(lambda s: None)) as runtime:
        with pytest.raises(ChannelOwnershipError, match="the caller wrote 'history'") as caught:
            runtime.run_turn(say("hi", "t1", history=[]))
        assert caught.value.writer == "the caller"


def test_an_input_with_an_unknown_key_names_the_caller_and_the_key() -> None:
    with (
        runtime_with(node(writes=[])(lambda s: None)) as runtime,
        pytest.raises(ChannelOwnershipError, match="the caller wrote 'mesage'"),
    ):
        runtime.run_turn({"mesage": "hi", "session_id": "t1"})


def test_a_turn_without_a_thread_id_is_refused() -> None:
    with (
        runtime_with(node(writes=[])(lambda s: None)) as runtime,
        pytest.raises(TurnError, match="a turn needs a thread id"),
    ):
        runtime.run_turn({"message": "hi", "session_id": ""})


def test_thread_id_may_be_given_apart_from_the_input() -> None:
    with runtime_with(node(writes=[])(lambda s: None)) as runtime:
        runtime.run_turn({"message": "hi", "session_id": "ignored"}, thread_id="explicit")
        assert runtime.turns("explicit") == 1


def test_state_to_output_reads_a_plain_dict_too() -> None:
    with runtime_with(node(writes=[])(lambda s: None)) as runtime:
        out = runtime.state_to_output({"route": "chat", "response_text": "hi"})
    assert out == {
        "route": "chat",
        "scratchpad": None,
        "response_text": "hi",
        "diagnostics": None,
    }


def test_a_group_takes_a_nested_dict_or_a_dotted_path() -> None:
    @node(writes=["session_progress"])
    def both(state: Any) -> dict[str, Any]:
        return {"session_progress": {"last_route": "a"}, "session_progress.turn_count": 10}

    with runtime_with(both) as runtime:
        runtime.run_turn(say("hi", "t1"))
        assert runtime.thread_state("t1")["session_progress"] == {
            "turn_count": 11,
            "last_route": "a",
        }


def test_declaring_one_subfield_does_not_own_its_siblings() -> None:
    @node(writes=["session_progress.last_route"])
    def counts(state: Any) -> dict[str, Any]:
        return {"session_progress": {"turn_count": 5}}

    with (
        runtime_with(counts) as runtime,
        pytest.raises(ChannelOwnershipError, match=r"'session_progress\.turn_count'"),
    ):
        runtime.run_turn(say("hi", "t1"))


def test_a_group_written_with_a_non_dict_is_an_error_naming_the_group() -> None:
    @node(writes=["session_progress"])
    def flat(state: Any) -> dict[str, Any]:
        return {"session_progress": 3}

    with (
        runtime_with(flat) as runtime,
        pytest.raises(ChannelOwnershipError, match="a group of the schema ChatState"),
    ):
        runtime.run_turn(say("hi", "t1"))


def test_a_node_returning_something_else_than_a_delta_is_a_turn_error() -> None:
    @node(writes=["route"])
    def listy(state: Any) -> list[str]:
        return ["route"]

    with runtime_with(listy) as runtime, pytest.raises(TurnError, match="returned a list"):
        runtime.run_turn(say("hi", "t1"))


def test_delete_as_a_whole_field_is_refused_with_the_way_to_delete_a_key() -> None:
    @node(writes=["diagnostics"])
    def wipe(state: Any) -> dict[str, Any]:
        return {"diagnostics": DELETE}

    with runtime_with(wipe) as runtime, pytest.raises(TurnError, match="DELETE removes one key"):
        runtime.run_turn(say("hi", "t1"))


def test_state_values_are_read_only() -> None:
    @node(writes=["response_text"])
    def mutate(state: Any) -> dict[str, Any]:
        state["notes"].append("sneaky")
        return {}

    with runtime_with(mutate) as runtime, pytest.raises(NodeError, match="read-only"):
        runtime.run_turn(say("hi", "t1"))


def test_a_pydantic_value_in_a_delta_is_stored_as_its_dict() -> None:
    class Crisis(BaseModel):
        level: int
        reason: str

    @node(writes=["diagnostics"])
    def gate(state: Any) -> dict[str, Any]:
        return {"diagnostics": {"crisis": Crisis(level=0, reason="none")}}

    with runtime_with(gate) as runtime:
        out = runtime.run_turn(say("hi", "t1"))
    assert out["diagnostics"]["crisis"] == {"level": 0, "reason": "none"}


def test_a_node_with_one_parameter_gets_only_the_state() -> None:
    @node(writes=["response_text"])
    def plain(state: Any) -> dict[str, Any]:
        return {"response_text": state["message"].upper()}

    with runtime_with(plain) as runtime:
        assert runtime.run_turn(say("hi", "t1"))["response_text"] == "HI"


def test_a_turn_scoped_field_with_a_reducer_folds_the_turns_writes() -> None:
    from typing import Annotated, TypedDict

    from weft.runtime import Input, TurnScoped
    from weft.store import reducers

    steps_state = TypedDict(  # noqa: UP013 (a local schema: the functional syntax)
        "Steps",
        {
            "message": Annotated[str, Input],
            "session_id": Annotated[str, Input],
            "steps": Annotated[list[str], TurnScoped(reducer=reducers.append)],
        },
    )

    seen: list[Any] = []

    @node(writes=["steps"])
    def one(state: Any) -> dict[str, Any]:
        seen.append(state.get("steps"))
        return {"steps": "one"}

    @node(writes=["steps"])
    def two(state: Any) -> dict[str, Any]:
        return {"steps": "two"}

    with TurnRuntime(steps_state, [one, two], InMemoryBackend(), output_model=["steps"]) as rt:
        assert rt.run_turn(say("a", "t1")) == {"steps": ["one", "two"]}
        assert rt.run_turn(say("b", "t1")) == {"steps": ["one", "two"]}
    assert seen == [None, None]  # no value before the turn's first write, every turn


def test_the_transcript_stamps_fields_onto_the_assistant_entry() -> None:
    from runtime_helpers import reply, triage

    from weft.runtime import Transcript

    transcript = Transcript(stamp=("route",))
    with runtime_with(triage, reply, transcript=transcript) as runtime:
        runtime.run_turn(say("hi", "t1"))
        history = runtime.thread_state("t1")["history"]
    assert history == [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": "reply 1 to hi", "route": "chat"},
    ]
