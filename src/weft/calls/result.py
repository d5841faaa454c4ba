"""``PlanResult``: what a run (or a simulation) of a plan of tool calls produced."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from weft.store import Store


@dataclass(frozen=True, slots=True, kw_only=True)
class PlanResult:
    """What a run (or a simulation) of a plan produced.

    ``results`` maps each call's id (``<id>@<instance>`` for an instance's call) to the
    value written to its output path (the tool's result); ``store`` is the store the run
    wrote (for a simulation, a throwaway fork); ``instances`` each instance's store;
    ``output`` the plan's ``output`` reference resolved at the end, or else the result
    of the plan's last call (its last instance's, for a call over several).
    """

    results: Mapping[str, Any]
    store: Store
    instances: Mapping[str, Store]
    output: Any
    run_id: str | None = None
    simulated: bool = False
