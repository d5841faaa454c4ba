"""``Plan.simulate``: a compiled plan run on its tools' output examples, calling no tool."""

from __future__ import annotations

from weft.calls.dataflow import CompiledPlan, PlanProblem
from weft.calls.execute import Runtime, failure
from weft.calls.result import PlanResult
from weft.errors import PlanValidationError
from weft.store import Store


def simulate(compiled: CompiledPlan, *, store: Store | None) -> PlanResult:
    """Run ``compiled`` on the tools' first output examples, in canonical order, on a
    fork of ``store`` (or a new store): no tool is called and ``store`` is unchanged."""
    missing = sorted({node.tool.name for node in compiled.nodes if not node.tool.output_examples})
    if missing:
        problems = tuple(
            PlanProblem(
                None,
                None,
                name,
                f"tool {name!r} declares no output_examples; simulate returns a tool's first "
                "example in place of calling it, so give Tool(..., output_examples=[...])",
            )
            for name in missing
        )
        raise PlanValidationError(
            "the plan cannot be simulated:\n" + "\n".join(f"  - {p}" for p in problems),
            problems=problems,
        )
    base = store.fork(name="simulation") if store is not None else Store(name="simulation")
    runtime = Runtime(compiled, base)
    for position in compiled.order:
        node = compiled.nodes[position]
        try:
            scope = runtime.scope(node, base)
            runtime.prepare(node, scope)
            runtime.finish(node, node.tool.output_examples[0], base, scope).write_to(base, node.id)
        except Exception as exc:
            raise failure(node, exc) from exc
    return runtime.result(run_id=None, simulated=True)
