"""``instrument``: listen to every note of the process (``weft.store.notes.tap``) and turn
it into spans; the handle it returns stops that."""

from __future__ import annotations

from collections.abc import Callable
from types import TracebackType
from typing import TYPE_CHECKING, Any, Self

from weft.errors import TelemetryError
from weft.store.notes import tap

if TYPE_CHECKING:
    from weft.telemetry.spans import Spans


class Tracing:
    """Tracing turned on (``instrument``): ``stop()`` (or the end of a ``with`` block)
    turns it off again; spans still open then are ended as they are."""

    def __init__(self, spans: Spans) -> None:
        self.spans = spans
        self._untap: Callable[[], None] | None = tap(spans.hear)

    @property
    def on(self) -> bool:
        """Whether this tracing still listens."""
        return self._untap is not None

    def stop(self) -> None:
        """Stop tracing: later runs make no spans (and no notes, if nobody else listens)."""
        untap, self._untap = self._untap, None
        if untap is not None:
            untap()
            self.spans.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.stop()

    def __repr__(self) -> str:
        return f"<Tracing {'on' if self.on else 'stopped'}>"


def instrument(tracer_provider: Any = None) -> Tracing:
    """Trace every run of this process from now on, as OpenTelemetry spans made by a
    tracer of ``tracer_provider`` (None: the global one, ``trace.set_tracer_provider``).

    Returns the ``Tracing``: call ``stop()`` on it, or use it as a context manager to
    trace one block. Each run is a span (``invoke_agent <name>`` for an agent), with its
    units (graph nodes, agent iterations) under it, the model calls and tool calls made
    in a unit under that unit, and a run started inside a unit (an agent's actions, a
    turn's graph) under that unit too. A run started inside a span of your own is its
    child.
    """
    try:
        from weft.telemetry.spans import Spans
    except ImportError as exc:
        raise TelemetryError(
            f"tracing needs the OpenTelemetry API ({exc}); install it with "
            "pip install 'weft[otel]' (and an SDK with an exporter to see the spans, e.g. "
            "opentelemetry-sdk)"
        ) from None
    return Tracing(Spans(tracer_provider))
