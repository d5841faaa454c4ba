"""``weft demo`` scenes 6 and 7: the planning agent on the demo's store."""

from __future__ import annotations

import io
from pathlib import Path

from rich.console import Console
from typer.testing import CliRunner

from weft.cli import app
from weft.cli.demo import (
    DISCOUNTS_JSON,
    ORDERS_CSV,
    SCENES,
    data_dir,
    run_demo,
    scene_plan_and_run,
    scene_planner_store,
)

EXAMPLES_DATA = Path(__file__).resolve().parents[2] / "examples" / "data"


def quiet() -> Console:
    return Console(file=io.StringIO(), width=200)


def test_the_planner_scenes_come_after_the_memory_scenes() -> None:
    assert SCENES[-2:] == [scene_plan_and_run, scene_planner_store]


def test_the_demo_shows_the_plan_each_step_and_the_store() -> None:
    result = CliRunner().invoke(app, ["demo"], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    out = result.output[result.output.index("6. A planning agent") :]
    for line in (
        "READ_ORDERS: Read the file orders.csv",
        "n0 --> n2",
        "n1 --> n2",
        "tool read_file('orders.csv')",
        "tool read_file('discounts.json')",
        "tool compute_total(attachments: READ_ORDERS, READ_DISCOUNTS) -> 12.65",
        "store append state:agent/planner/0.COMPUTE_TOTAL/actions (compute_total)",
        "store append state:agent/planner/actions (Problem COMPUTE_TOTAL) by planner",
        "planner says: The invoice total is 12.65.",
        "7. The agents' state in the store",
    ):
        assert line in out, line


def test_the_planner_runs_on_the_demo_store_without_touching_memory() -> None:
    run = run_demo(quiet(), scenes=[scene_plan_and_run])
    result = run.results["planner"]
    assert result.stop_reason == "completed"
    assert result.instant_response == "The invoice total is 12.65."
    assert len(run.memory) == 0  # agents keep their state under state:, not in memory
    assert run.memory.store.has("state", "agent/planner/states")
    total = result.states[0].action_results.result["action_results"]["total"]
    assert total == 12.65


def test_the_demo_data_is_the_examples_data() -> None:
    assert (EXAMPLES_DATA / "orders.csv").read_text() == ORDERS_CSV
    assert (EXAMPLES_DATA / "discounts.json").read_text() == DISCOUNTS_JSON
    assert data_dir() == EXAMPLES_DATA
