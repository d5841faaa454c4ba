"""Traces to an OpenTelemetry collector over OTLP/HTTP: an agent whose actions run a plan
of tool calls, every run, iteration, model call and tool call a span.

Point it at any collector (the OpenTelemetry Collector, Jaeger, Tempo, Logfire ...) that
takes OTLP over HTTP; the endpoint comes from ``OTEL_EXPORTER_OTLP_ENDPOINT`` (default
``http://localhost:4318``, the collector's default; spans go to ``<endpoint>/v1/traces``):

    pip install 'weft[otel]' opentelemetry-sdk opentelemetry-exporter-otlp-proto-http
    OTEL_EXPORTER_OTLP_ENDPOINT=http://localhost:4318 .venv/bin/python examples/otlp_traces.py
"""

from __future__ import annotations

import os

from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor

import weft.telemetry
from weft.agent import Agent
from weft.calls import Plan, Tool
from weft.llm import ScriptedChatModel

FIND = '{"next_actions": [[{"type": "profile", "args": {"user": 7}}]]}'
DONE = '{"instant_response": "Ada is 36.", "task_status": "Completed"}'


def profile(user: int) -> dict[str, object]:
    """An action that runs a plan of two tool calls, the second reading the first."""
    fetch = Tool(name="fetch", fn=lambda id: {"id": id, "name": "Ada", "born": 1989})
    age = Tool(name="age", fn=lambda born: 2025 - born)
    result = Plan(
        [
            {"_tool": "fetch", "_id": "fetch-user", "id": user, "_outputPath": "†state.user"},
            {"_tool": "age", "_id": "age", "born": "†state.user.born", "_outputPath": "†state.age"},
        ]
    ).run([fetch, age])
    return {"name": result.store.value("state", "user")["name"], "age": result.output}


def main() -> None:
    endpoint = os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT", "http://localhost:4318")
    provider = TracerProvider(resource=Resource.create({"service.name": "weft-example"}))
    exporter = OTLPSpanExporter(endpoint=endpoint.rstrip("/") + "/v1/traces")
    provider.add_span_processor(BatchSpanProcessor(exporter))
    model = ScriptedChatModel(
        [
            {"content": FIND, "usage": {"input_tokens": 42, "output_tokens": 12}},
            {"content": DONE, "usage": {"input_tokens": 80, "output_tokens": 6}},
        ]
    )
    with weft.telemetry.instrument(provider):
        result = Agent(model, actor={"profile": profile}, name="librarian").run("How old is Ada?")
    provider.shutdown()  # sends what is still batched
    print(result.instant_response)
    print(f"spans sent to {endpoint}/v1/traces")


if __name__ == "__main__":
    main()
