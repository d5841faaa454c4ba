"""The stores of one run: each node's view, its changes, and the commits in graph order.

A run with a store works on that store (the *run store*). Each node reads its *view*: the
run store as the run began plus the writes of the node's ancestors, never a sibling's:

- a node that every earlier node (in canonical order) leads to reads the run store itself,
  which by then holds exactly its ancestors' writes (a chain, a join after a fan-out);
- a node with one predecessor otherwise reads that predecessor's view with the
  predecessor's changes (a branch);
- any other join reads the predecessor whose view covers the longest canonical prefix of
  its ancestors, with the changes of the ancestors it lacks merged in, in canonical order
  (``Views``). Parallel writes meet in ``Store.merge``, so its conflict rule is the only one.

Changes. A state node's changes are its delta, kept as a ``Delta`` on its view (nothing is
written until it is committed); a node that asks for ``ctx`` gets a fork of its view
(``RunContext.store``), and its changes are what it wrote there.

Commits. Changes reach the run store through ``Store.merge`` in canonical order, as soon as
a node and every node before it have settled (the *frontier*), several at a time when they
finish together: the run store's content never depends on which branch finished first. A
state node at the frontier in a run without a run id writes its delta straight into the run
store. A run that fails keeps what was committed before the failure; with a run id, what
finished after it is recorded.

Shared views (``WorkGraph(isolated=False)``). A node whose predecessors the frontier has
passed reads the run store itself (its ancestors' changes are all committed there), with
no view built; one that starts before that gets its view as above. Changes are committed
in canonical order either way, so the log is the same whichever node finished first. The
graph's owner vouches that each node reads only what its ancestors wrote and that no two
unordered nodes write one field.

Records (a run with a ``run_id``, ``weft.store.records``). A node's ``StepRecord`` is
committed with its changes, as one commit (one transaction of a durable backend). A node
that finishes before the frontier reaches it records itself at once, with its changes and
``committed=False``: durable, never run again; the frontier's commit applies them and
rewrites the record. Resume: a recorded node is not called; a record still waiting is
committed at the frontier; a node that runs gets the view it would have had, rebuilt from the
records of the nodes it depends on (a record keeps its changes, and the run store's step
when its view was taken, wherever a later view needs them).
"""

from __future__ import annotations

from bisect import bisect_right
from dataclasses import replace
from time import time
from typing import Any, Final

from weft.errors import NodeError, ValueTypeError
from weft.graph.build import Schedule
from weft.graph.modes import NO, WorkGraphStopFlags
from weft.graph.state import Writes, kept_delta
from weft.graph.views import Views
from weft.store import Delta, Event, RunLog, RunRecord, StepRecord, Store
from weft.store.records import KIND, node_record

_CONTINUE: Final = WorkGraphStopFlags.Continue
_ABORT: Final = WorkGraphStopFlags.AbortBranch
_TERMINATE: Final = WorkGraphStopFlags.Terminate


class RunStores:
    """The views, changes and commits of one run (see the module docstring)."""

    __slots__ = (
        "began",
        "branches",
        "chained",
        "changes",
        "deferred",
        "direct",
        "due",
        "eager",
        "final",
        "finished",
        "forks",
        "frontier",
        "hops",
        "inplace",
        "isolated",
        "last_pred",
        "log",
        "marks",
        "posts",
        "records",
        "schedule",
        "start",
        "store",
        "viewing",
        "views",
        "waiting",
    )

    def __init__(
        self, schedule: Schedule, store: Store, *, log: RunLog | None, isolated: bool = True
    ) -> None:
        n = schedule.size
        self.schedule = schedule
        self.store = store
        self.log = log
        self.isolated = isolated
        memo = schedule.memo
        views = memo.get("views")
        if views is None:
            views = memo["views"] = Views.of(schedule)
        self.views = views
        last = memo.get("last pred")
        if last is None:
            last = memo["last pred"] = tuple(max(ps, default=-1) for ps in schedule.preds)
        self.last_pred: tuple[int, ...] = last
        """The last of each node's predecessors in canonical order (-1: none)."""
        self.start = store.fork()
        self.viewing: list[Store | None] = [None] * n
        """What each node reads (the run store itself, or a fork)."""
        self.forks: list[Store | None] = [None] * n
        """The fork of a node that asks for ``ctx``: its view, and what it writes."""
        self.changes: list[Delta | Store | dict[str, Any] | None] = [None] * n
        """What each node changed, once it finished: a delta, its fork, or nothing; a
        plain delta on a fork no later view is built from stays a dict until committed."""
        self.posts: list[Store | None] = [None] * n
        """A node's view with its changes, made when a later view needs it."""
        self.marks = [0] * n
        self.began = [0] * n
        self.finished = [False] * n
        self.frontier = 0
        self.due: list[int] = []
        """Nodes the frontier passed whose changes are not committed yet."""
        self.final: tuple[str, RunRecord] | None = None
        """A recorded run's own record, waiting to go with the run's last commit."""
        self.waiting: dict[int, StepRecord] = {}
        """Nodes recorded with their changes, waiting for the frontier: their final records."""
        self.records: dict[int, StepRecord] = {}
        """Restored nodes (resume), by index."""
        self.eager = False
        """Set by the engine when nothing writes to the store between a node's finish and
        its successor's start (no observer holding notes): a state node at the frontier that
        reads the run store, and whose only successor enters next (which would commit it
        first), is then committed as it finishes, with no ``Delta`` to hold (``Store.
        _commit_writes``): the same commits with the same events, 179k -> 164k instructions
        per node of a durable chain (callgrind, bench W3 with a no-op append)."""
        if log is not None:
            self.inplace = self.direct = (False,) * n
            self.hops = (-1,) * n
        else:
            found = memo.get("inplace")
            if found is None:
                full, ctxs, needed, states = (
                    schedule.full,
                    schedule.ctxs,
                    views.needed,
                    schedule.states,
                )
                inplace = tuple(full[i] and not ctxs[i] and not needed[i] for i in range(n))
                direct = tuple(
                    p and s and f for p, s, f in zip(inplace, states, schedule.inline, strict=True)
                )
                hops = tuple(
                    s if s >= 0 and direct[s] and c == NO else -1
                    for s, c in zip(schedule.chain, schedule.codes, strict=True)
                )
                found = memo["inplace"] = (inplace, direct, hops)
            self.inplace, self.direct, self.hops = found
        deferred = memo.get("deferred")
        if deferred is None:  # a state node's plain delta is kept as a dict until committed
            deferred = memo["deferred"] = tuple(
                not n and c == NO and key.isascii()
                for n, c, key in zip(views.needed, schedule.codes, schedule.keys, strict=True)
            )
        self.deferred: tuple[bool, ...] = deferred if log is None else (False,) * n
        branches = memo.get("branches")
        if branches is None:  # the nodes ``take`` serves
            branches = memo["branches"] = tuple(
                d and s and not c and not p
                for d, s, c, p in zip(
                    deferred, schedule.states, schedule.ctxs, self.inplace, strict=True
                )
            )
        self.branches: tuple[bool, ...] = branches if log is None else self.deferred
        """``inplace[i]``: node ``i`` (a run without a run id) writes its delta straight
        into the run store; ``direct[i]``: and it is a state node a chain may call inline;
        ``hops[i]``: its one successor, when that is such a node and takes the same
        arguments (``ResultPassDownMode.NO``), else -1."""
        chained = memo.get("chained")
        if chained is None:
            full, chain = schedule.full, schedule.chain
            chained = memo["chained"] = tuple(
                schedule.states[i]
                and full[i]
                and not schedule.ctxs[i]
                and not views.needed[i]
                and chain[i] >= 0
                and full[chain[i]]
                for i in range(n)
            )
        self.chained: tuple[bool, ...] = chained
        """``chained[i]``: node ``i`` is a state node that reads the run store once the
        frontier reaches it, and its only successor (then ``i + 1``) enters next, which
        would commit it first: what ``eager`` commits as it finishes."""

    # ----------------------------------------------------------------- views

    def enter(self, i: int) -> Store:
        """Make node ``i``'s view (call once its predecessors settled); returns the store
        it reads: the run store itself, or a fork (its own, if it asks for ``ctx``)."""
        schedule = self.schedule
        if (schedule.full[i] and self.frontier >= i) or (
            not self.isolated and self.frontier > self.last_pred[i]
        ):
            self.commit_due()
            view = self.store
        else:
            preds = schedule.preds[i]  # a branch: its predecessor's view made once, shared
            post = self.posts[preds[0]] if len(preds) == 1 else None
            view = self._view(i) if post is None else post
        if self.views.needed[i]:
            self.began[i] = self.store.last_seq
        if schedule.ctxs[i]:
            fork = view.fork(name=schedule.keys[i])
            self.forks[i] = fork
            self.marks[i] = fork.last_seq
            view = fork
        self.viewing[i] = view
        return view

    def _view(self, i: int) -> Store:
        """The store node ``i``'s view is, when it is not the run store."""
        preds = self.schedule.preds[i]
        if not preds:
            return self.start
        if len(preds) == 1:
            return self._post(preds[0])
        shortcut = self.views.shortcuts.get(i)
        if shortcut is not None:
            post = self._post(shortcut[0])
            changes = [c for u in shortcut[1] if (c := self._changes_of(u)) is not None]
            if post._untouched(self.start, changes):
                view = post.fork()
                if changes:
                    view.merge(changes, check=False)
                return view
        base, extras = self.views.joins[i]
        view = (self.start if base < 0 else self._post(base)).fork()
        changes = [c for u in extras if (c := self._changes_of(u)) is not None]
        if changes:
            view.merge(changes, check=False)
        return view

    def _changes_of(self, u: int) -> Delta | Store | None:
        if u in self.records:  # restored: its rebuilt view holds its changes as its own
            return self._post(u)
        change = self.changes[u]
        assert not isinstance(change, dict), "a later view is built from it: never deferred"
        return change

    def _post(self, p: int) -> Store:
        """Node ``p``'s view with its changes (its view alone if it was aborted)."""
        post = self.posts[p]
        if post is not None:
            return post
        fork = self.forks[p]
        if fork is not None:
            post = fork
        elif p in self.records:  # restored: rebuilt from its record
            post = self._rebuild(p)
        else:
            view = self.viewing[p]
            assert view is not None and view is not self.store, (
                "a node whose view is the run store keeps a snapshot when a later view needs it"
            )
            post = view.fork(name=self.schedule.keys[p])
            change = self.changes[p]
            assert not isinstance(change, dict), "a later view is built from it: never deferred"
            if change is not None:
                post.merge([change], check=False)
        self.posts[p] = post
        return post

    def _rebuild(self, p: int) -> Store:
        record = self.records[p]
        if self.schedule.full[p]:
            if record.began is None:
                raise AssertionError(f"no record to rebuild the view of {self.schedule.keys[p]}")
            base = self.store.at(record.began)
        else:
            base = self._view(p)
        fork = base.fork(name=self.schedule.keys[p])
        if record.changes and record.flag != _ABORT.name:
            fork.apply(record.changes)
        return fork

    # -------------------------------------------------------------- finishing

    def finish(
        self,
        i: int,
        flag: WorkGraphStopFlags,
        result: Any,
        delta: dict[str, Any] | Writes | None,
        started_at: float,
    ) -> None:
        """Node ``i`` returned: keep its changes and its record, and move the frontier.
        ``delta``: a state node's delta, or its ``Writes`` (then ``result`` is theirs)."""
        schedule = self.schedule
        key = schedule.keys[i]
        view = self.viewing[i]
        fork = self.forks[i]
        change: Delta | Store | dict[str, Any] | None = None
        pending: dict[str, Any] | Writes | None = None
        writes = delta.__class__ is Writes
        if writes and not delta.writes:  # type: ignore[union-attr]
            delta = None
        if flag is _ABORT:
            if fork is not None:  # its view again, without its writes
                self.forks[i] = None
                view = self.viewing[i] = self.store if schedule.full[i] else self._view(i)
        elif fork is not None:
            if delta:  # a state node that also takes ctx: its delta joins its fork's writes
                _write(fork, delta, key)
            change = fork
        elif delta:
            if self.inplace[i]:  # at the frontier, nobody to wait for: write it now
                _write(self.store, delta, key)
            elif self.log is not None and i == self.frontier and not self.views.needed[i]:
                pending = delta  # made one delta with its record (``_record``)
            else:
                assert view is not None
                if (
                    delta.__class__ is dict
                    and self.deferred[i]
                    and view is not self.store
                    and kept_delta(delta)
                ):  # its view is a fork nobody writes to any more, and making the Delta
                    # cannot fail: the one made as it is committed is the one made now
                    change = delta  # (``_gathered``)
                else:
                    change = (
                        view.delta(delta.items(key))
                        if isinstance(delta, Writes)
                        else view.delta(delta, source=key)
                    )
        if self.log is not None:
            assert not isinstance(change, dict), "a recorded run defers no delta"
            change = self._record(i, flag, result, change, pending, started_at, writes)
        self.changes[i] = change
        finished = self.finished
        finished[i] = True
        if i == self.frontier:  # advance(), inlined for the common step of one node
            f = i + 1
            if f < len(finished) and not finished[f]:
                if change is not None or i in self.waiting:
                    self.due.append(i)
                self.frontier = f
            else:
                self.advance()
        if view is self.store and self.views.needed[i]:
            self.commit_due()  # a later view starts from the store as this node left it
            post = self.posts[i] = self.store.fork(name=key)
            if change is not None and i >= self.frontier:  # not committed yet: add it
                assert not isinstance(change, dict), "a view on the run store defers no delta"
                post.merge([change], check=False)

    def take(self, i: int, delta: dict[str, Any]) -> bool:
        """``finish`` of a branch (``Run._complete``'s fast path): a state node that reads a
        fork, takes no ``ctx``, passes nothing down and is no base of a later view, in a
        run without a run id, whose delta ``Store.delta`` keeps as it is (the caller
        checked): the delta waits for the commit. False, having done nothing, when its view
        is the run store (then ``finish`` decides)."""
        if self.viewing[i] is self.store:
            return False
        self.changes[i] = delta
        finished = self.finished
        finished[i] = True
        if i == self.frontier:  # as in finish
            f = i + 1
            if f < len(finished) and not finished[f]:
                self.due.append(i)
                self.frontier = f
            else:
                self.advance()
        return True

    def _record(
        self,
        i: int,
        flag: WorkGraphStopFlags,
        result: Any,
        change: Delta | Store | None,
        pending: dict[str, Any] | Writes | None,
        started_at: float,
        writes: bool = False,
    ) -> Delta | Store | None:
        """Record node ``i``: with its changes (one commit) when the frontier is here,
        else at once with the changes inside the record. ``pending``: a state node's delta
        made into no ``Delta`` yet; ``writes``: the node returned ``Writes``, whose result
        is not its delta. Returns the change to commit."""
        log, schedule = self.log, self.schedule
        assert log is not None
        key = schedule.keys[i]
        if change is None:
            changes: tuple[Event, ...] = ()
        elif isinstance(change, Delta):
            changes = change.events()
        else:
            changes = tuple(change.events(since=self.marks[i]))
        record = self._new_record(i, flag, result, changes, pending, started_at, writes)
        if self.frontier == i:
            if pending.__class__ is dict and flag is _CONTINUE and self.can_chain(i):
                self._commit_now(i, pending, record)
                return None
            return _with_record(change, pending, self.viewing[i], log.path(key), record, key)
        # durable now, with its changes; committed when the frontier gets here
        log.record(key, replace(record, changes=changes, committed=False))
        self.waiting[i] = record
        return change

    def _new_record(
        self,
        i: int,
        flag: WorkGraphStopFlags,
        result: Any,
        changes: tuple[Event, ...],
        pending: dict[str, Any] | Writes | None,
        started_at: float,
        writes: bool,
    ) -> StepRecord:
        """Node ``i``'s step record (see ``_record``)."""
        schedule, needed = self.schedule, self.views.needed[i]
        try:
            kept = (
                not schedule.states[i]
                or writes
                or schedule.codes[i] != NO
                or not schedule.succs[i]
                or flag is _TERMINATE
            )  # a state node's result is its delta, in the store already: kept if read
            return StepRecord(
                kind="node",
                writes=_count(pending) if pending else len(changes),
                result=result if kept else None,
                flag=None if flag is _CONTINUE else flag.name,
                tuple_result=result.__class__ is tuple,
                changes=changes if needed and changes else None,
                began=self.began[i] if needed and schedule.full[i] else None,
                started_at=started_at,
                duration_ms=round((time() - started_at) * 1000, 3) if started_at else None,
            )
        except ValueTypeError as exc:
            assert self.log is not None
            raise NodeError(
                f"node {schedule.keys[i]} ({schedule.labels[i]!r}) returned a "
                f"{type(result).__qualname__} result that cannot be recorded for run "
                f"{self.log.run_id!r}: {exc}. A run with a run_id records every result as JSON "
                "so it can resume; return plain data, or register the type with "
                "weft.store.register_type(cls)"
            ) from exc

    def can_chain(self, i: int) -> bool:
        """Whether node ``i``, at the frontier, is committed as it finishes (``eager``)."""
        return (
            self.chained[i]
            and self.eager
            and self.frontier == i
            and not self.due
            and not self.waiting
            and not self.records
            and self.viewing[i] is self.store
        )

    def finish_chained(self, i: int, delta: dict[str, Any], took: float) -> None:
        """``finish`` of a node that ``can_chain``, which returned a delta of plain values
        and went on after ``took`` seconds: commit it with its record now (``_record``'s
        eager case), without the general path's bookkeeping (a chain of durable nodes,
        bench W3)."""
        started_at = time() - took
        schedule = self.schedule
        if schedule.codes[i] == NO:  # its result is its delta, not kept: the record
            # is _new_record's with no result, built straight
            record = node_record(len(delta), started_at, round(took * 1000, 3))
        else:
            record = self._new_record(i, _CONTINUE, delta, (), delta, started_at, False)
        key, log = schedule.keys[i], self.log
        assert log is not None
        path = log.path(key)
        if record.result is None and path.isascii():
            # nothing for the store to check: the delta passed ``kept_delta`` (plain state
            # paths, kept values), the record holds scalars the engine made, and the record's
            # path (``run/key``; the key is the source) is a ``plain_key`` name (-4.5k
            # instructions a node)
            items: list[tuple[str, str, Any, str | None, bool]] = []
            for p, v in delta.items():  # a loop: a comprehension made ``key`` a cell
                items.append(("state", p, v, key, False))
            items.append((KIND, path, record, key, False))
            self.store._commit_items(items)
        else:
            self._commit_now(i, delta, record)
        finished = self.finished
        finished[i] = True
        f = i + 1  # advance(), inlined: nothing is due
        if f < len(finished) and not finished[f]:
            self.frontier = f
        else:
            self.advance()

    def _commit_now(self, i: int, delta: dict[str, Any], record: StepRecord) -> None:
        key, log = self.schedule.keys[i], self.log
        assert log is not None
        both = [("state", p, v, key) for p, v in delta.items()]
        both.append((KIND, log.path(key), record, key))
        # its fields are scalars the engine made (a state node's result is its delta, not
        # kept): nothing in it for the store to check
        self.store._commit_writes(both, last_frozen=record.result is None)

    def skip(self, i: int) -> None:
        """Node ``i`` will not run (its predecessors were aborted or skipped)."""
        if self.views.needed[i] and self.enter(i) is self.store:
            self.posts[i] = self.store.fork(name=self.schedule.keys[i])
        self.finished[i] = True
        self.advance()

    def resume(self, records: dict[int, StepRecord]) -> None:
        """Before a resumed run: its start is the store as it was before the run's first
        commit, with the fields anyone else wrote since (inputs fixed before resuming, say)
        as they are now, so a node that runs now reads what it would have read had the run
        never stopped. (A field someone else deleted meanwhile, or reduced on top of the
        run's own writes, is taken as it was before the run.)"""
        log, store = self.log, self.store
        assert log is not None
        ranges: list[tuple[int, int]] = []
        for i, record in records.items():
            if record.committed:
                entry = store.get(KIND, log.path(self.schedule.keys[i]))
                if entry is not None:
                    ranges.append((entry.seq - record.writes, entry.seq))
        if not ranges:
            return
        first = min(low for low, _ in ranges)
        start = store.at(first - 1)
        prefix = f"{log.run_id}/"
        ours = sorted(ranges)
        since: list[Event] = []  # each as it is now: the same value, writer and time
        for entry in store.entries():
            seq = entry.seq
            if seq < first or _within(ours, seq):
                continue
            if entry.kind == KIND and (entry.path == log.run_id or entry.path.startswith(prefix)):
                continue
            kind, path, stored, source, at, meta = (
                entry.kind,
                entry.path,
                entry.stored,
                entry.source,
                entry.updated_at,
                entry.meta,
            )
            since.append(Event(0, "write", kind, path, stored, source, "replace", at, meta))
        start.apply(since)
        self.start = start

    def restore(self, i: int, record: StepRecord) -> None:
        """Node ``i`` finished in an earlier run: take its record instead of running it."""
        self.records[i] = record
        if not record.committed:
            self.waiting[i] = replace(record, committed=True)
        self.finished[i] = True
        self.advance()

    # --------------------------------------------------------------- commits

    def advance(self) -> None:
        """Move the frontier past every settled node; their changes become due."""
        f, n = self.frontier, len(self.finished)
        finished, changes, waiting, due = self.finished, self.changes, self.waiting, self.due
        while f < n and finished[f]:
            if changes[f] is not None or f in waiting:
                due.append(f)
            f += 1
        self.frontier = f

    def commit_due(self) -> None:
        """Commit the changes the frontier passed, in canonical order, as one commit."""
        due = self.due
        if not due:
            return
        self.due = []
        store, changes, waiting, records = self.store, self.changes, self.waiting, self.records
        final, self.final = self.final, None  # the run's own record, with its last commit
        if len(due) == 1 and final is None and not waiting:  # one node's change: a chain
            k = due[0]
            change = changes[k]
            if change is not None:
                store.merge(self._gathered(due) if isinstance(change, dict) else (change,))
                if not self.views.needed[k]:  # in the store now, and no later view's
                    changes[k] = self.forks[k] = self.viewing[k] = None
            return
        if not waiting or not any(k in waiting for k in due):
            ready = self._gathered(due)
            if final is not None:
                ready.append(store.delta([(KIND, final[0], final[1], "weft.graph")]))
            if ready:
                store.merge(ready)
                needed, forks, viewing = self.views.needed, self.forks, self.viewing
                for k in due:
                    if not needed[k]:
                        changes[k] = forks[k] = viewing[k] = None
            return
        keys, log = self.schedule.keys, self.log
        assert log is not None, "only a recorded run has records waiting"
        with store.transaction() as tx:
            for k in due:
                last = waiting.pop(k, None)
                restored = records.get(k)
                if restored is not None:
                    if last is not None and last.changes and last.flag != _ABORT.name:
                        tx.apply(last.changes)
                elif (change := changes[k]) is not None:
                    assert not isinstance(change, dict), "a recorded run defers no delta"
                    tx.merge([change])
                if last is not None:
                    kept = last if self.views.needed[k] else replace(last, changes=None)
                    log.record(keys[k], kept, into=tx)
            if final is not None:
                tx.write(KIND, final[0], final[1], source="weft.graph")

    def _gathered(self, due: list[int]) -> list[Delta | Store]:
        """The changes of ``due`` as ``Store.merge`` takes them. The plain deltas that
        ``finish`` kept as dicts become Deltas here, on the views they were made on; those
        of consecutive nodes that read one view (the branches of a fan-out) make one Delta,
        which merges as theirs would one after another when no field it replaces is
        written twice in it (a fan-out of 1,000 appends: one Delta, not 1,000)."""
        changes, viewing = self.changes, self.viewing
        out: list[Delta | Store] = []
        group: list[int] = []  # consecutive nodes with dict deltas on one view
        for k in due:
            change = changes[k]
            if change is None:
                continue
            if change.__class__ is dict:
                if group and viewing[group[0]] is not viewing[k]:
                    out.extend(self._one_delta(group))
                    group = []
                group.append(k)
                continue
            if group:
                out.extend(self._one_delta(group))
                group = []
            out.append(change)  # type: ignore[arg-type]
        if group:
            out.extend(self._one_delta(group))
        return out

    def _one_delta(self, group: list[int]) -> list[Delta]:
        """The dict deltas of ``group`` (nodes that read one view) as one Delta, or one
        each when a field the group replaces is written twice in it (then the conflict
        rule must see them one after another). ``finish`` checked that ``Store.delta``
        keeps them as they are (``kept_delta``): ``Delta.kept`` makes it without
        checking them again."""
        changes, keys = self.changes, self.schedule.keys
        view = self.viewing[group[0]]
        assert view is not None

        writes = [
            ("state", path, value, keys[k], False)
            for k in group
            for path, value in changes[k].items()  # type: ignore[union-attr]
        ]
        delta = Delta.kept(view, writes)
        if len(group) > 1 and delta.replaces and len({w[1] for w in writes}) < len(writes):
            one_each, at = [], 0
            for k in group:  # the writes of one node are consecutive
                count = len(changes[k])  # type: ignore[arg-type]
                one_each.append(Delta.kept(view, writes[at : at + count]))
                at += count
            return one_each
        return [delta]

    def complete(self, started_at: float | None) -> None:
        """The run ended well: commit what is due and, past nodes that never ran (after
        ``Terminate``), every node that finished, in canonical order; with them (a recorded
        run started at ``started_at``) the run's record, in the same commit."""
        log, n = self.log, self.schedule.size
        if log is not None and started_at is not None:
            record = log.completed("graph", self.schedule.keys, started_at)
            self.final = (log.run_id, record)
        self.due.extend(
            k
            for k in range(self.frontier, n)
            if self.finished[k] and (self.changes[k] is not None or k in self.waiting)
        )
        self.frontier = n
        self.commit_due()
        if self.final is not None:  # nothing was left to commit with it
            run_id, record = self.final
            self.store.write(KIND, run_id, record, source="weft.graph")
            self.final = None


def _within(ranges: list[tuple[int, int]], seq: int) -> bool:
    """Whether ``seq`` falls in one of the sorted, disjoint ``(low, high)`` ranges."""
    at = bisect_right(ranges, (seq, float("inf"))) - 1
    return at >= 0 and ranges[at][0] <= seq <= ranges[at][1]


def _write(store: Store, delta: dict[str, Any] | Writes, key: str) -> None:
    """A state node's changes written straight into ``store``, as one commit."""
    if isinstance(delta, Writes):
        delta.write_to(store, key)
    else:
        store.write_many("state", delta, source=key)


def _count(pending: dict[str, Any] | Writes) -> int:
    return len(pending.writes) if isinstance(pending, Writes) else len(pending)


def _with_record(
    change: Delta | Store | None,
    pending: dict[str, Any] | Writes | None,
    view: Store | None,
    path: str,
    record: StepRecord,
    key: str,
) -> Delta | Store:
    """The node's change with its record added, so both are one commit."""
    if isinstance(change, Store):
        change.write(KIND, path, record, source=key)
        return change
    assert view is not None
    if pending.__class__ is dict:  # a state node's delta: the 4-tuples of delta's fast path
        plain = [("state", p, v, key) for p, v in pending.items()]
        plain.append((KIND, path, record, key))
        return view.delta(plain)
    writes: list[tuple[str, str, Any, str | None, bool]] = []
    if isinstance(pending, Writes):
        writes.extend(pending.items(key))
    elif pending:
        writes.extend(("state", p, v, key, False) for p, v in pending.items())
    elif change is not None:
        writes.extend(change.writes)
    writes.append((KIND, path, record, key, False))
    return view.delta(writes)
