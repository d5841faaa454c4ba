"""examples/otlp_traces.py exports over OTLP/HTTP, with the real exporter, to a small
collector listening on a local socket that decodes the protobuf it is sent."""

from __future__ import annotations

import gzip
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "otlp_traces.py"


class Collector(ThreadingHTTPServer):
    """Takes OTLP/HTTP trace exports (protobuf) and keeps every span it was sent."""

    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.spans: list[Any] = []
        self.paths: list[str] = []
        self.content_types: list[str] = []

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


class _Handler(BaseHTTPRequestHandler):
    server: Collector

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        if self.headers.get("Content-Encoding") == "gzip":
            body = gzip.decompress(body)
        request = ExportTraceServiceRequest()
        request.ParseFromString(body)
        self.server.paths.append(self.path)
        self.server.content_types.append(self.headers.get("Content-Type", ""))
        for resource_spans in request.resource_spans:
            for scope_spans in resource_spans.scope_spans:
                self.server.spans.extend(scope_spans.spans)
        reply = ExportTraceServiceResponse().SerializeToString()
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", str(len(reply)))
        self.end_headers()
        self.wfile.write(reply)

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture
def collector() -> Iterator[Collector]:
    server = Collector()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


def attributes(span: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for kv in span.attributes:
        value = kv.value
        which = value.WhichOneof("value")
        out[kv.key] = (
            [v.string_value for v in value.array_value.values]
            if which == "array_value"
            else getattr(value, which)
        )
    return out


def test_the_example_sends_its_spans_to_the_collector(collector: Collector) -> None:
    env = {**os.environ, "OTEL_EXPORTER_OTLP_ENDPOINT": collector.endpoint}
    done = subprocess.run(
        [sys.executable, str(EXAMPLE)],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "Ada is 36." in done.stdout
    assert set(collector.paths) == {"/v1/traces"}
    assert set(collector.content_types) == {"application/x-protobuf"}
    by_name = {span.name: span for span in collector.spans}
    assert {
        "invoke_agent librarian",
        "iteration 0",
        "iteration 1",
        "execute_tool profile",
        "execute_tool fetch",
        "execute_tool age",
        "node fetch-user",
        "node age",
    } <= set(by_name)
    by_id = {span.span_id: span for span in collector.spans}
    agent = by_name["invoke_agent librarian"]
    assert by_id[by_name["iteration 0"].parent_span_id] is agent
    assert by_id[by_name["execute_tool fetch"].parent_span_id] is by_name["node fetch-user"]
    plan = by_id[by_name["node fetch-user"].parent_span_id]
    assert plan.name.startswith("graph ")
    assert by_id[plan.parent_span_id] is by_name["execute_tool profile"]  # the action's plan
    assert by_id[by_name["execute_tool profile"].parent_span_id] is by_name["iteration 0"]
    chats = [span for span in collector.spans if span.name.startswith("chat ")]
    assert len(chats) == 2
    assert {attributes(c)["gen_ai.usage.input_tokens"] for c in chats} == {42, 80}
    assert len({span.trace_id for span in collector.spans}) == 1
    assert attributes(by_name["execute_tool fetch"])["gen_ai.tool.call.id"] == "fetch-user"
