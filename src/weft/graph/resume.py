"""Save and resume, and the node-lifecycle events: what a run writes to its store.

With ``run(..., run_id="r1", store=store)`` the engine writes, as each node finishes and
before its successors start, a step record at kind ``"step"``, path ``"r1/<node key>"``::

    {"node": "fetch#2", "id": "fetch", "flag": "Continue", "result": ..., "tuple": false}

A state node's result is its delta, recorded once as ``"delta": {...}`` (no ``result``).

and one run record at path ``"r1"``: ``{"graph": [node keys...], "status": "running"}``,
``"completed"`` with the run's ``output`` once it ends. Running the same graph again with
the same run id and store restores recorded nodes instead of calling them (their recorded
results feed their successors, their deltas join the state) and runs the rest; a
completed run returns its recorded output and calls nothing. Records are keyed by run id
*and* node key, so one graph run under two run ids never mixes results; a run id recorded
for a different graph (other node keys) is refused.

Recording needs JSON: a result the store cannot keep is an error naming the node and the
type (register it with ``weft.store.register_type``). Results come back frozen (read-only
dicts and lists); a tuple result comes back a tuple.

Events go to observers through ``Store.note`` (kind ``"step"``, same paths), only when a
store is given and someone observes it as the run starts (``Store.observed``: a subscriber
such as a live UI or a durable backend's feed; subscribe before you start the run), so a
run nobody watches pays nothing for them, not even a clock read per node. The step
records above are written either way: resume needs them, observers do not::

    {"event": "started" | "finished" | "failed" | "skipped", "node": key, "id": label,
     "run_id": ..., "duration_ms": ..., "flag": ..., "error": ..., "reason": ...}

``skipped`` carries a reason: ``"aborted"`` (every predecessor was aborted or skipped),
``"recorded"`` (restored from a step record) or ``"cancelled"`` (stopped by a failure).
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from weft.errors import GraphError, NodeError, ValueTypeError
from weft.graph.modes import WorkGraphStopFlags
from weft.store import MISSING, FrozenDict, Store, thaw


@dataclass(frozen=True, slots=True)
class Recorded:
    """A node's step record, as a resumed run uses it."""

    flag: WorkGraphStopFlags
    result: Any
    delta: dict[str, Any] | None


class Recorder:
    """Writes one run's step records (when it has a run id) and events (always)."""

    __slots__ = ("_held", "_keys", "_labels", "_paths", "events", "record", "run_id", "store")

    def __init__(
        self,
        store: Store,
        run_id: str | None,
        keys: Sequence[str],
        labels: Sequence[str],
        *,
        events: bool = True,
    ) -> None:
        if run_id is not None and (not isinstance(run_id, str) or not run_id or "/" in run_id):
            raise GraphError(
                f"run_id={run_id!r}: a run id is a non-empty string without '/', e.g. 'r1'"
            )
        self.store = store
        self.record = run_id is not None
        self.events = events
        self.run_id = run_id if run_id is not None else f"run-{uuid.uuid4().hex[:12]}"
        self._keys = keys
        self._labels = labels
        self._paths: list[str] | None = None  # "<run id>/<node key>", built on the first note
        self._held: list[tuple[str, FrozenDict, str]] | None = None  # notes kept by hold()

    # --------------------------------------------------------------- records

    def begin(self) -> Any:
        """Check or write the run record; the recorded output if the run completed, else MISSING."""
        if not self.record:
            return MISSING
        known = self.store.value("step", self.run_id, None)
        keys = list(self._keys)
        if known is None:
            self.store.write(
                "step", self.run_id, {"graph": keys, "status": "running"}, source="weft.graph"
            )
            return MISSING
        if not isinstance(known, dict) or list(known.get("graph", ())) != keys:
            raise GraphError(
                f"run {self.run_id!r} was recorded for a different graph (its nodes: "
                f"{_short(known)}; this graph: {_short({'graph': keys})}); resume a run with "
                "the graph that started it, or use a new run_id"
            )
        if known.get("status") == "completed":
            return known.get("output")
        return MISSING

    def load(self) -> dict[int, Recorded]:
        """The step records of this run, by node index."""
        if not self.record:
            return {}
        prefix = f"step:{self.run_id}/"
        by_key = {key: i for i, key in enumerate(self._keys)}
        out: dict[int, Recorded] = {}
        for entry in self.store.entries(kind="step", key_prefix=prefix):
            i = by_key.get(entry.path[len(self.run_id) + 1 :])
            value = entry.value
            if i is None or not isinstance(value, dict) or "flag" not in value:
                continue
            delta = value.get("delta")
            result = delta if "delta" in value and "result" not in value else value.get("result")
            if value.get("tuple") and isinstance(result, list):
                result = tuple(result)
            out[i] = Recorded(
                WorkGraphStopFlags[value["flag"]],
                result,
                dict(delta) if isinstance(delta, dict) else None,
            )
        return out

    def save(
        self, i: int, flag: WorkGraphStopFlags, result: Any, delta: dict[str, Any] | None
    ) -> None:
        """Record a finished node, before its successors start."""
        key = self._keys[i]
        record: dict[str, Any] = {"node": key, "id": self._labels[i], "flag": flag.name}
        if delta is not None and delta is result:  # a state node: its result is its delta
            record["delta"] = delta
        else:
            record["result"] = result
            record["tuple"] = result.__class__ is tuple
        self.flush()  # the notes before this record stay before it in the log
        try:
            self.store.write("step", f"{self.run_id}/{key}", record, source=key)
        except ValueTypeError as exc:
            raise NodeError(
                f"node {key} ({self._labels[i]!r}) returned a {type(result).__qualname__} "
                f"result that cannot be recorded for run {self.run_id!r}: {exc}. A run with a "
                "run_id records every result as JSON so it can resume; return plain data, or "
                "register the type with weft.store.register_type(cls)"
            ) from exc

    def complete(self, output: Any) -> None:
        if not self.record:
            return
        record = {"graph": list(self._keys), "status": "completed", "output": output}
        try:
            self.store.write("step", self.run_id, record, source="weft.graph")
        except ValueTypeError:
            record["output"] = None  # every part was recorded already; keep the status
            self.store.write("step", self.run_id, record, source="weft.graph")

    # ---------------------------------------------------------------- events

    def _note(self, i: int, event: str) -> dict[str, Any] | None:
        """A new note about node ``i``, or None when nobody observes the store."""
        if not self.events or not self.store.observed:
            return None
        return {"event": event, "node": self._keys[i], "id": self._labels[i], "run_id": self.run_id}

    def _send(self, i: int, note: dict[str, Any]) -> None:
        paths = self._paths
        if paths is None:
            paths = self._paths = [f"{self.run_id}/{key}" for key in self._keys]
        # every value is a str or a number: frozen here, so the store need not walk it
        if self._held is not None:
            self._held.append((paths[i], FrozenDict(note), self._keys[i]))
        else:
            self.store.note("step", paths[i], FrozenDict(note), source=self._keys[i])

    def hold(self) -> None:
        """Keep the notes from now on, to log them in one batch at ``flush`` or ``release``.

        The engine holds them while it settles a batch of completions or dispatches a batch
        of nodes, and flushes them before any node can run or any record is written, so the
        log keeps the order in which things happened."""
        if self._held is None:
            self._held = []

    def flush(self) -> None:
        """Log the notes kept so far (and go on keeping them, if held)."""
        held = self._held
        if held:
            self._held = []
            self.store.note_many("step", held)

    def release(self) -> None:
        """Log the notes kept so far and stop keeping them."""
        self.flush()
        self._held = None

    def started(self, i: int) -> None:
        note = self._note(i, "started")
        if note is not None:
            self._send(i, note)

    def finished(self, i: int, flag: WorkGraphStopFlags, seconds: float) -> None:
        note = self._note(i, "finished")
        if note is not None:
            note["duration_ms"] = int(seconds * 1e6) / 1000  # to the microsecond
            if flag is not WorkGraphStopFlags.Continue:
                note["flag"] = flag.name
            self._send(i, note)

    def failed(self, i: int, error: BaseException, seconds: float) -> None:
        note = self._note(i, "failed")
        if note is not None:
            note["duration_ms"] = int(seconds * 1e6) / 1000
            note["error"] = f"{type(error).__name__}: {error}"
            self._send(i, note)

    def skipped(self, i: int, reason: str) -> None:
        note = self._note(i, "skipped")
        if note is not None:
            note["reason"] = reason
            self._send(i, note)


def _short(record: Any) -> str:
    graph = thaw(record.get("graph", [])) if isinstance(record, dict) else []
    shown = ", ".join(map(str, graph[:5]))
    return f"[{shown}{', ...' if len(graph) > 5 else ''}]"
