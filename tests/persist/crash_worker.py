"""A 50-node WorkGraph on a durable store, for the crash test (run as a script).

    python crash_worker.py BACKEND THREAD COUNTER

BACKEND is ``sqlite:<path>`` or ``postgres:<schema>`` (database ``weft_test`` on
127.0.0.1). Every node appends ``<pid> <node key>`` to COUNTER when it runs, then sleeps
a few milliseconds. The worker prints ``ready`` once the thread is loaded and, when the
graph has finished, ``done`` and the final store as JSON.
"""

from __future__ import annotations

import json
import os
import sys
import time
from typing import Any

from weft.graph import ResultPassDownMode, WorkGraph, WorkGraphNode
from weft.persist import Backend, DurableRun, PostgresBackend, SQLiteBackend
from weft.store import RunRecord, StepRecord, Store, reducers, to_jsonable

PG = "postgresql://postgres@127.0.0.1:5432/weft_test"
BRANCHES = 6
DEPTH = 8  # 1 start + 6 x 8 + 1 end = 50 nodes


def open_backend(spec: str) -> Backend:
    kind, _, where = spec.partition(":")
    if kind == "sqlite":
        return SQLiteBackend(where)
    return PostgresBackend(PG, schema=where, max_size=2)


def build(counter: str) -> WorkGraph:
    def ran(name: str) -> None:
        fd = os.open(counter, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, f"{os.getpid()} {name}\n".encode())
        finally:
            os.close(fd)
        time.sleep(0.002 + (sum(map(ord, name)) % 4) / 1000)

    def plain(name: str) -> WorkGraphNode:
        def call(x: Any) -> str:
            ran(name)
            return f"{name}<{len(str(x))}>"

        return WorkGraphNode(call, ResultPassDownMode.ResultAsFirstArg, id=name)

    def stateful(name: str) -> WorkGraphNode:
        def call(view: Any, x: Any) -> dict[str, Any]:
            ran(name)
            return {"log": name, "total": len(view.get("log", [])) + 1}

        return WorkGraphNode(call, ResultPassDownMode.ResultAsFirstArg, id=name, state=True)

    start = plain("start")
    end = WorkGraphNode(lambda *xs: (ran("end"), sorted(map(str, xs)))[1], id="end")
    for b in range(BRANCHES):
        node = start
        for d in range(DEPTH):
            name = f"b{b}n{d}"
            nxt = stateful(name) if d % 3 == 2 else plain(name)
            node = node.add_next(nxt)
        node.add_next(end)
    return WorkGraph(start_nodes=[start], max_concurrency=3)


def outcome(store: Store) -> dict[str, Any]:
    """What must match an uninterrupted run: the state, each node's recorded result and
    flag, and the run's status and output (times and step numbers may differ)."""
    out: dict[str, Any] = {
        key: to_jsonable(value) for key, value in store.to_dict(kind="state").items()
    }
    for entry in store.entries(kind="step"):
        record = entry.value
        if isinstance(record, StepRecord):
            out[entry.key] = [to_jsonable(record.result), record.flag, record.committed]
        elif isinstance(record, RunRecord):
            out[entry.key] = [record.status, to_jsonable(record.output)]
    return out


def main() -> None:
    spec, thread, counter = sys.argv[1:4]
    backend = open_backend(spec)
    try:
        with DurableRun.open(
            backend,
            thread,
            run_id="job",
            snapshot_every=40,
            reducers={"state:log": reducers.append, "state:total": reducers.add},
        ) as run:
            run.store.declare("state", "log", reducers.append)
            run.store.declare("state", "total", reducers.add)
            print("ready", flush=True)
            run.run_graph(build(counter), "input")
            state = outcome(run.store)
        print("done", json.dumps(state, sort_keys=True), flush=True)
    finally:
        backend.close()


if __name__ == "__main__":
    main()
