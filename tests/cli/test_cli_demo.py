"""``weft demo`` and ``weft --version`` through typer's CliRunner, and the demo's scenes."""

from __future__ import annotations

import io

from rich.console import Console
from typer.testing import CliRunner

from weft import __version__
from weft.cli import app
from weft.cli.demo import SCENES, DemoRun, run_demo, scene_inputs

runner = CliRunner()


def test_version() -> None:
    result = runner.invoke(app, ["--version"])
    assert result.exit_code == 0
    assert result.output.strip() == f"weft {__version__}"


def test_no_arguments_shows_help() -> None:
    result = runner.invoke(app, [])
    assert "demo" in result.output


def test_demo_walks_the_workflow() -> None:
    result = runner.invoke(app, ["demo"])
    assert result.exit_code == 0, result.output
    out = result.output
    for line in (
        "memory set input:topic (input) by caller",
        "memory set step:search (step_result) by search",
        "memory set task:research (task_result) by research",
        'researcher calls memory_write {"key": "top_source"',
        "memory set shared:top_source (shared) by researcher",
        "writer calls memory_list",
        "writer calls memory_read",
        "- task:research — Research findings",
        '"missing"',
        "shared:top_source",
    ):
        assert line in out, line


def test_demo_reports_the_refused_spoof() -> None:
    out = runner.invoke(app, ["demo"]).output
    assert 'researcher calls memory_write {"key": "task:bogus"' in out
    assert "refused" in out
    assert '"ok": false' in out
    assert "nothing was written" in out
    assert "memory set task:bogus" not in out
    assert "shared:task:bogus (shared)" not in out


def quiet() -> Console:
    return Console(file=io.StringIO(), width=120)


def test_demo_memory_ends_as_scripted() -> None:
    run = run_demo(quiet())
    assert [e.key for e in run.memory.snapshot()] == [
        "input:topic",
        "input:audience",
        "step:search",
        "step:summarize",
        "task:research",
        "shared:top_source",
        "step:draft",
    ]
    assert run.memory.get("shared:top_source").source == "researcher"  # type: ignore[union-attr]
    assert run.results["spoof"]["ok"] is False
    assert run.results["read"]["missing"] == ["step:outline"]
    assert [e["key"] for e in run.results["list"]["entries"]] == [
        "shared:top_source",
        "task:research",
    ]
    assert len(run.feed) == 7
    assert run.memory.store.has("state", "run.phase")


def test_scenes_can_be_chosen_and_extended() -> None:
    seen: list[int] = []

    def scene_count(run: DemoRun) -> None:
        seen.append(len(run.memory))

    run_demo(quiet(), scenes=[scene_inputs, scene_count])
    assert seen == [2]
    assert scene_inputs in SCENES


def test_the_table_shows_every_memory_entry() -> None:
    console = quiet()
    run_demo(console)
    text = console.file.getvalue()  # type: ignore[attr-defined]
    table = text[text.index("5. Memory at the end") :]
    for cells in (
        ("task:research", "task_result", "research", "Research findings"),
        ("shared:top_source", "shared", "researcher", "Top source URL"),
    ):
        row = next(line for line in table.splitlines() if cells[0] in line)
        for cell in cells:
            assert cell in row


def test_weft_demo_ends_with_the_plan_over_instances() -> None:
    result = runner.invoke(app, ["demo"], terminal_width=200)
    assert result.exit_code == 0, result.output
    out = result.output
    assert "Plan 1. A plan of tool calls, checked before it runs" in out
    assert "Plan 2. The plan over three instances, each with its own state" in out
    assert "Plan 3. The same plan, simulated on output examples" in out
    assert out.index("planning agent") < out.index("Plan 1.")
