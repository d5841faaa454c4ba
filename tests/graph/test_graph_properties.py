"""Property test: any DAG gives the same results and state however it is run."""

from __future__ import annotations

import asyncio
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from weft.graph import ResultPassDownMode, StateView, WorkGraph, WorkGraphNode
from weft.store import Store, reducers


@st.composite
def dags(draw: st.DrawFn) -> list[list[int]]:
    """``preds[i]``: the predecessors of node ``i``, all lower than ``i``."""
    size = draw(st.integers(1, 12))
    return [
        sorted(draw(st.sets(st.integers(0, i - 1), max_size=3))) if i else [] for i in range(size)
    ]


def build(preds: list[list[int]], *, as_async: bool) -> WorkGraph:
    def make(i: int) -> Any:
        def body(view: StateView, *parts: Any) -> dict[str, Any]:
            return {"log": [i, *parts], f"n{i}": len(view.get("log", []))}

        if not as_async:
            return body

        async def run(view: StateView, *parts: Any) -> dict[str, Any]:
            await asyncio.sleep(0)
            return body(view, *parts)

        return run

    nodes = [
        WorkGraphNode(make(i), ResultPassDownMode.ResultAsLeadingArgs, id=f"n{i}", state=True)
        for i in range(len(preds))
    ]
    for i, ps in enumerate(preds):
        for p in ps:
            nodes[p].add_next(nodes[i])
    return WorkGraph(start_nodes=[n for n, ps in zip(nodes, preds, strict=True) if not ps])


def outcome(preds: list[list[int]], *, as_async: bool, how: str) -> tuple[Any, Any]:
    store = Store(reducers={"state:log": reducers.append})
    graph = build(preds, as_async=as_async)
    if how == "bounded":
        graph.max_concurrency = 1
    result = asyncio.run(graph.arun(store=store)) if how == "arun" else graph.run(store=store)
    return result, store.to_dict(kind="state")


@settings(max_examples=60, deadline=None)
@given(dags())
def test_a_dag_gives_one_result_and_one_state_however_it_runs(preds: list[list[int]]) -> None:
    expected = outcome(preds, as_async=False, how="run")  # no event loop: inline and threads
    assert outcome(preds, as_async=False, how="arun") == expected  # threads, on a loop
    assert outcome(preds, as_async=False, how="bounded") == expected  # one at a time
    assert outcome(preds, as_async=True, how="run") == expected  # tasks
