"""Property tests: no input makes the parsers hang or raise anything but weft's own
errors, and a reference's canonical text parses back to the same reference."""

from __future__ import annotations

import contextlib

from hypothesis import given, settings
from hypothesis import strategies as st

from weft.errors import ReferenceSyntaxError
from weft.refs import Expression, OutputPath, Reference
from weft.refs.parse import parse_template, parse_value_string
from weft.store import KINDS

ALPHABET = st.sampled_from(list("†$ref:stateinpu.[]-0123456789\"'\\|&() _xé"))
TEXT = st.text(ALPHABET, max_size=60) | st.text(max_size=60)
NAMES = st.text(st.sampled_from(list("abcXY_-09é")), min_size=1, max_size=8)
KEYS = NAMES | st.text(max_size=8)
STEPS = st.lists(KEYS | st.integers(-(10**6), 10**6), max_size=5)


@settings(max_examples=400, deadline=None)
@given(TEXT)
def test_reference_parser_raises_only_its_own_error(text: str) -> None:
    with contextlib.suppress(ReferenceSyntaxError):
        Reference.parse(text)


@settings(max_examples=400, deadline=None)
@given(TEXT)
def test_expression_parser_raises_only_its_own_error(text: str) -> None:
    with contextlib.suppress(ReferenceSyntaxError):
        Expression.parse(text)


@settings(max_examples=400, deadline=None)
@given(TEXT)
def test_output_path_parser_raises_only_its_own_error(text: str) -> None:
    with contextlib.suppress(ReferenceSyntaxError):
        OutputPath.parse(text)


@settings(max_examples=400, deadline=None)
@given(TEXT)
def test_string_values_raise_only_their_own_error(text: str) -> None:
    try:
        parse_value_string(text)
        parse_template(text)
    except ReferenceSyntaxError:
        pass


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(KINDS), KEYS, STEPS)
def test_canonical_text_round_trips(kind: str, field: str, path: list[str | int]) -> None:
    ref = Reference(kind, field, tuple(path))
    assert Reference.parse(ref.text) == ref
    assert Reference.parse(ref.text.replace("†", "$ref:", 1)) == ref


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(["state", "shared"]), KEYS, STEPS)
def test_output_targets_round_trip(kind: str, field: str, path: list[str | int]) -> None:
    text = Reference(kind, field, tuple(path)).text
    out = OutputPath.parse(f"{text}:push || {text}")
    assert OutputPath.parse(out.text) == out


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=40))
def test_text_without_sigils_is_kept_as_it_is(text: str) -> None:
    if "†" not in text and "$ref:" not in text:
        assert parse_value_string(text) == text
