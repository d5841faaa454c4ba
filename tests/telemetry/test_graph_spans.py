"""A WorkGraph run as spans: the run, each node under it, errors on failed nodes."""

from __future__ import annotations

import pytest
from opentelemetry import trace
from opentelemetry.trace import StatusCode
from trace_helpers import Traced

from weft.errors import NodeError
from weft.graph import ResultPassDownMode, WorkGraph, WorkGraphNode, WorkGraphStopFlags
from weft.store import Store

R = ResultPassDownMode


def chain() -> WorkGraph:
    first = WorkGraphNode(lambda: 1, R.ResultAsFirstArg, id="fetch")
    first.add_next(WorkGraphNode(lambda x: x + 1, id="double"))
    return WorkGraph(start_nodes=[first])


def test_each_node_is_a_span_under_the_runs_span(traced: Traced) -> None:
    assert chain().run(run_id="job-1", store=Store()) == 2
    assert sorted(traced.names()) == ["graph job-1", "node double", "node fetch"]
    assert traced.parent_name("node fetch") == "graph job-1"
    assert traced.parent_name("node double") == "graph job-1"
    assert traced.parent_name("graph job-1") is None
    assert traced.attrs("graph job-1") == {
        "weft.run_id": "job-1",
        "weft.run.kind": "graph",
        "weft.run.status": "finished",
    }
    assert traced.attrs("node fetch") == {
        "weft.run_id": "job-1",
        "weft.unit": "fetch#0",
        "weft.unit.kind": "node",
        "weft.label": "fetch",
        "weft.unit.status": "finished",
    }
    fetch, double = traced.one("node fetch"), traced.one("node double")
    assert fetch.end_time is not None and double.start_time is not None
    assert fetch.end_time <= double.start_time  # in the order they ran
    assert len({span.context.trace_id for span in traced.spans}) == 1


def test_a_run_without_a_store_or_run_id_is_traced_too(traced: Traced) -> None:
    assert chain().run() == 2
    run = next(span for span in traced.spans if span.name.startswith("graph run-"))
    assert traced.parent(traced.one("node fetch")) is run


async def test_an_async_run_nests_the_same_way(traced: Traced) -> None:
    async def slow(x: int) -> int:
        return x * 10

    first = WorkGraphNode(lambda: 1, R.ResultAsFirstArg, id="a")
    first.add_next(WorkGraphNode(slow, id="b"))
    first.add_next(WorkGraphNode(slow, id="c"))
    assert await WorkGraph(start_nodes=[first]).arun(run_id="fan", store=Store()) == [10, 10]
    for name in ("node a", "node b", "node c"):
        assert traced.parent_name(name) == "graph fan"


def test_a_failed_node_and_its_run_have_error_status(traced: Traced) -> None:
    def boom(x: int) -> int:
        raise ValueError(f"bad input {x}")

    first = WorkGraphNode(lambda: 1, R.ResultAsFirstArg, id="fetch")
    first.add_next(WorkGraphNode(boom, id="parse"))
    with pytest.raises(NodeError):
        WorkGraph(start_nodes=[first]).run(run_id="broken", store=Store())
    parse = traced.one("node parse")
    assert parse.status.status_code is StatusCode.ERROR
    assert parse.status.description == "ValueError: bad input 1"
    assert parse.attributes is not None and parse.attributes["error.type"] == "ValueError"
    assert [e.name for e in parse.events] == ["exception"]
    run = traced.one("graph broken")
    assert run.status.status_code is StatusCode.ERROR
    assert traced.one("node fetch").status.status_code is StatusCode.UNSET


def test_an_aborted_branch_shows_its_skipped_node(traced: Traced) -> None:
    first = WorkGraphNode(lambda: (WorkGraphStopFlags.AbortBranch, None), id="a")
    first.add_next(WorkGraphNode(lambda: None, id="b"))
    WorkGraph(start_nodes=[first]).run(run_id="cut", store=Store())
    assert traced.attrs("node a")["weft.flag"] == "AbortBranch"
    skipped = traced.attrs("node b")
    assert skipped["weft.unit.status"] == "skipped"
    assert skipped["weft.skipped.reason"] == "aborted"
    assert traced.parent_name("node b") == "graph cut"


def test_a_run_inside_a_span_of_the_callers_is_its_child(traced: Traced) -> None:
    tracer = traced.provider.get_tracer("app")
    with tracer.start_as_current_span("request"):
        chain().run(run_id="inner", store=Store())
    assert traced.parent_name("graph inner") == "request"


def test_after_stop_nothing_is_traced_and_no_notes_are_made() -> None:
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    import weft.telemetry

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracing = weft.telemetry.instrument(provider)
    store = Store()
    chain().run(run_id="on", store=store)
    assert any(e.op == "note" for e in store.events())  # the log has what the trace has
    tracing.stop()
    assert not tracing.on
    quiet = Store()
    chain().run(run_id="off", store=quiet)
    assert [s.name for s in exporter.get_finished_spans()] == [
        "node fetch",
        "node double",
        "graph on",
    ]
    assert not any(e.op == "note" for e in quiet.events())  # unwatched: no note at all


def test_a_tracer_provider_that_is_not_one_is_refused() -> None:
    import weft.telemetry
    from weft.errors import TelemetryError

    with pytest.raises(TelemetryError, match="not an OpenTelemetry tracer provider"):
        weft.telemetry.instrument(tracer_provider="console")
    assert trace.get_tracer_provider() is not None


def test_a_paused_run_ends_its_spans_as_paused_and_the_answer_is_a_new_run_span(
    traced: Traced,
) -> None:
    from weft.graph import Paused, interrupt

    def review(text: str) -> str:
        return text if interrupt({"approve?": text}) == "yes" else "(withheld)"

    first = WorkGraphNode(lambda: "draft", R.ResultAsFirstArg, id="draft")
    first.add_next(WorkGraphNode(review, id="review"))
    graph, store = WorkGraph(start_nodes=[first]), Store()
    paused = graph.run(run_id="post-1", store=store)
    assert isinstance(paused, Paused)
    assert traced.attrs("graph post-1")["weft.run.status"] == "paused"
    assert traced.attrs("node review")["weft.unit.status"] == "paused"
    assert traced.one("node review").status.status_code is StatusCode.UNSET
    traced.exporter.clear()
    assert graph.run(run_id="post-1", store=store, answers=paused.answer("yes")) == "draft"
    assert traced.attrs("graph post-1")["weft.run.status"] == "finished"
    assert traced.attrs("node draft")["weft.skipped.reason"] == "recorded"
    assert traced.attrs("node review")["weft.unit.status"] == "finished"
