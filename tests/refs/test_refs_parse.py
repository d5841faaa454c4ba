"""The reference grammar: kinds, steps, quoting, indices, escapes, precedence, errors."""

from __future__ import annotations

import pytest

from weft.errors import ReferenceSyntaxError
from weft.refs import Expression, Reference
from weft.refs.parse import parse_template, parse_value_string


def test_seed_reference_is_kind_then_field_then_path() -> None:
    ref = Reference.parse("†state.currentUser.id")
    assert (ref.kind, ref.field, ref.path) == ("state", "currentUser", ("id",))


def test_ascii_spelling_means_the_same() -> None:
    assert Reference.parse("$ref:state.currentUser.id") == Reference.parse("†state.currentUser.id")


def test_index_steps_and_negative_indices() -> None:
    ref = Reference.parse("†state.items[0].tags[-1]")
    assert ref.path == (0, "tags", -1)


def test_quoted_key_reaches_a_store_path_with_dots() -> None:
    ref = Reference.parse('†state["run.phase"]')
    assert ref.field == "run.phase"


def test_single_quoted_key_with_escapes() -> None:
    ref = Reference.parse("†state.cfg['it\\'s \\\\ here']")
    assert ref.path == ("it's \\ here",)


def test_whole_kind_reference_has_no_field() -> None:
    assert Reference.parse("†input") == Reference("input")


def test_canonical_text_uses_the_dagger_and_quotes_odd_keys() -> None:
    ref = Reference.parse('$ref:state["a b"].x[2]')
    assert ref.text == '†state["a b"].x[2]'
    assert Reference.parse(ref.text) == ref


@pytest.mark.parametrize(
    ("text", "where"),
    [
        ("†stat.x", "unknown kind 'stat'"),
        ("†state.", "'.' must be followed by a name"),
        ("†state[0]", "names a field, not an index"),
        ("†state.x[abc]", "'[' starts an index"),
        ('†state["open', "not closed"),
        ("†state.x y", "one reference only"),
        ("state.x", "starting with '†' or '$ref:'"),
        ("†state.x[" + "9" * 30 + "]", "at most 18 digits"),
    ],
)
def test_malformed_references_say_what_and_where(text: str, where: str) -> None:
    with pytest.raises(ReferenceSyntaxError) as caught:
        Reference.parse(text)
    assert where in str(caught.value)
    assert caught.value.text == text
    assert caught.value.position is not None


def test_and_binds_tighter_than_or() -> None:
    expr = Expression.parse("†state.a && †state.b || †input.c")
    assert [[r.text for r in group] for group in expr.alternatives] == [
        ["†state.a", "†state.b"],
        ["†input.c"],
    ]


def test_parentheses_are_refused_with_the_precedence_rule() -> None:
    with pytest.raises(ReferenceSyntaxError, match="binds tighter"):
        Expression.parse("(†state.a || †state.b)")


def test_doubled_dagger_is_a_literal_dagger() -> None:
    assert parse_value_string("footnote††") == "footnote†"


def test_doubled_ascii_sigil_is_a_literal_sigil() -> None:
    assert parse_value_string("see $$ref:state.x") == "see $ref:state.x"


def test_whole_value_is_an_expression() -> None:
    assert isinstance(parse_value_string("  †state.a || †state.b "), Expression)


def test_text_with_references_is_a_template() -> None:
    parts = parse_template("Hi †state.user.name, bye.")
    assert parts == ("Hi ", Reference("state", "user", ("name",)), ", bye.")


def test_a_reference_in_text_stops_before_a_final_dot() -> None:
    parts = parse_template("Hi †state.user.name.")
    assert parts[-1] == "."


def test_a_sigil_that_starts_no_reference_in_text_is_an_error() -> None:
    with pytest.raises(ReferenceSyntaxError, match="a kind must follow the sigil"):
        parse_value_string("price: 5† per unit")
    with pytest.raises(ReferenceSyntaxError, match="unknown kind 'dagger'"):
        parse_value_string("a †dagger in text")


def test_operators_inside_text_are_plain_text() -> None:
    parts = parse_template("†state.a || fallback")
    assert parts == (Reference("state", "a"), " || fallback")


def test_overlap_is_a_prefix_relation() -> None:
    user = Reference.parse("†state.user")
    assert user.overlaps(Reference.parse("†state.user.name"))
    assert Reference.parse("†state.user.name").overlaps(user)
    assert not Reference.parse("†state.user.name").overlaps(Reference.parse("†state.user.id"))
    assert not user.overlaps(Reference.parse("†input.user"))


def test_two_indices_may_be_the_same_item() -> None:
    assert Reference.parse("†state.x[-1]").overlaps(Reference.parse("†state.x[2]"))
