"""An eleven-iteration agent run on a durable SQLite store, for the crash test (a script).

    python agent_crash_worker.py DATABASE THREAD COUNTER LEDGER

Iteration k (0 to 9) runs ``work`` (it pays through ``call_once``), on k = 1, 4, 7 a
parallel group of ``a`` and ``b`` (``b`` writes a note through ``call_once``; each branch
then asks the reasoner once), then ``tick``, whose result tells the reasoner where the
run is; iteration 10 completes. Each actor appends ``<pid> run <type> <k>`` to COUNTER
when it runs and sleeps a few milliseconds; each keyed effect appends ``<pid> effect
<key>`` to COUNTER, and to LEDGER only if LEDGER does not hold that key yet (a service
that accepts idempotency keys). The worker prints ``ready`` once the thread is loaded
and, when the run has ended, ``done`` and the final store as JSON.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import sys
import time
from dataclasses import fields, replace
from pathlib import Path
from typing import Any

from weft.agent import Agent
from weft.persist import DurableRun, SQLiteBackend
from weft.store import RunRecord, StepRecord, to_jsonable

LAST = 9
BRANCHING = (1, 4, 7)
CLOCK = frozenset({"started_at", "duration_ms"})
"""The wall-clock fields of run and step records: they differ between two runs of one job."""


def reasoner(prompt: str) -> str:
    if '"branch"' in prompt:
        return json.dumps({"instant_response": "branch done", "task_status": "Completed"})
    steps = re.findall(r'"step": (\d+)', prompt)
    k = max(map(int, steps)) + 1 if steps else 0
    if k > LAST:
        return json.dumps({"instant_response": f"done after {k}", "task_status": "Completed"})
    groups = [[{"type": "work", "args": {"k": k}}]]
    if k in BRANCHING:
        groups.append([{"type": "a", "args": {"k": k}}, {"type": "b", "args": {"k": k}}])
    groups.append([{"type": "tick", "args": {"k": k}}])
    return json.dumps({"next_actions": groups})


def append(path: str, line: str) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, f"{line}\n".encode())
    finally:
        os.close(fd)


def build(store: Any, counter: str, ledger: str) -> Agent:
    def ran(what: str, k: int) -> None:
        append(counter, f"{os.getpid()} run {what} {k}")

    def effect(key: str, idempotency_key: str) -> dict[str, str]:
        # given the idempotency key, weft makes a call the crash interrupted again with it
        append(counter, f"{os.getpid()} effect {key}")
        done = Path(ledger).read_text().split() if Path(ledger).exists() else []
        if key not in done:
            append(ledger, key)
        return {"done": key}

    def work(k: int, call_once: Any) -> Any:
        ran("work", k)
        time.sleep(0.002 + k % 3 / 1000)
        return call_once("pay", effect, f"pay-{k}")

    async def a(k: int) -> dict[str, Any]:
        ran("a", k)
        await asyncio.sleep(0.003)
        return {"branch": "a", "k": k}

    async def b(k: int, call_once: Any) -> dict[str, Any]:
        ran("b", k)
        await asyncio.sleep(0.002)
        return {"branch": "b", "k": k, "note": call_once("note", effect, f"note-{k}")}

    def tick(k: int) -> dict[str, int]:
        ran("tick", k)
        time.sleep(0.002)
        return {"step": k}

    return Agent(
        reasoner,
        actor={"work": work, "a": a, "b": b, "tick": tick},
        store=store,
        name="agent",
        max_iterations=20,
    )


def timeless(value: Any) -> Any:
    """A run or step record without its wall-clock fields (anything else as it is)."""
    if isinstance(value, (RunRecord, StepRecord)):
        return replace(value, **{f.name: None for f in fields(value) if f.name in CLOCK})
    return value


def main() -> None:
    database, thread, counter, ledger = sys.argv[1:5]
    backend = SQLiteBackend(database)
    try:
        with DurableRun.open(backend, thread, run_id="job", snapshot_every=25) as run:
            print("ready", flush=True)
            result = build(run.store, counter, ledger).run("go", run_id="job")
            assert result.stop_reason == "completed", result.stop_reason
            state = {
                key: to_jsonable(timeless(value)) for key, value in run.store.to_dict().items()
            }
        print("done", json.dumps(state, sort_keys=True), flush=True)
    finally:
        backend.close()


if __name__ == "__main__":
    main()
