"""Rich renderings of what a ``Reader`` reads: one function per record, each returning a
renderable (a table, a line) that ``weft threads``, ``weft show`` and the other inspection
commands print. rich is imported here only, so reading threads needs nothing of it."""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from datetime import datetime
from typing import Any, Final

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from weft.errors import WeftError
from weft.inspect.records import (
    MemoryItem,
    StateDiff,
    ThreadEvent,
    ThreadState,
    ThreadSummary,
    TimelineItem,
)
from weft.store import CallIntent, Pause, RunRecord, StepRecord, to_jsonable

SHORT: Final = 60
"""The longest a value is shown in a table cell; ``--json`` prints it whole."""

_STATUS_STYLE: Final = {
    "completed": "green",
    "finished": "green",
    "answered": "green",
    "running": "yellow",
    "pending": "yellow",
    "paused": "bold magenta",
    "waiting": "bold magenta",
    "failed": "bold red",
}


def threads_table(threads: Sequence[ThreadSummary]) -> Table:
    """Every thread: its steps, state size, last activity, whether it waits, its runs."""
    table = Table(title="Threads", title_justify="left", expand=False)
    table.add_column("thread", style="bold", no_wrap=True)
    table.add_column("steps", justify="right", no_wrap=True)
    table.add_column("entries", justify="right", no_wrap=True)
    table.add_column("size", justify="right", no_wrap=True)
    table.add_column("last activity", no_wrap=True)
    table.add_column("paused", no_wrap=True)
    table.add_column("runs")
    for thread in threads:
        steps = str(thread.last_step)
        if thread.first_step:
            steps = f"{thread.first_step}..{thread.last_step}"
        runs = Text()
        wrote = {w.run_id: w for w in thread.writers}
        for n, run in enumerate(thread.runs):
            if n:
                runs.append("\n")
            runs.append(f"{run.run_id} ")
            runs.append(f"{run.kind} ", style="dim")
            runs.append(run.status, style=_STATUS_STYLE.get(run.status, ""))
            if run.waiting:
                runs.append(f" ({run.waiting} waiting)", style="magenta")
            writer = wrote.get(run.run_id)
            if writer is not None:
                runs.append(f" steps {writer.first_step}..{writer.last_step}", style="dim")
        if thread.error is not None:
            runs.append(f"cannot replay: {thread.error}", style="bold red")
        if thread.parent_thread is not None:
            fork = f"forked from {thread.parent_thread}@{thread.parent_step}"
            runs.append(f"\n{fork}" if runs else fork, style="dim")
        table.add_row(
            thread.thread_id,
            steps,
            str(thread.entries),
            size(thread.size_bytes),
            when(thread.updated_at),
            Text("yes", style="bold magenta") if thread.paused else Text("no", style="dim"),
            runs,
        )
    return table


def timeline_view(thread: ThreadSummary, items: Sequence[TimelineItem]) -> RenderableType:
    """A thread's header line and its timeline: runs, then their units nested inside."""
    header = Text()
    header.append(thread.thread_id, style="bold")
    header.append(f"  steps {thread.first_step}..{thread.last_step}, ")
    header.append(f"{thread.entries} entries ({size(thread.size_bytes)}), ")
    header.append(f"last activity {when(thread.updated_at)}")
    if thread.paused:
        header.append("  paused", style="bold magenta")
    table = Table(expand=False, show_edge=False)
    table.add_column("step", justify="right", style="dim", no_wrap=True)
    table.add_column("unit", no_wrap=True)
    table.add_column("kind", no_wrap=True)
    table.add_column("status", no_wrap=True)
    table.add_column("started", no_wrap=True)
    table.add_column("took", justify="right", no_wrap=True)
    table.add_column("source", style="dim")
    table.add_column("result")
    for item in items:
        name = Text("  " * max(item.depth - 1, 0))
        if item.unit:
            name.append(item.unit.rsplit("/", 1)[-1] if item.depth > 1 else item.unit)
            if item.label and item.label not in item.unit:
                name.append(f" {item.label}", style="cyan")
        else:
            name.append(item.run_id or "(thread)", style="bold")
        table.add_row(
            str(item.step),
            name,
            item.kind,
            Text(item.status, style=_STATUS_STYLE.get(item.status, "")),
            clock(item.started_at),
            duration(item.duration_ms),
            item.source or "",
            _outcome(item.record),
        )
    if not items:
        return Group(header, Text("no runs recorded in this thread", style="dim"))
    return Group(header, table)


def event_lines(events: Sequence[ThreadEvent], chunk: int = 500) -> Iterator[Text]:
    """Events as lines, ``chunk`` to a renderable: a log of thousands of events prints in
    seconds, where a table of them takes minutes to lay out."""
    for start in range(0, len(events), chunk):
        yield Text("\n").join(event_line(e) for e in events[start : start + chunk])


def event_line(event: ThreadEvent) -> Text:
    """One event as a line (``--follow`` prints them as they come)."""
    line = Text()
    line.append(f"{event.step:>6} ", style="dim")
    line.append(f"{when(event.time)}  {event.run_id}  {event.op} ")
    line.append(event.key, style="bold")
    line.append(f" = {short(event.value)}")
    if event.source:
        line.append(f"  ({event.source})", style="dim")
    return line


def state_table(state: ThreadState) -> Table:
    """A thread's entries at a step."""
    under = f" under {state.prefix!r}" if state.prefix else ""
    table = Table(title=f"{state.thread_id} at step {state.step}{under}", title_justify="left")
    table.add_column("key", style="bold", no_wrap=True)
    table.add_column("value")
    table.add_column("source", style="dim")
    table.add_column("step", justify="right", no_wrap=True)
    table.add_column("size", justify="right", no_wrap=True)
    for entry in state.entries:
        table.add_row(
            entry.key,
            short(entry.value),
            entry.source or "",
            str(entry.step),
            size(entry.size_bytes),
        )
    return table


def diff_table(diff: StateDiff) -> Table:
    """What changed between two steps, key by key."""
    title = f"{diff.thread_id}: step {diff.a} -> {diff.b} ({diff.events} events between)"
    table = Table(title=title, title_justify="left")
    table.add_column("key", style="bold", no_wrap=True)
    table.add_column("change", no_wrap=True)
    table.add_column(f"at {diff.a}")
    table.add_column(f"at {diff.b}")
    table.add_column("by", style="dim", no_wrap=True)
    styles = {"added": "green", "removed": "red", "changed": "yellow"}
    for change in diff.changes:
        table.add_row(
            change.key,
            Text(change.change, style=styles[change.change]),
            "" if change.change == "added" else short(change.before),
            "" if change.change == "removed" else short(change.after),
            change.source or "",
        )
    return table


def memory_table(thread_id: str, items: Sequence[MemoryItem]) -> Table:
    """Memory entries as ``memory_list`` shows them, newest first."""
    table = Table(title=f"Memory of {thread_id}", title_justify="left")
    table.add_column("key", style="bold", no_wrap=True)
    table.add_column("kind", no_wrap=True)
    table.add_column("title / description")
    table.add_column("source", style="dim")
    table.add_column("size", justify="right", no_wrap=True)
    table.add_column("updated", no_wrap=True)
    for item in items:
        about = Text(item.title or "")
        if item.description:
            about.append(("\n" if item.title else "") + item.description, style="dim")
        table.add_row(
            item.key,
            item.kind,
            about,
            item.source or "",
            size(item.value_bytes),
            when(item.updated_at),
        )
    return table


def pauses_table(thread_id: str, pauses: Sequence[Pause]) -> Table:
    """The questions a thread's runs asked, and their answers."""
    table = Table(title=f"Questions in {thread_id}", title_justify="left")
    table.add_column("id", style="bold", no_wrap=True)
    table.add_column("asked by", no_wrap=True)
    table.add_column("question")
    table.add_column("status", no_wrap=True)
    table.add_column("answer")
    table.add_column("asked", no_wrap=True)
    for pause in pauses:
        status = "answered" if pause.answered else "waiting"
        table.add_row(
            pause.id,
            pause.label or pause.unit,
            short(pause.question),
            Text(status, style=_STATUS_STYLE[status]),
            short(pause.answer) if pause.answered else "",
            when(pause.asked_at),
        )
    return table


# ------------------------------------------------------------------ formatting


def short(value: Any, limit: int = SHORT) -> str:
    """A value in one line of at most ``limit`` characters: JSON, a record by what it says."""
    if isinstance(value, (RunRecord, StepRecord, Pause, CallIntent)):
        text = _record(value)
    elif isinstance(value, str):
        text = value
    else:
        try:
            text = json.dumps(to_jsonable(value), ensure_ascii=False, separators=(", ", ": "))
        except WeftError:  # a value of a type this process does not know: its repr
            text = repr(value)
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def when(epoch: float | None) -> str:
    """Local time, to the second."""
    return "" if epoch is None else datetime.fromtimestamp(epoch).strftime("%Y-%m-%d %H:%M:%S")


def clock(epoch: float | None) -> str:
    """Local time of day, to the millisecond (a timeline's lines are close together)."""
    return "" if epoch is None else datetime.fromtimestamp(epoch).strftime("%H:%M:%S.%f")[:-3]


def duration(ms: float | None) -> str:
    if ms is None:
        return ""
    if ms < 1:
        return f"{ms * 1000:.0f} µs"
    if ms < 1000:
        return f"{ms:.1f} ms"
    return f"{ms / 1000:.2f} s"


def size(n: int) -> str:
    if n < 1024:
        return f"{n} B"
    if n < 1024 * 1024:
        return f"{n / 1024:.1f} kB"
    return f"{n / 1024 / 1024:.1f} MB"


def _record(value: RunRecord | StepRecord | Pause | CallIntent) -> str:
    if isinstance(value, RunRecord):
        return f"<run {value.kind} {value.status}>"
    if isinstance(value, StepRecord):
        return f"<{value.kind} {value.label or ''} -> {short(value.result, 30)}>"
    if isinstance(value, Pause):
        state = f"answered {short(value.answer, 20)}" if value.answered else "waiting"
        return f"<question {short(value.question, 30)} {state}>"
    return f"<call {value.label} {'failed' if value.failed else 'pending'}>"


def _outcome(record: RunRecord | StepRecord | Pause | CallIntent) -> str:
    if isinstance(record, StepRecord):
        return short(record.result, 40)
    if isinstance(record, Pause):
        asked = short(record.question, 40)
        return f"{asked} -> {short(record.answer, 20)}" if record.answered else asked
    if isinstance(record, CallIntent) and record.failed:
        return short(record.failed, 40)
    if isinstance(record, RunRecord) and record.output is not None:
        return short(record.output, 40)
    return ""
