"""The demo scenes of a plan of tool calls over several instances, on a recording console."""

from __future__ import annotations

from rich.console import Console

from weft.cli.demo import DemoRun, run_demo
from weft.cli.demo_plan import (
    ACCOUNTS,
    PLAN_SCENES,
    scene_plan_instances,
    scene_plan_simulation,
    scene_plan_validation,
)
from weft.memory import AgentMemory
from weft.store import Store


def play(*scenes: object) -> tuple[DemoRun, str]:
    console = Console(record=True, width=120, color_system=None)
    run = DemoRun(console=console, memory=AgentMemory(Store(name="demo")))
    for scene in scenes:
        scene(run)  # type: ignore[operator]
    return run, console.export_text()


def test_validation_scene_lists_every_problem_of_the_broken_plan() -> None:
    run, out = play(scene_plan_validation)
    problems = run.results["validation"]["problems"]
    assert len(problems) == 3
    assert "refused: 3 problems, nothing ran" in out
    assert "did you mean scoreRisk?" in out
    assert "it reads †input.userid" in out and "input holds: userId" in out
    assert "tool calls write state and shared only" in out


def test_instances_scene_runs_each_account_on_its_own_fork() -> None:
    run, out = play(scene_plan_instances)
    review = run.results["instances"]["review"]
    assert review == {"acme": "cleared", "globex": "flagged", "initech": "cleared"}
    assert set(run.results["instances"]["results"]) == {
        "0.loadPolicy",
        *(
            f"{n}.{tool}@{name}"
            for name in ACCOUNTS
            for n, tool in ((1, "fetchUserProfile"), (2, "scoreRisk"), (3, "notify"))
        ),
    }
    assert run.results["instances"]["merged"] is False
    assert run.results["instances"]["log"]["globex"] == ["reviewed Globex under policy q3-orders"]
    assert "flagged (2150)" in out
    assert "instance results in the parent store: none" in out


def test_the_global_policy_is_written_once_to_the_demo_store() -> None:
    run, _ = play(scene_plan_instances)
    store = run.memory.store
    assert store.value("state", "policy") == {"name": "q3-orders", "limit": 1000}
    assert store.get("state", "policy").source == "0.loadPolicy"  # type: ignore[union-attr]
    assert not store.has("state", "review")


def test_simulation_scene_calls_no_tool_and_leaves_the_store_alone() -> None:
    run, out = play(scene_plan_simulation)
    assert run.results["simulation"]["unchanged"] is True
    assert (
        run.results["simulation"]["results"]["1.fetchUserProfile@sample"]["name"] == "Example Ltd"
    )
    assert "demo store unchanged: yes" in out


def test_the_scenes_play_after_the_demos_own_scenes() -> None:
    console = Console(record=True, width=120, color_system=None)
    run = run_demo(console, scenes=list(PLAN_SCENES))
    out = console.export_text()
    for title in ("Plan 1.", "Plan 2.", "Plan 3."):
        assert title in out
    assert run.results["simulation"]["unchanged"] is True
