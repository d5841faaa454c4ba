"""Notes into spans: the one place weft imports OpenTelemetry (the API only).

A ``RunNote`` opens and closes a run's span, a ``Note`` a unit's (a graph node, an agent
iteration) under its run, and a ``CallNote`` is a model or tool call's span, made whole
as the call ends (it carries its start time and duration) under the unit it was made
in. Names and attributes follow OpenTelemetry's GenAI semantic conventions where they
have one (``invoke_agent``, ``chat``, ``execute_tool``, ``gen_ai.*``); weft's own facts
are ``weft.*``.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from typing import Any, Final

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.trace import Span, SpanKind, Status, StatusCode

from weft.errors import TelemetryError
from weft.store import CallNote, Note, RunNote

SCOPE: Final = "weft"
"""The instrumentation scope of weft's spans."""

_OPEN_MAX: Final = 100_000
"""Spans left open (a run that never said it ended) are forgotten past this many."""


@dataclass(slots=True)
class _Open:
    span: Span
    run_id: str
    thread_id: str | None


class Spans:
    """The spans of the runs going on, made from the notes they tell (``hear``)."""

    def __init__(self, tracer_provider: Any = None) -> None:
        if tracer_provider is not None and not callable(
            getattr(tracer_provider, "get_tracer", None)
        ):
            raise TelemetryError(
                f"tracer_provider={tracer_provider!r} is not an OpenTelemetry tracer provider "
                "(it has no get_tracer); pass e.g. opentelemetry.sdk.trace.TracerProvider(), "
                "or None for the global one"
            )
        from weft import __version__

        self.tracer = trace.get_tracer(SCOPE, __version__, tracer_provider=tracer_provider)
        self._open: dict[str, _Open] = {}
        self._lock = threading.Lock()

    def hear(self, note: Any) -> None:
        """Turn one note into (part of) a span."""
        cls = note.__class__
        if cls is Note:
            self._unit(note)
        elif cls is CallNote:
            self._call(note)
        elif cls is RunNote:
            self._run(note)

    def close(self) -> None:
        """End every span still open (tracing stops)."""
        with self._lock:
            left, self._open = list(self._open.values()), {}
        for item in reversed(left):
            item.span.end()

    # ------------------------------------------------------------------ runs

    def _run(self, note: RunNote) -> None:
        key = note.key
        if note.event != "started":
            self._end(key, note.event, note.error, {"weft.run.status": note.event})
            return
        parent = self._get(note.parent)
        thread_id = note.thread_id or (parent.thread_id if parent is not None else None)
        attributes: dict[str, Any] = {"weft.run_id": note.run_id, "weft.run.kind": note.kind}
        if thread_id is not None:
            attributes["weft.thread_id"] = thread_id
        if note.kind == "agent":
            name = f"invoke_agent {note.label}"
            attributes["gen_ai.operation.name"] = "invoke_agent"
            attributes["gen_ai.agent.name"] = note.label or ""
        else:
            name = f"{note.kind} {note.label or note.run_id}"
        if note.kind == "turn" and thread_id is not None:
            attributes["gen_ai.conversation.id"] = thread_id
        self._start(key, name, parent, note.run_id, thread_id, attributes)

    # ------------------------------------------------------------------ units

    def _unit(self, note: Note) -> None:
        run_id = note.run_id or ""
        key = f"{run_id}/{note.unit}"
        if note.event == "started":
            parent = self._get(run_id)
            self._start(
                key,
                self._unit_name(note),
                parent,
                run_id,
                None if parent is None else parent.thread_id,
                self._unit_attributes(note),
            )
            return
        extra: dict[str, Any] = {"weft.unit.status": note.event}
        if note.flag is not None:
            extra["weft.flag"] = note.flag
        if note.reason is not None:
            extra["weft.skipped.reason"] = note.reason
        if note.event == "skipped" and self._get(key) is None:  # never started: an instant
            parent = self._get(run_id)
            attributes = {**self._unit_attributes(note), **extra}
            thread_id = None if parent is None else parent.thread_id
            self._start(key, self._unit_name(note), parent, run_id, thread_id, attributes)
        self._end(key, note.event, note.error, extra)

    @staticmethod
    def _unit_name(note: Note) -> str:
        if note.kind == "iteration":
            return f"iteration {note.unit.rpartition('/')[2]}"
        return f"{note.kind} {note.label or note.unit}"

    @staticmethod
    def _unit_attributes(note: Note) -> dict[str, Any]:
        attributes: dict[str, Any] = {
            "weft.run_id": note.run_id or "",
            "weft.unit": note.unit,
            "weft.unit.kind": note.kind,
        }
        if note.label is not None:
            attributes["weft.label"] = note.label
        if note.kind == "iteration" and note.label is not None:
            attributes["gen_ai.agent.name"] = note.label
        return attributes

    # ------------------------------------------------------------------ calls

    def _call(self, note: CallNote) -> None:
        if note.key is not None and note.event != "started":  # the end of a call told live
            self._end(note.key, note.event, note.error, {})
            return
        parent = self._get(note.parent)
        attributes: dict[str, Any] = {}
        if parent is not None:
            attributes["weft.run_id"] = parent.run_id
            if parent.thread_id is not None:
                attributes["weft.thread_id"] = parent.thread_id
        if note.parent is not None:
            attributes["weft.unit"] = note.parent.partition("/")[2]
        if note.call == "tool":
            name = f"execute_tool {note.name}"
            kind = SpanKind.INTERNAL
            attributes["gen_ai.operation.name"] = "execute_tool"
            attributes["gen_ai.tool.name"] = note.name
            attributes["gen_ai.tool.type"] = "function"
            if note.call_id is not None:
                attributes["gen_ai.tool.call.id"] = note.call_id
        else:
            operation = note.operation or "chat"
            name = f"{operation} {note.request_model or note.name}"
            kind = SpanKind.CLIENT
            provider = note.provider or "weft"
            attributes["gen_ai.operation.name"] = operation
            attributes["gen_ai.provider.name"] = provider
            attributes["gen_ai.system"] = provider  # the name before semconv 1.37
            optional = {
                "gen_ai.request.model": note.request_model,
                "gen_ai.response.model": note.response_model,
                "gen_ai.usage.input_tokens": note.input_tokens,
                "gen_ai.usage.output_tokens": note.output_tokens,
            }
            attributes.update({k: v for k, v in optional.items() if v is not None})
            if note.finish_reasons:
                attributes["gen_ai.response.finish_reasons"] = list(note.finish_reasons)
        start = int(note.started_at * 1e9) if note.started_at else time.time_ns()
        span = self.tracer.start_span(
            name,
            context=self._context(parent),
            kind=kind,
            attributes=attributes,
            start_time=start,
        )
        if note.event == "started" and note.key is not None:  # ends with its next note
            run_id = "" if parent is None else parent.run_id
            self._keep(note.key, span, run_id, None if parent is None else parent.thread_id)
            return
        end = start + int((note.duration_ms or 0.0) * 1e6)
        if note.event == "failed":
            _fail(span, note.error)
        span.end(end_time=end)

    # ---------------------------------------------------------------- helpers

    def _get(self, key: str | None) -> _Open | None:
        if key is None:
            return None
        with self._lock:
            return self._open.get(key)

    @staticmethod
    def _context(parent: _Open | None) -> Any:
        if parent is None:
            return otel_context.get_current()  # a span of the caller's, if any
        return trace.set_span_in_context(parent.span)

    def _start(
        self,
        key: str,
        name: str,
        parent: _Open | None,
        run_id: str,
        thread_id: str | None,
        attributes: dict[str, Any],
    ) -> None:
        span = self.tracer.start_span(name, context=self._context(parent), attributes=attributes)
        self._keep(key, span, run_id, thread_id)

    def _keep(self, key: str, span: Span, run_id: str, thread_id: str | None) -> None:
        with self._lock:
            if len(self._open) >= _OPEN_MAX:
                self._open.pop(next(iter(self._open)))
            self._open[key] = _Open(span, run_id, thread_id)

    def _end(self, key: str, event: str, error: str | None, attributes: dict[str, Any]) -> None:
        with self._lock:
            item = self._open.pop(key, None)
        if item is None:
            return
        span = item.span
        span.set_attributes(attributes)
        if event == "failed":
            _fail(span, error)
        span.end()


def _fail(span: Span, error: str | None) -> None:
    """Mark ``span`` failed with ``error`` (``"<type>: <message>"``)."""
    message = error or "failed"
    kind, _, text = message.partition(": ")
    span.set_attribute("error.type", kind if text else "Error")
    span.set_status(Status(StatusCode.ERROR, message))
    span.add_event("exception", {"exception.type": kind, "exception.message": text or message})
