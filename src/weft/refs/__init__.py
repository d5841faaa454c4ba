"""References and output paths: ``†kind.path`` reads and ``_outputPath`` writes, and plans
of tool calls linked by them (validated, run, simulated), with instancing and imports."""

from weft.refs.calls import Call, Plan, PlanResult, Tool
from weft.refs.dataflow import CompiledPlan, PlanProblem
from weft.refs.outputs import ChosenPath, OutputPath, Target
from weft.refs.parse import Expression, Reference
from weft.refs.resolve import references_in, resolve
from weft.refs.scopes import LayeredScope, MappingScope, Scope, StoreScope

__all__ = [
    "Call",
    "ChosenPath",
    "CompiledPlan",
    "Expression",
    "LayeredScope",
    "MappingScope",
    "OutputPath",
    "Plan",
    "PlanProblem",
    "PlanResult",
    "Reference",
    "Scope",
    "StoreScope",
    "Target",
    "Tool",
    "references_in",
    "resolve",
]
