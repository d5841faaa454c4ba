"""Tools, calls and plans of calls linked by references: a plan is validated as a whole
(every problem found before anything runs), compiled to a data-flow graph and run on the
WorkGraph engine, or simulated on the tools' output examples; with instancing (one plan
over many forks of the store) and imports (isolated modules in a clean room)."""

from weft.calls.call import Call
from weft.calls.dataflow import CompiledPlan, PlanProblem
from weft.calls.plan import Plan
from weft.calls.result import PlanResult
from weft.calls.tools import Tool, tool

__all__ = [
    "Call",
    "CompiledPlan",
    "Plan",
    "PlanProblem",
    "PlanResult",
    "Tool",
    "tool",
]
