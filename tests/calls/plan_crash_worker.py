"""A plan of 39 tool calls on a DurableRun, for the crash test (``main`` or a script).

    python plan_crash_worker.py BACKEND THREAD COUNTER

BACKEND is ``sqlite:<path>`` or ``postgres:<schema>`` (see ``crash_helpers``). The plan:
``seed`` writes ``state.base``; twelve async ``grow`` calls fan out from it and push to
``state.parts`` (unordered, finishing in a scrambled order); twelve sync ``square`` calls
run on the engine's threads, each to a field of its own (``state.sq<i>``), and ``total``
fans them in; a chain of five ``step`` calls; on the instances ``a``, ``b`` and ``c`` a
``tag`` and a ``note`` each (the instance fields ``state:@<instance>/tag`` and a push to
``state:@<instance>/log``), and a ``bonus`` note on ``b`` only; ``report`` fans the
global results in. Each call appends ``<pid> <call id>`` to COUNTER when its tool runs,
then sleeps a few milliseconds. The worker prints ``ready`` once the thread is loaded
and, when the plan has run, ``done`` and what must match an uninterrupted run
(``outcome``) as JSON.
"""

from __future__ import annotations

import asyncio
import os
import sys
import time
from typing import Any

from crash_helpers import append_line, dump, open_backend
from weft.calls import Plan, Tool
from weft.persist import DurableRun
from weft.store import RunRecord, StepRecord, Store, to_jsonable

PRELOAD = ("jsonschema",)  # what the fork server imports (see crash_helpers)
RUN = "plan"
INSTANCES = {"a": {"name": "a"}, "b": {"name": "b"}, "c": {"name": "c"}}
GROW, SQUARE, CHAIN = 12, 12, 5


def plan() -> Plan:
    calls: list[dict[str, Any]] = [
        {"_tool": "seed", "_id": "seed", "label": "seed", "value": 7, "_outputPath": "†state.base"}
    ]
    for i in range(GROW):
        calls.append(
            {
                "_tool": "grow",
                "_id": f"grow{i}",
                "label": f"grow{i}",
                "base": "†state.base",
                "i": i,
                "_outputPath": "†state.parts:push",
            }
        )
    for i in range(SQUARE):
        calls.append(
            {
                "_tool": "square",
                "_id": f"square{i}",
                "label": f"square{i}",
                "n": i,
                "_outputPath": f"†state.sq{i}",
            }
        )
    calls.append(
        {
            "_tool": "total",
            "_id": "total",
            "label": "total",
            "values": [f"†state.sq{i}" for i in range(SQUARE)],
            "_outputPath": "†state.total",
        }
    )
    previous: Any = "†state.base"
    for i in range(CHAIN):
        calls.append(
            {
                "_tool": "step",
                "_id": f"step{i}",
                "label": f"step{i}",
                "previous": previous,
                "_outputPath": f"†state.chain{i}",
            }
        )
        previous = f"†state.chain{i}"
    calls += [
        {
            "_tool": "tag",
            "_id": "tag",
            "_instance": "*",
            "label": "tag",
            "name": "†input.name",
            "base": "†state.base",
            "_outputPath": "†state.tag",
        },
        {
            "_tool": "note",
            "_id": "note",
            "_instance": "*",
            "label": "note",
            "name": "†input.name",
            "tag": "†state.tag",
            "_outputPath": "†state.log:push",
        },
        {
            "_tool": "note",
            "_id": "bonus",
            "_instance": "b",
            "label": "bonus",
            "name": "†input.name",
            "tag": "†state.chain1",
            "_outputPath": "†state.log:push",
        },
        {
            "_tool": "report",
            "_id": "report",
            "label": "report",
            "total": "†state.total",
            "parts": "†state.parts",
            "last": f"†state.chain{CHAIN - 1}",
            "_outputPath": "†state.report",
        },
    ]
    return Plan(calls, output="†state.report")


def tools(counter: str) -> list[Tool]:
    def ran(label: str, name: str | None = None) -> None:
        what = label if name is None else f"{label}@{name}"
        append_line(counter, f"{os.getpid()} {what}")

    def seed(label: str, value: int) -> int:
        ran(label)
        time.sleep(0.002)
        return value

    async def grow(label: str, base: int, i: int) -> str:
        ran(label)
        await asyncio.sleep((i * 7 % 5 + 1) / 1000)  # finish out of plan order
        return f"{base}-{i}"

    def square(label: str, n: int) -> int:
        ran(label)
        time.sleep((n % 3 + 1) / 1000)
        return n * n

    def total(label: str, values: list[int]) -> int:
        ran(label)
        time.sleep(0.002)
        return sum(values)

    async def step(label: str, previous: Any) -> str:
        ran(label)
        await asyncio.sleep(0.002)
        return f"{previous}>{label}"

    async def tag(label: str, name: str, base: int) -> str:
        ran(label, name)
        await asyncio.sleep(0.003)
        return f"{name}:{base}"

    def note(label: str, name: str, tag: str) -> dict[str, str]:
        ran(label, name)
        time.sleep(0.002)
        return {"by": label, "on": name, "saw": tag}

    def report(label: str, total: int, parts: list[str], last: str) -> dict[str, Any]:
        ran(label)
        time.sleep(0.002)
        return {"total": total, "parts": parts, "last": last}

    return [
        Tool(name="seed", fn=seed),
        Tool(name="grow", fn=grow),
        Tool(name="square", fn=square, blocking=True),
        Tool(name="total", fn=total, blocking=True),
        Tool(name="step", fn=step),
        Tool(name="tag", fn=tag),
        Tool(name="note", fn=note),
        Tool(name="report", fn=report, blocking=True),
    ]


def outcome(store: Store, results: Any, output: Any) -> dict[str, Any]:
    """What must match an uninterrupted run: every state field (global and instance),
    each call's record (result, flag, committed), the run's record, the results by call
    id and the output (times and step numbers may differ)."""
    out: dict[str, Any] = {
        key: to_jsonable(value) for key, value in store.to_dict(kind="state").items()
    }
    for entry in store.entries(kind="step"):
        record = entry.value
        if isinstance(record, StepRecord):
            out[entry.key] = [to_jsonable(record.result), record.flag, record.committed]
        elif isinstance(record, RunRecord):
            out[entry.key] = [record.status, to_jsonable(record.output)]
    out["results"] = to_jsonable(dict(results))
    out["output"] = to_jsonable(output)
    return out


def main(argv: list[str]) -> None:
    spec, thread, counter = argv
    backend = open_backend(spec)
    try:
        with DurableRun.open(backend, thread, run_id=RUN, snapshot_every=30) as run:
            print("ready", flush=True)
            result = plan().run(tools(counter), durable=run, instances=INSTANCES, max_concurrency=4)
            state = outcome(run.store, result.results, result.output)
        print("done", dump(state), flush=True)
    finally:
        backend.close()


if __name__ == "__main__":
    main(sys.argv[1:])
