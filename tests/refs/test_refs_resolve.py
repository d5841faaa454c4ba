"""Resolving references: typed whole values, interpolation, fallbacks, and errors that
name the reference, the deepest part that exists and the keys found there."""

from __future__ import annotations

import dataclasses

import pytest

from weft.errors import RefError, UnresolvedReferenceError
from weft.refs import StoreScope, resolve
from weft.store import Store, register_type

SCOPE = {
    "state": {
        "currentUser": {"id": 42, "name": "Ada", "tags": ["a", "b"]},
        "count": 3,
        "run.phase": "research",
    },
    "input": {"lang": "en"},
}


def test_seed_fetch_user_profile_gets_the_typed_id() -> None:
    call = {"_tool": "fetchUserProfile", "userId": "†state.currentUser.id"}
    assert resolve(call, SCOPE) == {"_tool": "fetchUserProfile", "userId": 42}


def test_a_whole_value_reference_keeps_the_type() -> None:
    assert resolve("†state.currentUser", SCOPE) == SCOPE["state"]["currentUser"]
    assert resolve("†state.count", SCOPE) == 3


def test_references_nested_in_lists_and_dicts() -> None:
    value = {"a": ["†state.count", {"b": "$ref:input.lang"}], "c": "plain"}
    assert resolve(value, SCOPE) == {"a": [3, {"b": "en"}], "c": "plain"}


def test_index_steps_negative_from_the_end() -> None:
    assert resolve("†state.currentUser.tags[-1]", SCOPE) == "b"


def test_quoted_key_reads_a_dotted_store_path() -> None:
    assert resolve('†state["run.phase"]', SCOPE) == "research"


def test_embedded_reference_is_interpolated_as_text() -> None:
    assert resolve("user †state.currentUser.name has †state.count", SCOPE) == "user Ada has 3"


def test_embedded_non_string_is_interpolated_as_json() -> None:
    assert resolve("tags=†state.currentUser.tags", SCOPE) == 'tags=["a","b"]'


def test_fallback_takes_the_first_alternative_that_resolves() -> None:
    assert resolve("†state.missing || †input.lang", SCOPE) == "en"


def test_and_group_gives_every_value() -> None:
    assert resolve("†state.count && †input.lang", SCOPE) == [3, "en"]


def test_keys_are_never_references() -> None:
    assert resolve({"†state.count": 1}, SCOPE) == {"†state.count": 1}


def test_whole_kind_reference_is_a_dict_of_fields() -> None:
    assert resolve("†input", SCOPE) == {"lang": "en"}


def test_missing_entry_lists_what_the_kind_holds() -> None:
    with pytest.raises(UnresolvedReferenceError) as caught:
        resolve("†state.curentUser.id", SCOPE)
    error = caught.value
    assert error.reference == "†state.curentUser.id"
    assert error.deepest is None
    assert "currentUser" in str(error) and "nothing is stored at state:curentUser" in str(error)


def test_missing_key_names_the_deepest_part_and_its_keys() -> None:
    with pytest.raises(UnresolvedReferenceError) as caught:
        resolve("†state.currentUser.email", SCOPE)
    error = caught.value
    assert error.deepest == "†state.currentUser"
    assert error.keys == ("id", "name", "tags")
    assert "†state.currentUser has no key 'email'; its keys are: id, name, tags" in str(error)


def test_index_out_of_range_says_the_length() -> None:
    with pytest.raises(UnresolvedReferenceError, match="list of 2 items, so \\[5\\]"):
        resolve("†state.currentUser.tags[5]", SCOPE)


def test_a_key_on_a_list_is_refused() -> None:
    with pytest.raises(UnresolvedReferenceError, match="is a list, not an object"):
        resolve("†state.currentUser.tags.first", SCOPE)


def test_no_alternative_resolving_names_every_failure() -> None:
    with pytest.raises(UnresolvedReferenceError, match="none of the alternatives"):
        resolve("†state.a || †state.b", SCOPE)


@register_type
@dataclasses.dataclass(frozen=True)
class Profile:
    name: str


def test_resolution_reads_data_never_attributes() -> None:
    store = Store()
    store.write("state", "profile", Profile(name="Ada"))
    with pytest.raises(UnresolvedReferenceError, match="references read only into objects"):
        resolve("†state.profile.name", store)


def test_resolved_values_are_read_only() -> None:
    resolved = resolve({"user": "†state.currentUser"}, SCOPE)
    with pytest.raises(TypeError):
        resolved["user"] = 1


def test_something_that_is_no_scope_is_refused_with_a_ref_error() -> None:
    with pytest.raises(RefError, match=r"a scope is a Store, a mapping .* not a int"):
        resolve("†state.a", 42)  # type: ignore[arg-type]


def test_store_scope_reads_entries() -> None:
    store = Store()
    store.write("state", "currentUser", {"id": 7})
    assert resolve("†state.currentUser.id", StoreScope(store)) == 7
    assert resolve("†state.currentUser.id", store) == 7
