"""Keyed calls on a DurableRun, for the exactly-once crash tests (``main`` or a script).

    python once_crash_worker.py BACKEND THREAD COUNTER SCENARIO PHASE

BACKEND is ``sqlite:<path>`` or ``postgres:<schema>`` (see ``crash_helpers``). The effect
(``charge``) stands for a call to a service: it appends ``<pid> effect <idempotency key>``
to COUNTER, which is the service's own log. A reconcile hook appends ``<pid> reconcile
<key>`` when it is asked. SCENARIO says how the call is made (one call each, except
``random``):

- ``reconcile``: ``DurableRun.call_once`` with a hook that asks the service (reads
  COUNTER) and returns the result of a charge it finds, else ``NOT_DONE``;
- ``not_done``: the same, with a hook that always answers ``NOT_DONE``;
- ``key``: no hook; the effect takes the idempotency key;
- ``plain``: no hook; the effect takes no key;
- ``async``: ``DurableRun.acall_once`` with an async hook that asks the service;
- ``graph``: a WorkGraph node's ``ctx.call_once`` (run id ``job``), hook asking the service;
- ``random``: a WorkGraph of ``CALLS`` nodes, each a keyed call (sync or async), then as
  many ``DurableRun.call_once``; the hooks ask the service, and each effect sleeps a few
  milliseconds after its line (the window between the effect and its record).

PHASE ``die``: the effect kills its own process with SIGKILL right after its line (the
crash between the effect and its record). ``run``: nothing dies on purpose. The worker
prints ``ready`` once the thread is loaded and, when done, ``done`` and what the calls
returned as JSON, or the error they raised (type, key, idempotency key).
"""

from __future__ import annotations

import asyncio
import itertools
import os
import sys
import time
from pathlib import Path
from typing import Any

from crash_helpers import append_line, die_now, dump, effects, open_backend
from weft.errors import UnreconciledCallError
from weft.graph import ResultPassDownMode, RunContext, WorkGraph, WorkGraphNode
from weft.persist import DurableRun
from weft.store import NOT_DONE, to_jsonable

CALLS = 6
"""Keyed calls made inside graph nodes in the ``random`` scenario (and as many more by
``DurableRun.call_once``)."""


FIRST = ResultPassDownMode.ResultAsFirstArg


class Service:
    """The service the effects reach: its log is COUNTER."""

    def __init__(self, counter: str, die: bool, pause: float = 0.0) -> None:
        self.counter, self.die, self.pause = Path(counter), die, pause

    def charge(self, order: int, idempotency_key: str) -> dict[str, Any]:
        append_line(self.counter, f"{os.getpid()} effect {idempotency_key}")
        if self.die:
            die_now()
        time.sleep(self.pause)
        return {"charged": order}

    def charge_without_key(self, order: int) -> dict[str, Any]:
        return self.charge(order, f"order-{order}")

    async def acharge(self, order: int, idempotency_key: str) -> dict[str, Any]:
        await asyncio.sleep(0)
        return self.charge(order, idempotency_key)

    def lookup(self, order: int) -> Any:
        """A reconcile hook for ``order``: the service's answer for the key."""

        def reconcile(idempotency_key: str) -> Any:
            append_line(self.counter, f"{os.getpid()} reconcile {idempotency_key}")
            done = f"effect {idempotency_key}" in {what for _pid, what in effects(self.counter)}
            return {"charged": order} if done else NOT_DONE

        return reconcile

    def alookup(self, order: int) -> Any:
        sync = self.lookup(order)

        async def reconcile(idempotency_key: str) -> Any:
            await asyncio.sleep(0)
            return sync(idempotency_key)

        return reconcile

    def never_done(self, idempotency_key: str) -> Any:
        append_line(self.counter, f"{os.getpid()} reconcile {idempotency_key}")
        return NOT_DONE


def one_call(run: DurableRun, service: Service, scenario: str) -> Any:
    if scenario == "reconcile":
        return run.call_once("charge", service.charge, 17, reconcile=service.lookup(17))
    if scenario == "not_done":
        return run.call_once("charge", service.charge, 17, reconcile=service.never_done)
    if scenario == "key":
        return run.call_once("charge", service.charge, 17)
    if scenario == "plain":
        return run.call_once("charge", service.charge_without_key, 17)
    if scenario == "async":
        return asyncio.run(
            run.acall_once("charge", service.acharge, 17, reconcile=service.alookup(17))
        )
    if scenario == "graph":

        def pay(order: int, ctx: RunContext[Service]) -> Any:
            return ctx.call_once("charge", ctx.deps.charge, order, reconcile=service.lookup(order))

        graph = WorkGraph([WorkGraphNode(pay)])
        return run.run_graph(graph, 17, run_id="job", context=service)
    raise SystemExit(f"unknown scenario {scenario!r}")


def many_calls(run: DurableRun, service: Service) -> Any:
    """``CALLS`` graph nodes in a chain, each a keyed call (sync and async in turn), then
    ``CALLS`` calls of the run as a whole."""

    def pay(previous: Any, ctx: RunContext[Service]) -> Any:
        order = int(ctx.label[3:])
        out = ctx.call_once("charge", service.charge, order, reconcile=service.lookup(order))
        return [*previous, out]

    async def apay(previous: Any, ctx: RunContext[Service]) -> Any:
        order = int(ctx.label[3:])
        out = await ctx.acall_once(
            "charge", service.acharge, order, reconcile=service.alookup(order)
        )
        return [*previous, out]

    nodes = [
        WorkGraphNode(pay if i % 2 == 0 else apay, id=f"pay{i}", result_pass_down_mode=FIRST)
        for i in range(CALLS)
    ]
    for left, right in itertools.pairwise(nodes):
        left.add_next(right)
    out = list(run.run_graph(WorkGraph([nodes[0]]), [], run_id="job", context=service))
    for i in range(CALLS, 2 * CALLS):
        out.append(run.call_once(f"charge-{i}", service.charge, i, reconcile=service.lookup(i)))
    return out


def main(argv: list[str]) -> None:
    spec, thread, counter, scenario, phase = argv
    service = Service(counter, die=phase == "die", pause=0.003 if scenario == "random" else 0)
    backend = open_backend(spec)
    try:
        with DurableRun.open(backend, thread, run_id="job") as run:
            print("ready", flush=True)
            try:
                if scenario == "random":
                    out: Any = many_calls(run, service)
                else:
                    out = one_call(run, service, scenario)
            except UnreconciledCallError as exc:
                out = {
                    "error": type(exc).__name__,
                    "key": exc.key,
                    "idempotency_key": exc.idempotency_key,
                }
        print("done", dump(to_jsonable(out)), flush=True)
    finally:
        backend.close()


if __name__ == "__main__":
    main(sys.argv[1:])
