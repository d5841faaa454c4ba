"""OpenTelemetry traces of weft's runs: ``instrument()`` turns them on (runs, graph nodes,
agent iterations, model calls and tool calls as spans, under the GenAI semantic
conventions). The ``opentelemetry-api`` package is imported only then
(``pip install 'weft[otel]'``); until then a run pays nothing for tracing."""

from weft.telemetry.instrument import Tracing, instrument

__all__ = ["Tracing", "instrument"]
