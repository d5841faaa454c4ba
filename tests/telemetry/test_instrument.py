"""Turning tracing on and off: nothing of OpenTelemetry is imported before, a clear error
without it, and taps that stop when told."""

from __future__ import annotations

import subprocess
import sys

from weft.graph import WorkGraph, WorkGraphNode
from weft.store import Note, RunNote, Store, tap


def run_python(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False
    )


def test_importing_weft_telemetry_imports_no_opentelemetry() -> None:
    done = run_python(
        "import sys, weft.telemetry, weft.graph, weft.agent; "
        "print(sorted(m for m in sys.modules if m.startswith('opentelemetry')))"
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_without_the_opentelemetry_api_instrument_says_what_to_install() -> None:
    done = run_python(
        "import sys; sys.modules['opentelemetry'] = None\n"
        "import weft.telemetry\n"
        "from weft.errors import TelemetryError\n"
        "try:\n"
        "    weft.telemetry.instrument()\n"
        "except TelemetryError as exc:\n"
        "    print(exc)\n"
    )
    assert done.returncode == 0, done.stderr
    assert "pip install 'weft[otel]'" in done.stdout


def test_a_tap_hears_every_store_and_stops_when_told() -> None:
    heard: list[object] = []
    untap = tap(heard.append)
    graph = WorkGraph(start_nodes=[WorkGraphNode(lambda: 1, id="only")])
    try:
        graph.run()  # no store of the caller's: the notes are heard all the same
        graph.run(run_id="r2", store=Store())
    finally:
        untap()
    runs = [(n.run_id, n.event) for n in heard if isinstance(n, RunNote)]
    assert [event for _, event in runs] == ["started", "finished", "started", "finished"]
    assert runs[2][0] == "r2"
    assert [n.event for n in heard if isinstance(n, Note)] == ["started", "finished"] * 2
    heard.clear()
    graph.run()
    assert heard == []


def test_a_tap_that_raises_does_not_break_the_run() -> None:
    def broken(note: object) -> None:
        raise RuntimeError("a broken exporter")

    untap = tap(broken)
    try:
        assert WorkGraph(start_nodes=[WorkGraphNode(lambda: 7, id="x")]).run() == 7
    finally:
        untap()
