"""Output paths: the seed's three forms, methods, the store's reducers, schemas, choices."""

from __future__ import annotations

import pytest

from weft.errors import OutputPathError, ReferenceSyntaxError
from weft.refs import ChosenPath, OutputPath
from weft.store import DELETE, Store, reducers


def test_regular_path_sets_a_value_inside_a_field() -> None:
    store = Store()
    OutputPath.parse("†state.user.summary").write(store, "short")
    assert store.value("state", "user") == {"summary": "short"}


def test_the_state_prefix_is_optional() -> None:
    assert OutputPath.parse("user.summary") == OutputPath.parse("†state.user.summary")


def test_a_bare_path_named_like_a_kind_is_refused() -> None:
    with pytest.raises(ReferenceSyntaxError, match=r"write †state.x to mean the kind state"):
        OutputPath.parse("state.x")


def test_alternatives_write_the_first_the_schema_accepts() -> None:
    schema = {
        "type": "object",
        "properties": {
            "summary": {
                "type": "object",
                "properties": {"text": {"type": "string"}, "json": {"type": "object"}},
            }
        },
    }
    out = OutputPath.parse("†state.summary.text || †state.summary.json")
    store = Store()
    written = out.write(store, {"k": 1}, state_schema=schema)
    assert [t.text for t in written] == ["†state.summary.json"]
    out.write(store, "plain", state_schema=schema)
    assert store.value("state", "summary") == {"json": {"k": 1}, "text": "plain"}


def test_no_alternative_accepting_is_an_error_listing_each() -> None:
    schema = {"properties": {"a": {"type": "string"}, "b": {"type": "integer"}}}
    with pytest.raises(OutputPathError, match=r"alternative 1: .*alternative 2"):
        OutputPath.parse("†state.a || †state.b").write(Store(), [1], state_schema=schema)


def test_the_tool_names_its_alternative_with_chosen_path() -> None:
    store = Store()
    out = OutputPath.parse("†state.success || †state.failure")
    out.write(store, ChosenPath("$ref:state.failure", {"reason": "timeout"}))
    assert store.value("state", "failure") == {"reason": "timeout"}
    assert not store.has("state", "success")


def test_the_tool_names_its_alternative_in_a_json_result() -> None:
    store = Store()
    out = OutputPath.parse("†state.success || †state.failure")
    out.write(store, {"_outputPath": "†state.failure", "reason": "timeout"})
    assert store.value("state", "failure") == {"reason": "timeout"}


def test_a_chosen_path_outside_the_alternatives_is_refused() -> None:
    out = OutputPath.parse("†state.success || †state.failure")
    with pytest.raises(OutputPathError, match="not one of the alternatives"):
        out.write(Store(), ChosenPath("†state.other", 1))


def test_fan_out_writes_every_path() -> None:
    store = Store()
    OutputPath.parse("†state.user.profile.summary && †state.audit.log.summary").write(store, "s")
    assert store.value("state", "user") == {"profile": {"summary": "s"}}
    assert store.value("state", "audit") == {"log": {"summary": "s"}}


def test_fan_out_is_all_or_nothing() -> None:
    store = Store()
    store.write("state", "audit", "not an object")
    out = OutputPath.parse("†state.user.summary && †state.audit.summary")
    with pytest.raises(OutputPathError, match="not an object"):
        out.write(store, "s")
    assert not store.has("state", "user")
    assert store.value("state", "audit") == "not an object"


def test_push_through_a_declared_append_reducer_logs_the_item() -> None:
    store = Store(reducers={"state:log": reducers.append})
    out = OutputPath.parse("†state.log:push")
    out.write(store, "a")
    out.write(store, ["b", "c"])
    assert store.value("state", "log") == ["a", ["b", "c"]]
    assert store.events()[-1].value == ["b", "c"]


def test_push_on_an_undeclared_field_appends_explicitly() -> None:
    store = Store()
    OutputPath.parse("†state.log:push").write(store, 1)
    OutputPath.parse("†state.log:push").write(store, 2)
    assert store.value("state", "log") == [1, 2]


def test_concat_extends_and_merge_merges() -> None:
    store = Store()
    OutputPath.parse("†state.items:concat").write(store, [1, 2])
    OutputPath.parse("†state.items:concat").write(store, [3])
    OutputPath.parse("†state.cfg:merge").write(store, {"a": 1, "b": 2})
    OutputPath.parse("†state.cfg:merge").write(store, {"b": DELETE, "c": 3})
    assert store.value("state", "items") == [1, 2, 3]
    assert store.value("state", "cfg") == {"a": 1, "c": 3}


def test_a_method_against_a_different_declared_reducer_is_refused() -> None:
    store = Store(reducers={"state:log": reducers.append})
    with pytest.raises(OutputPathError, match=r"declares the reducer 'append'.*:push"):
        OutputPath.parse("†state.log:concat").write(store, [1])


def test_set_replaces_even_a_reduced_field() -> None:
    store = Store(reducers={"state:log": reducers.append})
    store.write("state", "log", "old")
    OutputPath.parse("†state.log").write(store, ["fresh"])
    assert store.value("state", "log") == ["fresh"]


def test_push_inside_a_field() -> None:
    store = Store()
    store.write("state", "user", {"name": "Ada"})
    OutputPath.parse("†state.user.tags:push").write(store, "new")
    assert store.value("state", "user") == {"name": "Ada", "tags": ["new"]}


def test_a_push_onto_a_non_list_is_refused_and_writes_nothing() -> None:
    store = Store()
    store.write("state", "x", {"a": 1})
    with pytest.raises(OutputPathError, match="append needs a list"):
        OutputPath.parse("†state.x:push").write(store, 1)
    assert store.value("state", "x") == {"a": 1}


def test_writes_record_the_source() -> None:
    store = Store()
    OutputPath.parse("†state.x").write(store, 1, source="3.fetch")
    assert store.get("state", "x").source == "3.fetch"  # type: ignore[union-attr]


def test_tool_calls_cannot_write_executor_or_caller_kinds() -> None:
    for text in ("†task.a", "†step.a", "†input.a"):
        with pytest.raises(ReferenceSyntaxError, match="write state and shared only"):
            OutputPath.parse(text)


def test_shared_is_writable() -> None:
    store = Store()
    OutputPath.parse("†shared.top_source").write(store, "https://example.org")
    assert store.value("shared", "top_source") == "https://example.org"


def test_unknown_method_is_a_syntax_error() -> None:
    with pytest.raises(ReferenceSyntaxError, match="unknown write method 'pop'"):
        OutputPath.parse("†state.x:pop")


def test_canonical_text_omits_set() -> None:
    out = OutputPath.parse("$ref:state.a:set && b:push || †shared.c")
    assert out.text == "†state.a && †state.b:push || †shared.c"


def test_a_value_the_store_cannot_keep_writes_nothing() -> None:
    store = Store()
    with pytest.raises(OutputPathError, match="nothing was written"):
        OutputPath.parse("†state.a && †state.b").write(store, object())
    assert len(store) == 0
