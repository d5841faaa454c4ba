"""The default output of a turn holds the turn's own fields, never a stored one: a group
that mixes a stored subfield with a turn-scoped one shows only the turn-scoped part."""

from __future__ import annotations

from typing import Annotated, Any, TypedDict

from weft.persist import InMemoryBackend
from weft.runtime import Input, Reducer, TurnRuntime, TurnScoped, node
from weft.store import reducers


class MemoryControl(TypedDict, total=False):
    pending_action: Annotated[dict[str, Any] | None, Reducer(reducers.merge)]
    action: Annotated[dict[str, Any] | None, TurnScoped]


class Nested(TypedDict, total=False):
    kept: Annotated[int, Reducer(reducers.replace)]
    control: MemoryControl


class State(TypedDict):
    message: Annotated[str, Input]
    session_id: Annotated[str, Input]
    response_text: Annotated[str, TurnScoped]
    memory_control: MemoryControl
    nested: Nested
    notes: Annotated[list[str], Reducer(reducers.append)]


@node(writes=["memory_control", "nested", "response_text", "notes"])
def triage(state: Any) -> dict[str, Any]:
    return {
        "memory_control": {"pending_action": {"delete": "all"}, "action": {"kind": "forget"}},
        "nested": {"kept": 7, "control": {"pending_action": {"x": 1}, "action": {"y": 2}}},
        "response_text": "sure?",
        "notes": "asked",
    }


def test_the_default_output_leaves_out_stored_subfields_of_a_mixed_group() -> None:
    with TurnRuntime(State, [triage], InMemoryBackend()) as runtime:
        output = runtime.run_turn({"message": "forget me", "session_id": "t1"})
        assert output == {
            "response_text": "sure?",
            "memory_control": {"action": {"kind": "forget"}},
            "nested": {"control": {"action": {"y": 2}}},
        }
        stored = runtime.thread_state("t1")
        assert stored["memory_control"] == {"pending_action": {"delete": "all"}}
        assert stored["nested"]["kept"] == 7


def test_an_output_named_by_the_caller_is_shown_whole() -> None:
    with TurnRuntime(State, [triage], InMemoryBackend(), output_model=["memory_control"]) as rt:
        output = rt.run_turn({"message": "forget me", "session_id": "t1"})
        assert output == {
            "memory_control": {"pending_action": {"delete": "all"}, "action": {"kind": "forget"}}
        }


def test_state_to_output_of_a_plain_dict_drops_the_stored_subfields_too() -> None:
    with TurnRuntime(State, [triage], InMemoryBackend()) as runtime:
        output = runtime.state_to_output(
            {"response_text": "ok", "memory_control": {"pending_action": {"a": 1}, "action": None}}
        )
        assert output == {"response_text": "ok", "memory_control": {"action": None}, "nested": None}
