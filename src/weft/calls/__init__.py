"""Tools, calls and plans of calls linked by references (README: "References, output paths
and plans")."""

from weft.calls.call import Call
from weft.calls.dataflow import CompiledPlan, PlanProblem
from weft.calls.plan import Plan
from weft.calls.result import PlanResult
from weft.calls.strict import strict_schema
from weft.calls.tools import Tool, tool

__all__ = [
    "Call",
    "CompiledPlan",
    "Plan",
    "PlanProblem",
    "PlanResult",
    "Tool",
    "strict_schema",
    "tool",
]
