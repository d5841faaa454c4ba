"""The stores of one run: each node's fork, its view, and the commits in graph order.

A run with a store works on that store (the *run store*). Each node works on its own fork,
made when the node is admitted (its predecessors settled), holding the node's *view*: the
run store as the run began plus the writes of the node's ancestors, never a sibling's:

- a node that every earlier node (in canonical order) leads to forks the run store
  itself, which by then holds exactly its ancestors' writes (a chain, a join after a
  fan-out);
- a node with one predecessor otherwise forks that predecessor's fork (a branch);
- any other join forks the predecessor whose view covers the longest canonical prefix of
  its ancestors and merges in the forks of the ancestors it lacks, in canonical order
  (``Views``). Parallel writes meet in ``Store.merge``, so its conflict rule is the only one.

Commits. Forks reach the run store through ``Store.merge`` in canonical order, as soon as
a node and every node before it have settled (the *frontier*): the run store's content
never depends on which branch finished first, and a chain's merges are fast-forwards. A
node at the frontier that only returns a delta (in a run without a run id) writes it
straight into the run store: a fork would be fast-forwarded anyway. A run that fails keeps
what was committed before the failure; with a run id, what finished after it is recorded.

Records (a run with a ``run_id``, ``weft.store.records``). A node's ``StepRecord`` goes into
its fork, so its writes and its record reach the run store as one commit (one transaction
of a durable backend). A node that finishes before the frontier reaches it records itself
at once, with its writes (``changes``) and ``committed=False``: durable, never run again.
The frontier's commit applies them and rewrites the record. Resume: a recorded node is not
called; a record still waiting is committed at the frontier; a node that runs gets the view
it would have had, rebuilt from the records of the nodes it depends on (records keep their
changes, and the run store's step when their view was taken, wherever a later view needs
them).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from time import time
from typing import Any, Final

from weft.errors import NodeError, ValueTypeError
from weft.graph.build import Schedule
from weft.graph.modes import WorkGraphStopFlags
from weft.store import RunLog, StepRecord, Store
from weft.store.records import KIND

_CONTINUE: Final = WorkGraphStopFlags.Continue
_ABORT: Final = WorkGraphStopFlags.AbortBranch


@dataclass(frozen=True, slots=True)
class Views:
    """How each node's view is built, computed once per graph.

    ``joins[j]`` is ``(base, extras)`` for a join that is not full: the predecessor whose
    fork to start from (``-1``: the run's start) and the ancestors whose forks to merge in,
    in canonical order. ``needed[i]``: a later view is built from node ``i``'s fork.
    """

    joins: dict[int, tuple[int, tuple[int, ...]]]
    needed: tuple[bool, ...]

    @classmethod
    def of(cls, schedule: Schedule) -> Views:
        preds, full = schedule.preds, schedule.full
        needed = [False] * schedule.size
        for s, ps in enumerate(preds):
            if not full[s] and len(ps) == 1:
                needed[ps[0]] = True
        joins = [j for j, ps in enumerate(preds) if not full[j] and len(ps) > 1]
        plans: dict[int, tuple[int, tuple[int, ...]]] = {}
        if joins:  # ancestor sets only when some join needs them
            ancestors: list[int] = []
            for ps in preds:
                bits = 0
                for p in ps:
                    bits |= ancestors[p] | (1 << p)
                ancestors.append(bits)
            for j in joins:
                base, extras = _base_and_extras(j, preds[j], ancestors)
                plans[j] = (base, extras)
                if base >= 0:
                    needed[base] = True
                for u in extras:
                    needed[u] = True
        return cls(plans, tuple(needed))


def _base_and_extras(
    j: int, preds: Sequence[int], ancestors: Sequence[int]
) -> tuple[int, tuple[int, ...]]:
    """The predecessor whose view to extend, and what to add, keeping canonical order."""
    best: tuple[int, int] | None = None  # (extra count, pred)
    for p in preds:
        seen = ancestors[p] | (1 << p)
        extras = ancestors[j] & ~seen
        if extras and _lowest(extras) < seen.bit_length() - 1:
            continue  # its view plus the extras would not be in canonical order
        if best is None or extras.bit_count() < best[0]:
            best = (extras.bit_count(), p)
    if best is None:
        return -1, _bits(ancestors[j])
    p = best[1]
    return p, _bits(ancestors[j] & ~(ancestors[p] | (1 << p)))


def _lowest(bits: int) -> int:
    return (bits & -bits).bit_length() - 1


def _bits(bits: int) -> tuple[int, ...]:
    out = []
    while bits:
        low = bits & -bits
        out.append(low.bit_length() - 1)
        bits ^= low
    return tuple(out)


class RunStores:
    """The forks, views and commits of one run (see the module docstring)."""

    __slots__ = (
        "began",
        "commit",
        "finished",
        "forks",
        "frontier",
        "inplace",
        "log",
        "marks",
        "records",
        "schedule",
        "start",
        "store",
        "views",
        "waiting",
    )

    def __init__(
        self,
        schedule: Schedule,
        store: Store,
        *,
        log: RunLog | None,
        start: Store | None = None,
    ) -> None:
        n = schedule.size
        self.schedule = schedule
        self.store = store
        self.log = log
        self.views = views = Views.of(schedule)
        self.start = start if start is not None else store.fork()
        self.forks: list[Store | None] = [None] * n
        self.marks = [0] * n
        self.began = [0] * n
        self.finished = [False] * n
        self.commit = [False] * n
        """Settled nodes whose writes (or waiting record) are to be committed."""
        self.frontier = 0
        self.waiting: dict[int, StepRecord] = {}
        """Nodes recorded with their changes, waiting for the frontier: their final records."""
        self.records: dict[int, StepRecord] = {}
        """Restored nodes (resume), by index."""
        full, ctxs, needed = schedule.full, schedule.ctxs, views.needed
        self.inplace = tuple(
            log is None and full[i] and not ctxs[i] and not needed[i] for i in range(n)
        )

    # ----------------------------------------------------------------- views

    def enter(self, i: int) -> Store:
        """Make node ``i``'s fork (call once its predecessors settled); returns the store
        its view reads (the run store itself for a node that works in place)."""
        schedule = self.schedule
        if schedule.full[i] and self.frontier >= i:
            if self.inplace[i]:
                return self.store
            base = self.store
        else:
            base = self._view(i)
        fork = base.fork(name=schedule.keys[i])
        self.began[i] = self.store.last_seq
        self.forks[i] = fork
        self.marks[i] = fork.last_seq
        return fork

    def _view(self, i: int) -> Store:
        """The store node ``i``'s view forks from, when it is not the run store."""
        preds = self.schedule.preds[i]
        if not preds:
            return self.start
        if len(preds) == 1:
            return self._post(preds[0])
        base, extras = self.views.joins[i]
        view = (self.start if base < 0 else self._post(base)).fork()
        if extras:
            view.merge([self._post(u) for u in extras])
        return view

    def _post(self, p: int) -> Store:
        """Node ``p``'s fork after its writes (its view and nothing else if it was aborted)."""
        fork = self.forks[p]
        if fork is None:  # a restored node: its fork is rebuilt from its record
            fork = self._rebuild(p)
        return fork

    def _rebuild(self, p: int) -> Store:
        record = self.records.get(p)
        if self.schedule.full[p]:
            if record is None or record.began is None:
                raise AssertionError(f"no record to rebuild the view of {self.schedule.keys[p]}")
            base = self.store.at(record.began)
        else:
            base = self._view(p)
        fork = base.fork(name=self.schedule.keys[p])
        if record is not None and record.changes and record.flag != _ABORT.name:
            fork.apply(record.changes)
        self.forks[p] = fork
        return fork

    # -------------------------------------------------------------- finishing

    def finish(
        self,
        i: int,
        flag: WorkGraphStopFlags,
        result: Any,
        delta: dict[str, Any] | None,
        started_at: float,
    ) -> None:
        """Node ``i`` returned: write its delta and its record, and commit what is due."""
        schedule = self.schedule
        key = schedule.keys[i]
        fork = self.forks[i]
        target = fork if fork is not None else self.store  # in place: the run store
        if flag is _ABORT:
            if fork is not None:
                fork = self.forks[i] = self._fresh(i)
        elif delta:
            target.write_many("state", [(path, value, key) for path, value in delta.items()])
        self.commit[i] = fork is not None and (flag is not _ABORT or self.log is not None)
        log = self.log
        if log is not None:
            assert fork is not None, "a recorded run forks every node"
            needed = self.views.needed[i]
            changes = tuple(fork.events(since=self.marks[i])) if fork is not None else ()
            try:
                record = StepRecord(
                    kind="node",
                    label=schedule.labels[i],
                    result=result,
                    flag=None if flag is _CONTINUE else flag.name,
                    tuple_result=result.__class__ is tuple,
                    changes=changes if needed and changes else None,
                    began=self.began[i] if needed and schedule.full[i] else None,
                    started_at=started_at,
                    ended_at=time(),
                )
            except ValueTypeError as exc:
                raise NodeError(
                    f"node {key} ({schedule.labels[i]!r}) returned a "
                    f"{type(result).__qualname__} result that cannot be recorded for run "
                    f"{log.run_id!r}: {exc}. A run with a run_id records every result as JSON "
                    "so it can resume; return plain data, or register the type with "
                    "weft.store.register_type(cls)"
                ) from exc
            if self.frontier == i:
                log.record(key, record, into=fork)
            else:  # durable now, with its writes; committed when the frontier gets here
                log.record(key, replace(record, changes=changes, committed=False))
                self.waiting[i] = record
        self.finished[i] = True
        self.advance()

    def _fresh(self, i: int) -> Store:
        """An aborted node's fork: its view again, without its writes."""
        fork = self.forks[i]
        assert fork is not None
        parent_view = self._view(i) if not (self.schedule.full[i]) else None
        if parent_view is None:
            return self.store.at(self.began[i]).fork(name=self.schedule.keys[i])
        return parent_view.fork(name=self.schedule.keys[i])

    def skip(self, i: int) -> None:
        """Node ``i`` will not run (its predecessors were aborted or skipped)."""
        if self.views.needed[i]:
            self.enter(i)
        self.finished[i] = True
        self.advance()

    def restore(self, i: int, record: StepRecord) -> None:
        """Node ``i`` finished in an earlier run: take its record instead of running it."""
        self.records[i] = record
        if not record.committed:
            self.waiting[i] = replace(record, committed=True)
            self.commit[i] = True
        self.finished[i] = True
        self.advance()

    # --------------------------------------------------------------- commits

    def advance(self) -> None:
        """Commit, in canonical order, every settled node the frontier can pass."""
        f, n = self.frontier, self.schedule.size
        finished, commit = self.finished, self.commit
        due: list[int] = []
        while f < n and finished[f]:
            if commit[f]:
                due.append(f)
            f += 1
        self.frontier = f
        if due:
            self._commit(due)

    def flush(self) -> None:
        """At the end of a run that stopped early (``Terminate``): commit every node that
        finished, in canonical order, past the ones that never ran."""
        n = self.schedule.size
        due = [k for k in range(self.frontier, n) if self.finished[k] and self.commit[k]]
        self.frontier = n
        if due:
            self._commit(due)

    def _commit(self, due: list[int]) -> None:
        store, forks, waiting, records = self.store, self.forks, self.waiting, self.records
        if not any(k in waiting for k in due):
            ready = [f for k in due if k not in records and (f := forks[k]) is not None]
            if ready:
                store.merge(ready)
            return
        keys, log = self.schedule.keys, self.log
        assert log is not None, "only a recorded run has records waiting"
        with store.transaction() as tx:
            for k in due:
                final = waiting.pop(k, None)
                restored = records.get(k)
                if restored is not None:
                    if final is not None and final.changes and final.flag != _ABORT.name:
                        tx.apply(final.changes)
                else:
                    fork = forks[k]
                    assert fork is not None
                    tx.merge([fork])
                if final is not None:
                    kept = final if self.views.needed[k] else replace(final, changes=None)
                    log.record(keys[k], kept, into=tx)

    def complete(self, output: Any) -> None:
        """The run ended well: commit what is left and mark the run completed."""
        self.flush()
        if self.log is not None:
            self.log.complete(output)

    def path(self, i: int) -> str:
        """Where node ``i``'s record lives (kind ``step``)."""
        assert self.log is not None
        return self.log.path(self.schedule.keys[i])


__all__ = ["KIND", "RunStores", "Views"]
