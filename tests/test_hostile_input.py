"""Wrong arguments at the public entry points: a weft error naming the argument and the fix,
raised before anything runs, never a bare TypeError, ValueError or AttributeError."""

from __future__ import annotations

import contextlib
import operator
from pathlib import Path
from typing import Annotated, Any, TypedDict

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from weft.calls import Plan, Tool
from weft.errors import (
    AgentMemoryError,
    GraphBuildError,
    GraphError,
    ModelInputError,
    PersistError,
    PlanRunError,
    PlanValidationError,
    ReducerError,
    StoreError,
    TurnError,
    ValueTypeError,
    WeftError,
)
from weft.graph import RetryPolicy, WorkGraph, WorkGraphNode
from weft.llm import ChatMessage, ToolCall
from weft.llm.messages import as_chat_messages
from weft.memory import AgentMemory, memory_tools
from weft.persist import DurableRun, InMemoryBackend, SQLiteBackend, load_store
from weft.runtime import Input, Reducer, TurnRuntime, TurnScoped, node
from weft.store import Store, register_type

FETCH = Tool(
    name="fetch",
    fn=lambda userId: {"id": userId},
    parameters={"type": "object", "properties": {"userId": {"type": "integer"}}},
)
PLAN = Plan([{"_tool": "fetch", "userId": "†input.u", "_outputPath": "†state.p"}])


# ------------------------------------------------------------------- plans of calls


@pytest.mark.parametrize("calls", [None, 5, "[]", {"_tool": "fetch"}])
def test_a_plan_of_something_that_is_not_a_list_of_calls_is_refused(calls: Any) -> None:
    with pytest.raises(PlanValidationError, match="a plan is a list of calls, not a"):
        Plan(calls)


@pytest.mark.parametrize("inputs", [[("a", 1), ("b",)], [("u", 1)], "u", 5, {1: "x"}, {"": 1}])
def test_inputs_that_are_not_a_mapping_of_names_are_refused_before_anything_runs(
    inputs: Any,
) -> None:
    store = Store()
    with pytest.raises(PlanValidationError, match=r"inputs=.*expected a mapping of input names"):
        PLAN.run([FETCH], store=store, inputs=inputs)
    assert store.last_seq == 0


@pytest.mark.parametrize("tools", [None, 5, "fetch", FETCH])
def test_tools_that_are_not_a_list_or_mapping_are_refused(tools: Any) -> None:
    with pytest.raises(PlanValidationError, match=r"tools=.*expected a list of weft.calls.Tool"):
        PLAN.run(tools, inputs={"u": 1})


@pytest.mark.parametrize("imports", ["input", 5, ["input", 3]])
def test_imports_that_are_not_a_list_of_names_are_one_problem_naming_the_call(
    imports: Any,
) -> None:
    module = Tool(name="mod", fn=lambda userId: userId, isolated=True)
    plan = Plan([{"_tool": "mod", "userId": "†input.u", "_imports": imports}])
    with pytest.raises(PlanValidationError) as caught:
        plan.run([module], inputs={"u": 1})
    assert len(caught.value.problems) == 1
    assert "call 0 (mod, id '0.mod'): _imports=" in str(caught.value)
    assert "expected a list of what the module may read" in str(caught.value)


def test_a_plan_text_nested_past_the_parser_is_a_plan_validation_error() -> None:
    with pytest.raises(PlanValidationError, match="nests too deeply"):
        Plan.from_json("[" * 100_000 + "]" * 100_000)


def test_arguments_that_do_not_fit_the_schema_name_the_call_the_tool_and_the_instance() -> None:
    plan = Plan(
        [{"_tool": "fetch", "userId": "†input.u", "_outputPath": "†state.p", "_instance": "*"}]
    )
    with pytest.raises(PlanRunError) as caught:
        plan.run([FETCH], instances={"acme": {"u": "x"}, "b": {"u": 2}})
    error = caught.value
    assert (error.call, error.tool) == ("0.fetch@acme", "fetch")
    assert str(error).startswith("call 0 (fetch, id '0.fetch@acme') on instance 'acme': ")
    assert "argument 'userId' is invalid (\"x\"): expected an integer" in str(error)


# -------------------------------------------------------------------------- graphs


@pytest.mark.parametrize(
    "build",
    [
        lambda: WorkGraph(5),
        lambda: WorkGraph(start_nodes=5),
        lambda: WorkGraph(start_nodes=WorkGraphNode(len)),
        lambda: WorkGraph("ab"),
    ],
)
def test_a_graph_of_something_that_is_not_a_list_is_a_build_error(build: Any) -> None:
    with pytest.raises(GraphBuildError, match="expected a list"):
        build()


@pytest.mark.parametrize(
    "options",
    [
        {"attempts": 0},
        {"attempts": "3"},
        {"attempts": True},
        {"backoff": -1},
        {"backoff": "1"},
        {"multiplier": float("nan")},
        {"max_backoff": float("nan")},
        {"retry_on": ValueError},
        {"retry_on": ()},
        {"retry_on": ("x",)},
    ],
)
def test_a_retry_policy_set_up_wrong_is_a_build_error(options: dict[str, Any]) -> None:
    with pytest.raises(GraphBuildError, match="RetryPolicy"):
        RetryPolicy(**options)


# ------------------------------------------------------------- models and memory


def test_messages_built_wrong_are_model_input_errors() -> None:
    with pytest.raises(ModelInputError, match="unknown chat role"):
        ChatMessage(role="bot", content="hi")  # type: ignore[arg-type]
    for messages in (ChatMessage.user("hi"), "hi", 5, {"role": "user"}):
        with pytest.raises(ModelInputError, match="must be a list of ChatMessage"):
            as_chat_messages(messages)  # type: ignore[arg-type]
    with pytest.raises(ModelInputError, match="the arguments of the tool call 't'"):
        ToolCall.create("t", {"at": object()})
    with pytest.raises(ModelInputError, match="the arguments of the tool call 't'"):
        ToolCall.create("t", {"x": float("nan")})


@pytest.mark.parametrize(
    ("raw", "error"),
    [
        ("[" * 100_000 + "]" * 100_000, "nests too deeply"),
        ('{"x": NaN}', "NaN is not a JSON number"),
        ('{"x": "\\udc80"}', "surrogates not allowed"),
        ('{"x": ' + "[" * 150 + "]" * 150 + "}", "nested more than 100 deep"),
        ({"x": float("nan")}, "the arguments of 't'.x: nan is not a JSON number"),
        ({"x": {1, 2}}, "the arguments of 't' are not JSON"),
        ({"x": [{"y": "\udc80"}]}, r"'t'.x[0].y: the text holds a lone surrogate"),
    ],
)
def test_a_models_hostile_tool_arguments_are_a_parse_error_never_a_crash(
    raw: Any, error: str
) -> None:
    call = ToolCall.parse(id="c", name="t", raw=raw)
    assert call.arguments == {}
    assert call.parse_error is not None and error in call.parse_error


@pytest.mark.parametrize("size", [0, -1, "100", 1.5, True])
def test_memory_tools_need_a_whole_positive_max_value_bytes(size: Any) -> None:
    with pytest.raises(AgentMemoryError, match=r"max_value_bytes=.*expected a whole number"):
        memory_tools(AgentMemory(Store()), max_value_bytes=size)


# ------------------------------------------------------------------- turn runtime


class State(TypedDict):
    message: Annotated[str, Input]
    session_id: Annotated[str, Input]
    history: Annotated[list[dict[str, str]], Reducer(operator.add)]
    response_text: Annotated[str, TurnScoped]


@node(writes=["response_text"])
def echo(state: Any, context: Any) -> dict[str, Any]:
    return {"response_text": f"turn {context.turn}: {state['message']}"}


@pytest.mark.parametrize("as_text", [True, False])
def test_a_turn_runtime_takes_the_path_of_a_sqlite_file_as_its_checkpointer(
    tmp_path: Path, as_text: bool
) -> None:
    path = tmp_path / "chats" / "chat.db"
    with TurnRuntime(State, [echo], str(path) if as_text else path) as runtime:
        assert runtime.run_turn({"message": "hi", "session_id": "c1"}) == {
            "response_text": "turn 1: hi"
        }
    with TurnRuntime(State, [echo], path) as runtime:  # the same file: the thread goes on
        assert runtime.run_turn({"message": "again", "session_id": "c1"})["response_text"] == (
            "turn 2: again"
        )
    with SQLiteBackend(path) as backend:
        assert load_store(backend, "c1").value("state", "history")[0]["content"] == "hi"


@pytest.mark.parametrize(
    ("options", "argument"),
    [({"checkpointer": 5}, "checkpointer=5"), ({"memory_store": "mem.db"}, "memory_store=")],
)
def test_a_turn_runtime_refuses_what_is_no_backend_when_built(
    options: dict[str, Any], argument: str, tmp_path: Path
) -> None:
    with pytest.raises(TurnError, match=argument):
        TurnRuntime(State, [echo], **{"checkpointer": tmp_path / "x.db", **options})


# ------------------------------------------------------- wrong types, at large

_junk = st.one_of(
    st.none(),
    st.integers(),
    st.floats(),
    st.text(max_size=3),
    st.binary(max_size=3),
    st.lists(st.integers(), max_size=2),
    st.dictionaries(st.text(max_size=2), st.integers(), max_size=2),
    st.builds(object),
)


@settings(max_examples=200, deadline=None)
@given(a=_junk, b=_junk, c=_junk)
def test_public_constructors_given_junk_raise_weft_errors_only(a: Any, b: Any, c: Any) -> None:
    attempts = [
        lambda: Plan(a),
        lambda: Plan([{"_tool": "fetch", "userId": a, "_outputPath": b, "_imports": c}]).run(
            [FETCH], inputs={"u": 1}
        ),
        lambda: PLAN.run(a, inputs={"u": 1}),
        lambda: PLAN.run([FETCH], inputs=a),
        lambda: WorkGraph(a),
        lambda: WorkGraph(start_nodes=a),
        lambda: RetryPolicy(attempts=a, backoff=b),
        lambda: Store().write(a, b, c),
        lambda: Store().write("state", a, b, source=c),
        lambda: Store().write_many("state", a),
        lambda: Store().delta(a),
        lambda: Store().clear(kind=a, key_prefix=b),
        lambda: ChatMessage(role=a, content=b),
        lambda: as_chat_messages(a),
        lambda: memory_tools(AgentMemory(Store()), max_value_bytes=a),
    ]
    for attempt in attempts:
        with contextlib.suppress(WeftError):
            attempt()


# ----------------------------------------- more entry points, found by fuzzing them


def test_store_entry_points_refuse_what_is_no_reducer_fork_or_registrable_type() -> None:
    with pytest.raises(StoreError, match=r"reducers=5: expected \{'kind:path': reducer\}"):
        Store(reducers=5)  # type: ignore[arg-type]
    with pytest.raises(ReducerError, match="a reducer is a function"):
        Store().declare("state", "x", [])  # type: ignore[arg-type]
    store = Store()
    fork = store.fork()
    with pytest.raises(StoreError, match=r"merge takes a list of forks and deltas.*\[fork\]"):
        store.merge(fork)  # type: ignore[arg-type]
    for cls in (5, None, int):
        with pytest.raises(ValueTypeError, match="only pydantic models and dataclasses"):
            register_type(cls)  # type: ignore[arg-type]


def test_calls_and_graph_entry_points_refuse_junk_with_their_own_errors() -> None:
    with pytest.raises(PlanValidationError, match="output_examples=None is a list"):
        Tool(name="t", fn=len, output_examples=None)  # type: ignore[arg-type]
    with pytest.raises(PlanValidationError, match=r"_id=\[\]: an id is a non-empty string"):
        Plan([{"_tool": "fetch", "_id": []}]).validate([FETCH])
    with pytest.raises(PlanValidationError, match=r"_id='a\\udc80': an id is a non-empty"):
        Plan([{"_tool": "fetch", "_id": "a\udc80"}]).validate([FETCH])
    graph = WorkGraph(start_nodes=[WorkGraphNode(len)])
    with pytest.raises(GraphError, match="is not a node of this graph"):
        graph.key_of(WorkGraphNode(len))


@pytest.mark.parametrize("thread_id", ["chat\x00", "chat\udc80"])
def test_a_thread_id_no_backend_can_keep_is_refused_on_every_backend(thread_id: str) -> None:
    with pytest.raises(PersistError, match="an id is text every backend can keep"):
        DurableRun.open(InMemoryBackend(), thread_id)


def test_a_sqlite_backend_needs_a_path() -> None:
    with pytest.raises(PersistError, match="expected the path of a SQLite file"):
        SQLiteBackend(5)  # type: ignore[arg-type]


@pytest.mark.parametrize("paths", [None, 5, "AB", {"A": "B"}])
def test_build_nodes_from_paths_given_no_list_of_paths_is_a_graph_build_error(paths: Any) -> None:
    from weft.graph import build_nodes_from_paths

    with pytest.raises(GraphBuildError, match="expected a list of paths"):
        build_nodes_from_paths(paths)


@pytest.mark.parametrize("kind", [5, [5], ["state", None], b"state"])
def test_store_entries_given_no_kind_is_an_invalid_key_error(kind: Any) -> None:
    from weft.errors import InvalidKeyError

    store = Store()
    store.write("state", "a", 1)
    with pytest.raises(InvalidKeyError, match="kind"):
        store.entries(kind=kind)
    with pytest.raises(InvalidKeyError, match="key_prefix"):
        store.entries(key_prefix=5)  # type: ignore[arg-type]
    assert [e.key for e in store.entries(kind=["state", "input"])] == ["state:a"]
