"""``weft demo`` scenes: a plan of tool calls over three accounts, each on its own instance
(a fork of the demo store): validation, the run, and a simulation on output examples.
The tools are local functions: nothing leaves the machine.
"""

from __future__ import annotations

import json
from typing import Any, Final

from rich.markup import escape
from rich.rule import Rule
from rich.table import Table

from weft.calls import Plan, Tool
from weft.cli.demo import DemoRun, Scene, show_json
from weft.errors import PlanValidationError
from weft.graph import Paused
from weft.refs import ChosenPath

ACCOUNTS: Final[dict[str, dict[str, Any]]] = {
    "acme": {"userId": 17},
    "globex": {"userId": 42},
    "initech": {"userId": 7},
}
PROFILES: Final[dict[int, dict[str, Any]]] = {
    17: {"name": "Acme Corp", "orders": [120, 80, 45]},
    42: {"name": "Globex", "orders": [900, 1250]},
    7: {"name": "Initech", "orders": [30]},
}
PLAN_JSON: Final[list[dict[str, Any]]] = [
    {"_tool": "loadPolicy", "_outputPath": "†state.policy"},
    {
        "_tool": "fetchUserProfile",
        "userId": "†input.userId",
        "_outputPath": "†state.profile",
        "_instance": "*",
    },
    {
        "_tool": "scoreRisk",
        "orders": "†state.profile.orders",
        "limit": "†state.policy.limit",
        "_outputPath": "†state.review.flagged || †state.review.cleared",
        "_instance": "*",
    },
    {
        "_tool": "notify",
        "message": "reviewed †state.profile.name under policy †state.policy.name",
        "_outputPath": "†state.log:push",
        "_instance": "*",
    },
]


def score_risk(orders: list[int], limit: int) -> ChosenPath:
    total = sum(orders)
    verdict = {"total": total, "limit": limit}
    return ChosenPath(
        "†state.review.flagged" if total > limit else "†state.review.cleared", verdict
    )


def review_tools() -> list[Tool]:
    """The plan's tools, with their schemas and output examples (for the simulation)."""
    return [
        Tool(
            name="loadPolicy",
            fn=lambda: {"name": "q3-orders", "limit": 1000},
            output_examples=({"name": "x", "limit": 1},),
        ),
        Tool(
            name="fetchUserProfile",
            fn=lambda userId: dict(PROFILES[userId]),
            parameters={
                "type": "object",
                "properties": {"userId": {"type": "integer"}},
                "required": ["userId"],
            },
            output_examples=({"name": "Example Ltd", "orders": [1, 2]},),
        ),
        Tool(
            name="scoreRisk",
            fn=score_risk,
            parameters={
                "type": "object",
                "properties": {
                    "orders": {"type": "array", "items": {"type": "number"}},
                    "limit": {"type": "number"},
                    "_outputPath": {"type": "string"},
                },
                "required": ["orders", "limit"],
            },
            output_examples=({"total": 3, "limit": 1},),
        ),
        Tool(name="notify", fn=lambda message: message, output_examples=("reviewed",)),
    ]


def scene_plan_validation(run: DemoRun) -> None:
    """A broken plan is refused with every problem listed, before any tool runs."""
    run.console.print(Rule("Plan 1. A plan of tool calls, checked before it runs"))
    show_json(run, PLAN_JSON, "the plan: one global call, three calls per instance")
    broken = json.loads(json.dumps(PLAN_JSON))
    broken[1]["userId"] = "†input.userid"
    broken[2]["_tool"] = "scoreRisks"
    broken[3]["_outputPath"] = "†task.log"
    run.console.print("  a broken copy: a typo in a reference, a wrong tool name, a bad path")
    try:
        Plan(broken).validate(review_tools(), instances=ACCOUNTS)
    except PlanValidationError as exc:
        run.results["validation"] = {"problems": [str(p) for p in exc.problems]}
        run.console.print(f"  [red]refused[/]: {len(exc.problems)} problems, nothing ran")
        for problem in exc.problems:
            run.console.print(f"  [red]-[/] {escape(str(problem))}")


def scene_plan_instances(run: DemoRun) -> None:
    """The plan runs over three instances, each on its own fork; logs merge in order."""
    run.console.print(Rule("Plan 2. The plan over three instances, each with its own state"))
    store = run.memory.store
    result = Plan(PLAN_JSON).run(review_tools(), store=store, instances=ACCOUNTS)
    assert not isinstance(result, Paused), "a run with no run id never returns Paused"
    table = Table("instance", "userId", "profile.name", "review", "log")
    for name in ACCOUNTS:
        fork = result.instances[name]
        review = fork.value("state", "review")
        verdict = "flagged" if "flagged" in review else "cleared"
        total = review[verdict]["total"]
        table.add_row(
            name,
            str(ACCOUNTS[name]["userId"]),
            escape(fork.value("state", "profile")["name"]),
            f"{verdict} ({total})",
            escape(fork.value("state", "log")[-1]),
        )
    run.console.print(table)
    policy = store.value("state", "policy")
    run.console.print(
        f"  global state: policy {escape(policy['name'])} (limit {policy['limit']}), "
        "written once by the global call and read by every instance"
    )
    merged = "none" if not store.has("state", "profile") else "some (a bug)"
    run.console.print(
        f"  instance results in the parent store: {merged}; instances are merged only "
        "when a run asks for it (merge_instances=True)"
    )
    run.results["instances"] = {
        "results": dict(result.results),
        "merged": store.has("state", "profile"),
        "log": {name: list(result.instances[name].value("state", "log")) for name in ACCOUNTS},
        "review": {
            name: next(iter(result.instances[name].value("state", "review"))) for name in ACCOUNTS
        },
    }


def scene_plan_simulation(run: DemoRun) -> None:
    """The same plan simulated on the tools' output examples: no tool runs, no store
    changes, and the data flow is checked end to end."""
    run.console.print(Rule("Plan 3. The same plan, simulated on output examples"))
    before = run.memory.store.last_seq
    result = Plan(PLAN_JSON).simulate(
        review_tools(), store=run.memory.store, instances={"sample": {"userId": 1}}
    )
    for call, value in result.results.items():
        run.console.print(f"  {escape(call)} -> {escape(json.dumps(value))}")
    unchanged = run.memory.store.last_seq == before
    run.console.print(f"  demo store unchanged: {'[green]yes[/]' if unchanged else '[red]no[/]'}")
    run.results["simulation"] = {"results": dict(result.results), "unchanged": unchanged}


PLAN_SCENES: Final[list[Scene]] = [
    scene_plan_validation,
    scene_plan_instances,
    scene_plan_simulation,
]
