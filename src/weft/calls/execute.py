"""Running one call of a compiled plan: resolve, call, choose the output, write.

``Runtime`` is the part of a run that does not depend on the scheduler: the WorkGraph
runner (``weft.calls.runner``) calls ``call_sync`` / ``call_async`` from its nodes, and
``weft.calls.simulate`` calls the same steps in canonical order, with the tools' output
examples in place of the tools.

A call's result is written to its output path with ``source=`` the call's id. Writes to
a field that several unordered calls reduce (a *sequenced group*, see
``weft.calls.dataflow``) are held (``weft.calls.sequencer``) until every earlier member
of the group (in canonical order) has written or failed, so the field's value never
depends on which call finished first; such a call's writes to other fields are made at
once, so its ``&&`` fan-out is checked as a whole but may land at different moments.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from typing import Any

from weft.calls.dataflow import CompiledPlan, GroupKey, Node
from weft.calls.imports import clean_room
from weft.calls.result import PlanResult
from weft.calls.sequencer import Sequencer
from weft.errors import PlanRunError, WeftError
from weft.refs.outputs import Target, apply_writes, plan_writes, split_choice
from weft.refs.parse import Expression
from weft.refs.resolve import read_expression
from weft.refs.schemas import schema_problems
from weft.refs.scopes import ChainScope, LayeredScope, MappingScope, Scope, StoreScope
from weft.store import Store, freeze


class Runtime:
    """One execution of a compiled plan on ``store`` (see the module docstring)."""

    def __init__(self, compiled: CompiledPlan, store: Store) -> None:
        self.compiled = compiled
        self.store = store
        self.nodes = compiled.nodes
        self.state_schema = compiled.state_schema
        for name, value in compiled.inputs.items():
            store.write("input", name, value, source="caller", replace=True)
        self.global_scope: Scope = StoreScope(store)
        self.forks: dict[str, Store] = {}
        self.scopes: dict[str | None, Scope] = {None: self.global_scope}
        for name, inputs in compiled.instances.items():
            fork = store.fork(name=f"instance:{name}")
            self.forks[name] = fork
            given = MappingScope({"input": freeze(dict(inputs), where=f"instance {name} inputs")})
            self.scopes[name] = LayeredScope(fork, ChainScope(given, self.global_scope))
        self.results: dict[str, Any] = {}
        self.sequencer = Sequencer(compiled.groups) if compiled.groups else None

    def store_of(self, node: Node) -> Store:
        return self.store if node.instance is None else self.forks[node.instance]

    # ------------------------------------------------------------ the steps

    def prepare(self, node: Node) -> dict[str, Any]:
        """The keyword arguments of ``node``'s tool (references resolved, checked)."""
        scope = self.scopes[node.instance]
        room = None
        if node.tool.isolated:
            room = clean_room(node.imports or (), scope, name=f"module:{node.id}")
            scope = StoreScope(room)
        args = node.args.resolve(scope)
        if node.check_arguments:
            problems = schema_problems(node.tool.arguments_schema, args)
            if problems:
                raise PlanRunError(
                    f"the resolved arguments do not fit the tool's JSON Schema: "
                    f"{'; '.join(problems)}; a reference supplied a value of the wrong shape",
                    call=node.id,
                    tool=node.tool.name,
                    index=node.index,
                )
        kwargs = dict(args)
        if room is not None:
            kwargs["store"] = room
        return kwargs

    def finish(self, node: Node, result: Any) -> dict[str, Any]:
        """Write ``result`` to ``node``'s output path; the record a run keeps of it."""
        value, chosen = split_choice(result)
        output = node.output
        if output is None:
            self.results[node.id] = value
            if node.groups and self.sequencer is not None:
                self.sequencer.deposit(node.position, node.groups, {})
            return {"value": value, "alt": None}
        index = output.choose(value, state_schema=self.state_schema, chosen=chosen)
        self.write(node, index, value)
        self.results[node.id] = value
        return {"value": value, "alt": index}

    def write(self, node: Node, index: int, value: Any) -> None:
        """Write ``value`` to alternative ``index`` of ``node``'s output path."""
        assert node.output is not None
        fanout = node.output.alternatives[index]
        store = self.store_of(node)
        scope = self.scopes[node.instance]
        if not node.groups or self.sequencer is None:
            apply_writes(plan_writes(fanout, value, store, scope), store, node.id)
            return
        plan_writes(fanout, value, store, scope)  # refuse now, before any part is held
        held: dict[GroupKey, list[Target]] = {}
        now: list[Target] = []
        for target in fanout:
            key = (node.instance, target.kind, target.field)
            (held.setdefault(key, []) if key in node.groups else now).append(target)
        if now:
            apply_writes(plan_writes(tuple(now), value, store, scope), store, node.id)
        writes = {
            key: _later(node, tuple(targets), value, store, scope) for key, targets in held.items()
        }
        self.sequencer.deposit(node.position, node.groups, writes)

    def abandon(self, node: Node) -> None:
        """``node`` failed: let its sequenced groups go on without it."""
        if node.groups and self.sequencer is not None:
            self.sequencer.deposit(node.position, node.groups, {})

    def call_sync(self, position: int) -> dict[str, Any]:
        """Run node ``position`` with a sync tool (a WorkGraph node value)."""
        node = self.nodes[position]
        done = False
        try:
            result = node.tool.fn(**self.prepare(node))  # type: ignore[misc]
            if inspect.isawaitable(result):
                close = getattr(result, "close", None)
                if callable(close):
                    close()
                raise TypeError(
                    f"tool {node.tool.name!r} returned an awaitable from a plain function; "
                    "make the function 'async def' so the plan awaits it"
                )
            record = self.finish(node, result)
            done = True
            return record
        except Exception as exc:
            raise failure(node, exc) from exc
        finally:
            if not done:
                self.abandon(node)

    async def call_async(self, position: int) -> dict[str, Any]:
        """Run node ``position`` with an async tool (a WorkGraph node value)."""
        node = self.nodes[position]
        done = False
        try:
            result = node.tool.fn(**self.prepare(node))  # type: ignore[misc]
            if inspect.isawaitable(result):
                result = await result
            record = self.finish(node, result)
            done = True
            return record
        except Exception as exc:
            raise failure(node, exc) from exc
        finally:
            if not done:
                self.abandon(node)

    def restore(self, node: Node, record: Any) -> None:
        """Take a recorded node's result on resume; an instance's writes are made again
        (its fork is new in every run), a global node's are in the store already."""
        if not isinstance(record, Mapping):
            return
        value = record.get("value")
        self.results[node.id] = value
        alt = record.get("alt")
        if node.instance is not None and node.output is not None and isinstance(alt, int):
            fanout = node.output.alternatives[alt]
            store = self.store_of(node)
            apply_writes(
                plan_writes(fanout, value, store, self.scopes[node.instance]), store, node.id
            )

    def output(self) -> Any:
        """The plan's ``output`` reference, or the result of its last call."""
        text = self.compiled.output
        if text is not None:
            return read_expression(Expression.parse(text), self.global_scope)
        if not self.nodes:
            return None
        return self.results.get(self.nodes[-1].id)

    def result(self, *, run_id: str | None, simulated: bool) -> PlanResult:
        return PlanResult(
            results=dict(self.results),
            store=self.store,
            instances=dict(self.forks),
            output=self.output(),
            run_id=run_id,
            simulated=simulated,
        )


def _later(
    node: Node, targets: tuple[Target, ...], value: Any, store: Store, scope: Scope
) -> Callable[[], None]:
    def apply() -> None:
        try:
            apply_writes(plan_writes(targets, value, store, scope), store, node.id)
        except Exception as exc:
            raise failure(node, exc) from exc

    return apply


def is_async_tool(fn: Any) -> bool:
    """Whether calling ``fn`` gives a coroutine (``async def``, also behind a partial or
    an object's ``__call__``)."""
    if inspect.iscoroutinefunction(fn):
        return True
    call = getattr(type(fn), "__call__", None)  # noqa: B004
    return call is not None and inspect.iscoroutinefunction(call)


def failure(node: Node, exc: BaseException) -> PlanRunError:
    """The error of a call that failed, naming it; ``exc`` becomes its cause."""
    if isinstance(exc, PlanRunError) and exc.call == node.id:
        return exc
    where = f" on instance {node.instance!r}" if node.instance is not None else ""
    what = str(exc) if isinstance(exc, WeftError) else f"{type(exc).__name__}: {exc}"
    return PlanRunError(
        f"call {node.index} ({node.tool.name}, id {node.id!r}){where} failed: {what}",
        call=node.id,
        tool=node.tool.name,
        index=node.index,
    )
