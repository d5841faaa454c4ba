"""The run context: what a node that asks for ``ctx`` gets, and where its writes go."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

import pytest
from graph_helpers import Mode

from weft.errors import NodeError
from weft.graph import ResultPassDownMode, RunContext, WorkGraph, WorkGraphNode
from weft.store import Store, reducers

R = ResultPassDownMode


@dataclass(frozen=True)
class Deps:
    greeting: str


def test_a_node_that_names_ctx_gets_the_deps_its_key_and_the_run_id(mode: Mode) -> None:
    seen: list[RunContext[Deps]] = []

    def greet(name: str, ctx: RunContext[Deps]) -> str:
        seen.append(ctx)
        return f"{ctx.deps.greeting}, {name}"

    graph = WorkGraph([WorkGraphNode(mode.fn(greet), id="greet")])
    out = mode.run(graph, "Ada", store=Store(), run_id="r1", context=Deps("Hello"))
    assert out == "Hello, Ada"
    (ctx,) = seen
    assert (ctx.node, ctx.label, ctx.run_id, ctx.deps) == ("greet#0", "greet", "r1", Deps("Hello"))


def test_a_node_without_ctx_is_called_with_its_arguments_only(mode: Mode) -> None:
    graph = WorkGraph([WorkGraphNode(mode.fn(lambda name: name.upper()))])
    assert mode.run(graph, "ada", context=Deps("Hello")) == "ADA"


def test_what_a_node_writes_to_its_fork_reaches_its_successors_and_the_store(mode: Mode) -> None:
    def first(ctx: RunContext[None]) -> None:
        ctx.store.write("shared", "seen", ["first"])

    def second(ctx: RunContext[None]) -> list[str]:
        before = ctx.store.value("shared", "seen")
        ctx.store.write("shared", "seen", [*before, "second"])
        return list(before)

    a = WorkGraphNode(mode.fn(first), id="first")
    a.add_next(WorkGraphNode(mode.fn(second), id="second"))
    store = Store()
    assert mode.run(WorkGraph([a]), store=store) == ["first"]
    assert store.value("shared", "seen") == ["first", "second"]


def test_a_branch_never_sees_its_siblings_writes(mode: Mode) -> None:
    store = Store(reducers={"shared:log": reducers.append})

    def branch(name: str, delay: float) -> Any:
        def run(ctx: RunContext[None]) -> list[str]:
            ctx.store.write("shared", "log", name)
            return list(ctx.store.value("shared", "log"))

        return mode.fn(run, sleep=delay)

    root = WorkGraphNode(mode.fn(lambda: None), id="root")
    root.add_next(WorkGraphNode(branch("left", 0.02), id="left"))
    root.add_next(WorkGraphNode(branch("right", 0.0), id="right"))
    out = mode.run(WorkGraph([root]), store=store)
    assert out == [["left"], ["right"]]  # each saw its own write, not the other's
    assert store.value("shared", "log") == ["left", "right"]  # committed in graph order


def test_a_state_node_that_takes_ctx_keeps_both_its_delta_and_its_writes(mode: Mode) -> None:
    def tally(view: Any, ctx: RunContext[None]) -> dict[str, Any]:
        ctx.store.write("shared", "audit", f"tallied by {ctx.node}")
        return {"count": view.get("count", 0) + 1}

    a = WorkGraphNode(mode.fn(tally), state=True, id="tally")
    a.add_next(WorkGraphNode(mode.fn(tally), state=True, id="tally"))
    store = Store()
    mode.run(WorkGraph([a]), store=store, run_id="r1")
    assert store.value("state", "count") == 2
    assert store.value("shared", "audit") == "tallied by tally#1"


def test_a_failed_node_commits_nothing_it_wrote_and_what_came_before_stays(mode: Mode) -> None:
    def keep(ctx: RunContext[None]) -> None:
        ctx.store.write("shared", "kept", True)

    def fail(ctx: RunContext[None]) -> None:
        ctx.store.write("shared", "lost", True)
        raise RuntimeError("down")

    a = WorkGraphNode(mode.fn(keep), id="keep")
    a.add_next(WorkGraphNode(mode.fn(fail), id="fail"))
    store = Store()
    with pytest.raises(NodeError, match="fail"):
        mode.run(WorkGraph([a]), store=store)
    assert store.value("shared", "kept") is True
    assert not store.has("shared", "lost")


class Charges:
    def __init__(self) -> None:
        self.made: list[int] = []
        self.fail_after = True

    def charge(self, amount: int) -> str:
        self.made.append(amount)
        return f"receipt-{len(self.made)}"


def test_call_once_is_not_repeated_when_a_recorded_run_resumes(mode: Mode) -> None:
    charges = Charges()

    def pay(ctx: RunContext[Charges]) -> str:
        receipt = ctx.call_once("charge", ctx.deps.charge, 30)
        if ctx.deps.fail_after:
            raise RuntimeError("the mail server is down")
        return str(receipt)

    graph = WorkGraph([WorkGraphNode(mode.fn(pay), id="pay")])
    store = Store()
    with pytest.raises(NodeError):
        mode.run(graph, store=store, run_id="r1", context=charges)
    charges.fail_after = False
    assert mode.run(graph, store=store, run_id="r1", context=charges) == "receipt-1"
    assert charges.made == [30]  # charged once, across the crash
    assert store.value("step", "r1/pay#0/calls/charge").result == "receipt-1"


def test_call_once_without_a_run_id_just_calls(mode: Mode) -> None:
    charges = Charges()
    charges.fail_after = False

    def pay(ctx: RunContext[Charges]) -> str:
        return str(ctx.call_once("charge", ctx.deps.charge, 5))

    graph = WorkGraph([WorkGraphNode(mode.fn(pay), id="pay")])
    mode.run(graph, context=charges)
    mode.run(graph, context=charges)
    assert charges.made == [5, 5]


def test_acall_once_records_an_async_effect_once() -> None:
    made: list[str] = []

    async def send(text: str) -> str:
        made.append(text)
        return f"sent {text}"

    failing = [True]

    async def notify(ctx: RunContext[None]) -> str:
        sent = await ctx.acall_once("mail", send, "hi")
        if failing[0]:
            raise RuntimeError("down after sending")
        return str(sent)

    graph = WorkGraph([WorkGraphNode(notify, id="notify")])
    store = Store()
    with pytest.raises(NodeError):
        asyncio.run(graph.arun(store=store, run_id="r1"))
    failing[0] = False
    assert asyncio.run(graph.arun(store=store, run_id="r1")) == "sent hi"
    assert made == ["hi"]
