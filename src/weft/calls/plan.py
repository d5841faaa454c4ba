"""``Plan``: tool calls linked by references into a data-flow graph.

The order of the calls is not their schedule: references and output paths are.
``validate`` compiles the plan (``weft.calls.validate``), ``run`` executes it on the
WorkGraph engine (``weft.calls.runner``), ``simulate`` runs it on the tools' output
examples (``weft.calls.simulate``).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

from weft._sync import run_sync
from weft.calls.call import Call, loads
from weft.calls.dataflow import CompiledPlan
from weft.calls.instancing import InstancesLike
from weft.calls.result import PlanResult
from weft.calls.runner import arun_prepared, prepare, run_store
from weft.calls.simulate import simulate
from weft.calls.tools import ToolsLike, as_tools
from weft.calls.validate import compile_plan
from weft.errors import PlanValidationError
from weft.graph import Paused
from weft.persist import DurableRun
from weft.persist._gc import paused
from weft.refs.schemas import schema_error
from weft.store import Store


class Plan(Sequence[Call]):
    """A list of calls, validated as a whole and run as a data-flow graph.

    ``state_schema`` is the JSON Schema of the state (its ``properties`` are the state
    fields): ``||`` output paths pick the first alternative it accepts, and writes to
    state are checked against it. ``output`` is a reference read at the end of a run
    (``PlanResult.output``).
    """

    __slots__ = ("_calls", "output", "state_schema")

    def __init__(
        self,
        calls: Iterable[Call | Mapping[str, Any]],
        *,
        state_schema: Mapping[str, Any] | None = None,
        output: str | None = None,
    ) -> None:
        if isinstance(calls, (str, bytes, Mapping)) or not isinstance(calls, Iterable):
            raise PlanValidationError(
                f"a plan is a list of calls, not a {type(calls).__name__}; pass a list of "
                "Call objects or JSON objects (one call is a list of one), or use "
                "Plan.from_json(text) for the JSON text of a plan"
            )
        self._calls = tuple(c if isinstance(c, Call) else Call.from_json(c) for c in calls)
        self.state_schema = state_schema
        self.output = output
        if state_schema is not None:
            problem = schema_error(state_schema)
            if problem is not None:
                raise PlanValidationError(f"the plan's state_schema is not valid: {problem}")

    @classmethod
    def from_json(cls, data: str | Sequence[Mapping[str, Any]], **options: Any) -> Plan:
        """A plan from its JSON list of calls (or the text of it)."""
        data = loads(data, "the plan's")
        if not isinstance(data, list):
            raise PlanValidationError("a plan is a JSON list of calls")
        return cls(data, **options)

    def to_json(self) -> list[dict[str, Any]]:
        return [call.to_json() for call in self._calls]

    def __len__(self) -> int:
        return len(self._calls)

    def __iter__(self) -> Iterator[Call]:
        return iter(self._calls)

    def __getitem__(self, index: Any) -> Any:
        return self._calls[index]

    def __repr__(self) -> str:
        return f"<Plan calls={len(self._calls)}>"

    def validate(
        self,
        tools: ToolsLike,
        *,
        store: Store | None = None,
        inputs: Mapping[str, Any] | None = None,
        instances: InstancesLike = None,
    ) -> CompiledPlan:
        """Check the whole plan; raise ``PlanValidationError`` listing every problem, or
        return the compiled data-flow graph. ``store`` and ``inputs`` are what exists before
        the run: a read of anything else must be written by some call."""
        return compile_plan(
            self._calls,
            as_tools(tools),
            state_schema=self.state_schema,
            output=self.output,
            store=store,
            inputs=inputs,
            instances=instances,
        )

    def run(
        self,
        tools: ToolsLike,
        *,
        store: Store | None = None,
        inputs: Mapping[str, Any] | None = None,
        instances: InstancesLike = None,
        merge_instances: bool = False,
        run_id: str | None = None,
        durable: DurableRun | None = None,
        max_concurrency: int | None = None,
        answers: Mapping[str, Any] | None = None,
    ) -> PlanResult | Paused:
        """The blocking form of :meth:`arun` (same arguments), run on this thread's cached
        event loop (or a helper thread when a loop already runs here)."""
        return run_sync(
            self.arun(
                tools,
                store=store,
                inputs=inputs,
                instances=instances,
                merge_instances=merge_instances,
                run_id=run_id,
                durable=durable,
                max_concurrency=max_concurrency,
                answers=answers,
            )
        )

    async def arun(
        self,
        tools: ToolsLike,
        *,
        store: Store | None = None,
        inputs: Mapping[str, Any] | None = None,
        instances: InstancesLike = None,
        merge_instances: bool = False,
        run_id: str | None = None,
        durable: DurableRun | None = None,
        max_concurrency: int | None = None,
        answers: Mapping[str, Any] | None = None,
    ) -> PlanResult | Paused:
        """Validate the plan (``PlanValidationError`` listing every problem, before
        anything runs) and run it on the WorkGraph engine.

        ``store`` (a new one if omitted) is where the calls read and write; ``inputs`` are
        written as ``input:<name>``; ``instances`` are ids, or ids mapped to their inputs;
        ``merge_instances=True`` merges their results into the global fields at the end;
        ``run_id`` records the run for resume; ``durable`` runs on a ``DurableRun``'s store
        (its run id by default); ``max_concurrency`` bounds the calls in flight. A failed
        call raises its ``PlanRunError`` (the tool's exception as its cause) once the calls
        already running finish; what was committed stays. A tool that calls
        ``weft.graph.interrupt`` (in a run with a run id) pauses its call: the run returns
        ``Paused``, and running it again with ``answers=`` goes on.
        """
        store = run_store(store, durable)
        with paused():  # validating and building thousands of nodes: no cycle to find
            compiled = self.validate(tools, store=store, inputs=inputs, instances=instances)
            prepared = prepare(compiled, store, max_concurrency)
        return await arun_prepared(
            prepared,
            merge_instances=merge_instances,
            run_id=run_id,
            durable=durable,
            answers=answers,
        )

    def simulate(
        self,
        tools: ToolsLike,
        *,
        store: Store | None = None,
        inputs: Mapping[str, Any] | None = None,
        instances: InstancesLike = None,
    ) -> PlanResult:
        """Run the plan on the tools' ``output_examples`` (calling no tool) on a fork of
        ``store``, which is left unchanged; references, output paths and schemas are
        checked as a run would."""
        compiled = self.validate(tools, store=store, inputs=inputs, instances=instances)
        return simulate(compiled, store=store)
