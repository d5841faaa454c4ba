"""Running one call of a compiled plan: resolve, call, choose the output, decide the
writes; the same steps for the WorkGraph runner (on each node's view of the store) and for
``simulate``. A call writes nothing itself: it returns its ``Writes`` with its record, and
the engine commits them in graph order (no store fork per call).

An instance's state lives in the run's store beside the global state, at the paths
``@<instance>/<field>`` of ``state`` and ``shared``: an instance call reads its own field
(its own inputs) if there is one and the global one otherwise, and writes its own only.
"""

from __future__ import annotations

import inspect
from collections.abc import Iterator, Mapping
from typing import Any, Final

from weft.calls.dataflow import CompiledPlan, Node
from weft.calls.imports import clean_room
from weft.calls.result import PlanResult
from weft.calls.watch import acall_tool, call_tool
from weft.errors import PlanRunError, ToolArgumentsError, WeftError
from weft.graph.offload import NodeExecutor, RemoteCall
from weft.graph.state import Writes
from weft.refs.outputs import split_choice
from weft.refs.parse import Expression
from weft.refs.resolve import read_expression
from weft.refs.scopes import MappingScope, Scope, StoreScope
from weft.refs.writes import apply_writes, method_reducer, plan_writes
from weft.store import MISSING, Store, freeze

_PLAIN: Final = frozenset({str, int, float, bool, type(None)})
"""Results that are neither awaitable nor a choice of output path."""

INSTANCE_KINDS: Final = ("state", "shared")
"""The kinds an instance has fields of its own in."""


def instance_path(instance: str, field: str) -> str:
    """Where an instance's ``field`` lives in the run's store (kinds state and shared)."""
    return f"@{instance}/{field}"


class InstanceScope:
    """An instance call's view: the instance's own fields over the global ones."""

    __slots__ = ("given", "instance", "store")

    def __init__(self, store: Store, instance: str, given: Scope) -> None:
        self.store = store
        self.instance = instance
        self.given = given

    def lookup(self, kind: str, field: str) -> Any:
        if kind in INSTANCE_KINDS:
            entry = self.store.get(kind, instance_path(self.instance, field))
            if entry is not None:
                return entry.value
        elif kind == "input":
            found = self.given.lookup(kind, field)
            if found is not MISSING:
                return found
        entry = self.store.get(kind, field)
        return MISSING if entry is None else entry.value

    def fields(self, kind: str) -> list[str]:
        names = {e.path for e in self.store.entries(kind=kind, key_prefix=f"{kind}:")}
        mine = f"@{self.instance}/"
        own = {name[len(mine) :] for name in names if name.startswith(mine)}
        shared = {name for name in names if not name.startswith("@")}
        if kind == "input":
            own |= set(self.given.fields(kind))
        return sorted(own | shared)

    def __repr__(self) -> str:
        return f"InstanceScope({self.instance!r} over {self.store!r})"


class Runtime:
    """One execution of a compiled plan on ``store`` (see the module docstring)."""

    def __init__(self, compiled: CompiledPlan, store: Store) -> None:
        self.compiled = compiled
        self.store = store
        self.nodes = compiled.nodes
        self.state_schema = compiled.state_schema
        for name, value in compiled.inputs.items():
            store.write("input", name, value, source="caller", replace=True)
        self.given: dict[str, Scope] = {
            name: MappingScope({"input": freeze(dict(inputs), where=f"instance {name} inputs")})
            for name, inputs in compiled.instances.items()
        }
        self._declare_instance_fields(store)
        self.results: dict[str, Any] = {}
        self.records: dict[int, Mapping[str, Any]] = {}  # by position: {"value", "alt"}

    def _declare_instance_fields(self, store: Store) -> None:
        """A field written with a method (``:push``, ``:concat``, ``:merge``) and no reducer
        of its own takes the method's reducer, so calls that write it in parallel combine
        when they are committed; an instance's field takes the reducer of the global one."""
        for node in self.nodes:
            if node.output is None:
                continue
            for target in node.output.targets:
                reducer = method_reducer(target.method)
                if (
                    reducer is not None
                    and not target.path
                    and store.reducer_of(target.kind, target.field) == "replace"
                ):
                    store.declare(target.kind, target.field, reducer)
                if node.instance is not None:
                    path = instance_path(node.instance, target.field)
                    store.declare(target.kind, path, store.reducer(target.kind, target.field))

    def scope(self, node: Node, store: Store) -> Scope:
        """What ``node`` reads: its view ``store``, as its instance sees it if it has one."""
        if node.instance is None:
            return StoreScope(store)
        return InstanceScope(store, node.instance, self.given[node.instance])

    def prepare(self, node: Node, scope: Scope) -> dict[str, Any]:
        """The keyword arguments of ``node``'s tool (references resolved, checked)."""
        room = None
        if node.tool.isolated:
            room = clean_room(node.imports or (), scope, name=f"module:{node.id}")
            scope = StoreScope(room)
        args = node.args.resolve(scope)
        try:  # literal arguments were checked when the plan was built; references now
            kwargs = node.tool.check_arguments(args, schema_checked=not node.check_arguments)
        except ToolArgumentsError as exc:
            where = f" on instance {node.instance!r}" if node.instance is not None else ""
            raise PlanRunError(
                f"call {node.index} ({node.tool.name}, id {node.id!r}){where}: the "
                f"resolved arguments do not fit the tool's JSON Schema: "
                f"{'; '.join(exc.problems)}; a reference supplied a value of the wrong shape",
                call=node.id,
                tool=node.tool.name,
                index=node.index,
            ) from exc
        if room is not None:
            kwargs["store"] = room
        return kwargs

    def finish(self, node: Node, result: Any, store: Store, scope: Scope) -> Writes:
        """The writes of ``result`` to ``node``'s output path (decided on ``store``, the
        call's view, and checked: all or none), with the call's record as their result."""
        value, chosen = (result, None) if result.__class__ in _PLAIN else split_choice(result)
        output = node.output
        self.results[node.id] = value
        if output is None:
            record = self.records[node.position] = {"value": value, "alt": None}
            return Writes((), record, source=node.id)
        if chosen is None and self.state_schema is None and len(output.alternatives) == 1:
            index = 0  # one place to go, and no schema to check it against
        else:
            index = output.choose(value, state_schema=self.state_schema, chosen=chosen)
        ops = plan_writes(output.alternatives[index], value, store, scope)
        instance = node.instance
        writes = [
            (
                op.kind,
                op.field if instance is None else instance_path(instance, op.field),
                op.value,
                op.replace,
            )
            for op in ops
        ]  # an instance call writes its instance's fields
        record = self.records[node.position] = {"value": value, "alt": index}
        return Writes(writes, record, source=node.id)

    def call_sync(self, position: int, store: Store) -> Writes:
        """Run node ``position`` with a sync tool, on its view ``store``."""
        node = self.nodes[position]
        return call_tool(node.tool.name, node.id, self._call_sync, node, store)  # type: ignore[no-any-return]

    async def call_async(self, position: int, store: Store) -> Writes:
        """Run node ``position`` with an async tool, on its view ``store``."""
        node = self.nodes[position]
        return await acall_tool(node.tool.name, node.id, self._call_async, node, store)  # type: ignore[no-any-return]

    def _call_sync(self, node: Node, store: Store) -> Writes:
        try:
            scope = self.scope(node, store)
            result = node.tool.fn(**self.prepare(node, scope))  # type: ignore[misc]
            if result.__class__ not in _PLAIN and inspect.isawaitable(result):
                close = getattr(result, "close", None)
                if callable(close):
                    close()
                raise PlanRunError(
                    f"tool {node.tool.name!r} returned an awaitable from a plain function; "
                    "make the function 'async def' so the plan awaits it",
                    call=node.id,
                    tool=node.tool.name,
                    index=node.index,
                )
            return self.finish(node, result, store, scope)
        except Exception as exc:
            raise failure(node, exc) from exc

    async def _call_async(self, node: Node, store: Store) -> Writes:
        try:
            scope = self.scope(node, store)
            result = node.tool.fn(**self.prepare(node, scope))  # type: ignore[misc]
            if inspect.isawaitable(result):
                result = await result
            return self.finish(node, result, store, scope)
        except Exception as exc:
            raise failure(node, exc) from exc

    async def call_remote(self, position: int, store: Store, executor: NodeExecutor) -> Writes:
        """Run node ``position``'s tool on ``executor`` (``weft.graph.offload``): its
        arguments are resolved, and its result written, here on ``store``."""
        node = self.nodes[position]
        return await acall_tool(node.tool.name, node.id, self._call_remote, node, store, executor)  # type: ignore[no-any-return]

    async def _call_remote(self, node: Node, store: Store, executor: NodeExecutor) -> Writes:
        try:
            scope = self.scope(node, store)
            kwargs = self.prepare(node, scope)
            result = await executor.call(RemoteCall(node.id, node.tool.fn, (), kwargs))  # type: ignore[arg-type]
            return self.finish(node, result, store, scope)
        except Exception as exc:
            raise failure(node, exc) from exc

    def restore(self, node: Node, record: Any) -> None:
        """Take a recorded call's result on resume (its writes are in the store)."""
        if isinstance(record, Mapping):
            self.results[node.id] = record.get("value")

    def merge_instances(self, records: Mapping[int, Mapping[str, Any]]) -> None:
        """Write every instance's results into the global fields, instance by instance in
        the order given, through the fields' reducers (two instances setting one field is
        a ``MergeConflictError``, and then nothing is merged)."""
        calls: dict[str, list[tuple[Node, Mapping[str, Any]]]] = {
            name: [] for name in self.compiled.instances
        }  # each instance's finished calls with an output, in canonical order
        for position in self.compiled.order:
            node, record = self.nodes[position], records.get(position)
            if node.instance is not None and node.output is not None and record is not None:
                calls[node.instance].append((node, record))
        forks: list[Store] = []
        for name, done in calls.items():
            fork = self.store.fork(name=f"instance:{name}")
            scope = StoreScope(fork)
            for node, record in done:
                assert node.output is not None
                alt = record.get("alt")
                if isinstance(alt, int):
                    value = record.get("value")
                    ops = plan_writes(node.output.alternatives[alt], value, fork, scope)
                    apply_writes(ops, fork, node.id)
            forks.append(fork)
        self.store.merge(forks)

    def output(self) -> Any:
        """The plan's ``output`` reference, or the result of its last call."""
        text = self.compiled.output
        if text is not None:
            return read_expression(Expression.parse(text), StoreScope(self.store))
        return self.results.get(self.nodes[-1].id) if self.nodes else None

    def result(self, *, run_id: str | None, simulated: bool) -> PlanResult:
        return PlanResult(
            results=dict(self.results),
            store=self.store,
            instances=InstanceStores(self.store.fork(), tuple(self.compiled.instances)),
            output=self.output(),
            run_id=run_id,
            simulated=simulated,
        )


class InstanceStores(Mapping[str, Store]):
    """Each instance's store as the run left it: the run's store with the instance's own
    fields in place of the global ones, built when it is first asked for (``run`` is a
    fork of the run's store taken as the run ended)."""

    def __init__(self, run: Store, names: tuple[str, ...]) -> None:
        self._run, self._built = run, dict[str, Store]()
        self._names = dict.fromkeys(names)  # in order, and a lookup per name

    def __getitem__(self, name: str) -> Store:
        built = self._built.get(name)
        if built is not None:
            return built
        if name not in self._names:
            raise KeyError(name)
        view = self._run.fork(name=f"instance:{name}")
        mine = instance_path(name, "")
        for kind in INSTANCE_KINDS:
            for entry in self._run.entries(kind=kind, key_prefix=f"{kind}:{mine}"):
                field = entry.path[len(mine) :]
                view.write(kind, field, entry.value, source=entry.source, replace=True)
        self._built[name] = view
        return view

    def __iter__(self) -> Iterator[str]:
        return iter(self._names)

    def __len__(self) -> int:
        return len(self._names)


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
