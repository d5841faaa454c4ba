"""The server-sent events decoder: the standard's rules, and a round trip for any events."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from weft.llm.sse import ServerSentEvent, decode_lines


def test_data_lines_join_with_newlines_and_a_blank_line_ends_the_event() -> None:
    lines = ["event: add", "data: one", "data:two", "", "data: three", ""]
    assert list(decode_lines(lines)) == [
        ServerSentEvent("add", "one\ntwo"),
        ServerSentEvent("message", "three"),
    ]


def test_comments_retry_and_unknown_fields_are_skipped() -> None:
    lines = [": keep-alive", "retry: 3000", "foo: bar", "data: x", ": between", ""]
    assert list(decode_lines(lines)) == [ServerSentEvent("message", "x")]


def test_only_one_space_after_the_colon_is_dropped() -> None:
    assert list(decode_lines(["data:  two spaces", ""])) == [ServerSentEvent(data=" two spaces")]


def test_an_event_without_data_is_not_dispatched_and_its_name_does_not_leak() -> None:
    lines = ["event: lonely", "", "data: d", ""]
    assert list(decode_lines(lines)) == [ServerSentEvent("message", "d")]


def test_an_empty_data_field_is_an_event_with_empty_data() -> None:
    assert list(decode_lines(["data:", ""])) == [ServerSentEvent(data="")]


def test_the_id_is_kept_for_later_events() -> None:
    events = list(decode_lines(["id: 7", "data: a", "", "data: b", ""]))
    assert [event.id for event in events] == ["7", "7"]


def test_a_byte_order_mark_at_the_start_is_ignored() -> None:
    assert list(decode_lines(["\ufeffdata: x", ""])) == [ServerSentEvent(data="x")]


def test_a_last_event_without_its_blank_line_is_still_delivered() -> None:
    assert list(decode_lines(["data: [DONE]"])) == [ServerSentEvent(data="[DONE]")]


names = st.text(st.characters(blacklist_characters="\r\n", blacklist_categories=["Cs"]), min_size=1)
data = st.lists(
    st.text(st.characters(blacklist_characters="\r\n", blacklist_categories=["Cs"])), min_size=1
)


@settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(names, data)))
def test_any_events_survive_a_round_trip(events: list[tuple[str, list[str]]]) -> None:
    lines: list[str] = []
    for name, parts in events:
        lines.append(f"event: {name}")
        lines.extend(f"data: {part}" for part in parts)
        lines.append("")
    decoded = list(decode_lines(lines))
    assert [(e.event, e.data) for e in decoded] == [
        (name if name else "message", "\n".join(parts)) for name, parts in events
    ]
