"""Reading the spans the SDK's in-memory exporter kept."""

from __future__ import annotations

from typing import Any

from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter


class Traced:
    """The spans finished so far, by name, with their parents."""

    def __init__(self, exporter: InMemorySpanExporter, provider: TracerProvider) -> None:
        self.exporter = exporter
        self.provider = provider

    @property
    def spans(self) -> list[ReadableSpan]:
        return list(self.exporter.get_finished_spans())

    def names(self) -> list[str]:
        return [span.name for span in self.spans]

    def one(self, name: str) -> ReadableSpan:
        found = [span for span in self.spans if span.name == name]
        assert len(found) == 1, f"{len(found)} spans named {name!r}; the spans: {self.names()}"
        return found[0]

    def all(self, name: str) -> list[ReadableSpan]:
        return [span for span in self.spans if span.name == name]

    def parent(self, span: ReadableSpan) -> ReadableSpan | None:
        if span.parent is None:
            return None
        for other in self.spans:
            if other.context.span_id == span.parent.span_id:
                return other
        raise AssertionError(f"the parent of {span.name!r} was never finished")

    def parent_name(self, name: str) -> str | None:
        found = self.parent(self.one(name))
        return None if found is None else found.name

    def attrs(self, name: str) -> dict[str, Any]:
        return dict(self.one(name).attributes or {})
