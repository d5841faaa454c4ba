"""Server-sent events, as the providers stream them: lines in, events out.

The HTML standard's event-stream format, reduced to what a client of one response needs:
``event:`` names the event, ``data:`` lines are joined with newlines, a blank line ends the
event, lines starting with ``:`` are comments (keep-alives), one space after the colon is
dropped, and ``id:``/``retry:`` are kept or ignored. Unlike a browser, a last event that the
server did not end with a blank line before closing is still delivered: some servers end
the stream right after ``data: [DONE]``.

Lines are split by the caller (httpx's ``aiter_lines`` splits on ``\\n``, ``\\r\\n`` and
``\\r``), so this module only decodes; it has no I/O and no dependency.
"""

from __future__ import annotations

from collections.abc import AsyncIterable, AsyncIterator, Iterable, Iterator
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class ServerSentEvent:
    """One event: its name (``message`` when the server gave none), its data, its id."""

    event: str = "message"
    data: str = ""
    id: str | None = None


class SSEDecoder:
    """Feeds on lines (without their line ending); hands back each event as it completes."""

    __slots__ = ("_data", "_event", "_id", "_started")

    def __init__(self) -> None:
        self._event = ""
        self._data: list[str] = []
        self._id: str | None = None
        self._started = False

    def feed(self, line: str) -> ServerSentEvent | None:
        """Take one line; the event it completes, if any."""
        if not self._started:
            self._started = True
            line = line.removeprefix("\ufeff")
        if not line:
            return self._dispatch()
        if line.startswith(":"):
            return None
        field, colon, value = line.partition(":")
        if colon and value.startswith(" "):
            value = value[1:]
        if field == "event":
            self._event = value
        elif field == "data":
            self._data.append(value)
        elif field == "id" and "\0" not in value:
            self._id = value
        # retry: is for reconnecting clients; unknown fields are ignored by the standard
        return None

    def flush(self) -> ServerSentEvent | None:
        """The event left open when the stream ended, if it has data."""
        return self._dispatch()

    def _dispatch(self) -> ServerSentEvent | None:
        if not self._data:  # an event without data is dropped, as the standard says
            self._event = ""
            return None
        event = ServerSentEvent(self._event or "message", "\n".join(self._data), self._id)
        self._event, self._data = "", []
        return event


def decode_lines(lines: Iterable[str]) -> Iterator[ServerSentEvent]:
    """Every event of a whole stream given as lines."""
    decoder = SSEDecoder()
    for line in lines:
        event = decoder.feed(line)
        if event is not None:
            yield event
    last = decoder.flush()
    if last is not None:
        yield last


async def aiter_events(lines: AsyncIterable[str]) -> AsyncIterator[ServerSentEvent]:
    """Every event of a stream as its lines arrive."""
    decoder = SSEDecoder()
    async for line in lines:
        event = decoder.feed(line)
        if event is not None:
            yield event
    last = decoder.flush()
    if last is not None:
        yield last
