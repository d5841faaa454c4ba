"""``TurnRuntime``: a conversation is a thread of turns, each a graph run, on one store.

A turn runs in one transaction of the thread's store, stage by stage: ``load`` the thread;
write its records if it has none yet, every ``Input`` field, the ``each_turn`` updates, and
each ``TurnScoped`` or ``Loaded`` field back to its start; run the ``loaders``; run the
``graph``; ``finalise`` (the diagnostics, the transcript pair, the output, the turn
record); ``persist`` (commit). A turn that raises stores nothing at all.
"""

from __future__ import annotations

import asyncio
import inspect
import os
import time
import uuid
from collections.abc import AsyncIterator, Iterable, Mapping, Sequence
from dataclasses import replace
from time import perf_counter
from typing import Any, Final, cast

from weft._sync import run_sync
from weft.errors import ConflictError, NodeError, TurnError
from weft.graph.pause import Asking, Interrupt, Paused, pausing
from weft.memory import MemoryBackend, Owner, RecallResult
from weft.persist import Backend, SQLiteBackend
from weft.runtime.codec import StateCodec, end_turn, start_turn
from weft.runtime.context import WorkflowContext
from weft.runtime.finalise import Transcript, append_entries, check_diagnostics, stamp_diagnostics
from weft.runtime.lifecycle import Loaded, Reducer
from weft.runtime.nodes import GraphLike, compile_graph
from weft.runtime.schema import Field, StateSchema, unflatten
from weft.runtime.streaming import Listener, StageEvent, Stages, TurnResult, ms_since
from weft.runtime.threads import Threads
from weft.runtime.views import CALLER, Contract, InitialState, TurnState, reader
from weft.runtime.watch import TurnWatch
from weft.store import MISSING, RunLog, RunRecord, StepRecord, Store, thaw
from weft.store.notes import watched
from weft.store.records import KIND
from weft.store.reducers import replace as replace_

SOURCE: Final = "weft.runtime"
_END: Final = object()


class TurnRuntime:
    """Runs the turns of conversations: ``state schema + graph + checkpointer + memory``.

    ``checkpointer`` is a ``weft.persist`` backend, or the path of a SQLite file (a ``str``
    or ``PathLike``: a ``SQLiteBackend`` on it, closed with the runtime, as is the default
    one under ``./.weft/``); ``memory_store`` defaults to the checkpointer's database;
    ``diagnostics`` names the field the runtime stamps (``None``: off).

    >>> import operator
    >>> from typing import Annotated, TypedDict
    >>> from weft.persist import InMemoryBackend
    >>> from weft.runtime import Input, Reducer, TurnScoped, node
    >>> State = TypedDict("State", {
    ...     "message": Annotated[str, Input],
    ...     "session_id": Annotated[str, Input],
    ...     "history": Annotated[list[dict[str, str]], Reducer(operator.add)],
    ...     "response_text": Annotated[str, TurnScoped],
    ... })
    >>> @node(writes=["response_text"])
    ... def echo(state, context):
    ...     return {"response_text": f"turn {context.turn}: {state['message']}"}
    >>> runtime = TurnRuntime(State, [echo], InMemoryBackend())
    >>> runtime.run_turn({"message": "hi", "session_id": "chat-1"})
    {'response_text': 'turn 1: hi'}
    >>> runtime.run_turn({"message": "again", "session_id": "chat-1"})["response_text"]
    'turn 2: again'
    >>> [entry["role"] for entry in runtime.thread_state("chat-1")["history"]]
    ['user', 'assistant', 'user', 'assistant']
    >>> runtime.close()
    """

    def __init__(
        self,
        schema: type,
        graph: GraphLike,
        checkpointer: Backend | str | os.PathLike[str] | None = None,
        memory_store: Backend | MemoryBackend | None = None,
        *,
        context: WorkflowContext | None = None,
        input_model: type | None = None,
        output_model: type | Sequence[str] | None = None,
        writes: Mapping[str, Iterable[str]] | None = None,
        codec: StateCodec | None = None,
        transcript: Transcript | None = None,
        diagnostics: str | None = "diagnostics",
        thread_field: str = "session_id",
        user_field: str = "user_id",
        max_open_threads: int = 256,
        snapshot_every: int = 1000,
    ) -> None:
        self.schema = StateSchema(schema)
        self.contract = Contract(self.schema, input_model=input_model, output=output_model)
        self._graph, self.nodes = compile_graph(graph, self.schema, writes)
        self.codec = codec if codec is not None else StateCodec()
        self._transcript = transcript if transcript is not None else Transcript()
        self._transcript_fields = self._transcript.resolve(self.schema)
        self._diagnostics = check_diagnostics(self.schema, diagnostics)
        self._owns_backend = not isinstance(checkpointer, Backend)
        self.backend: Backend = _checkpointer(checkpointer, memory_store)
        base = context if context is not None else WorkflowContext()
        if base.memory_store is None:
            memory = memory_store if memory_store is not None else self.backend
            base = replace(base, memory_store=memory)
        self.context = base
        self._persisted = frozenset(leaf.path for leaf in self.schema.of("reducer"))
        self._each_turn = tuple(
            leaf
            for leaf in self.schema.of("reducer")
            if cast(Reducer, leaf.marker).each_turn is not MISSING
        )
        self._loaded = self.schema.of("loaded")
        self._inputs = self.schema.of("input")
        self._starts = tuple(
            (leaf.path, leaf.default, leaf.reducer is not replace_)
            for leaf in (*self.schema.of("turn_scoped"), *self._loaded)
        )
        self._thread_field, self._user_field = thread_field, user_field
        self.run_id = f"turns-{uuid.uuid4().hex[:12]}"
        self._threads = Threads(
            self.backend,
            schema=self.schema,
            codec=self.codec,
            capacity=max_open_threads,
            snapshot_every=snapshot_every,
            run_id=self.run_id,
            name=SOURCE,
        )
        self._closed = False

    async def arun_turn(
        self,
        input: Any = None,
        *,
        thread_id: str | None = None,
        on_event: Listener | None = None,
        answers: Mapping[str, Any] | None = None,
    ) -> Any:
        """Run one turn and return its output (your output model, or a dict), or ``Paused``
        when a node asked a person (``weft.graph.interrupt``): the turn stored nothing but
        its input and question, and ``answers=`` (with the ``thread_id``, no input) runs it
        again whole, the node getting its answer."""
        result = await self._turn(input, thread_id, on_event, answers)
        return result.output

    def run_turn(
        self,
        input: Any = None,
        *,
        thread_id: str | None = None,
        on_event: Listener | None = None,
        answers: Mapping[str, Any] | None = None,
    ) -> Any:
        """The sync form of ``arun_turn``."""
        return run_sync(
            self.arun_turn(input, thread_id=thread_id, on_event=on_event, answers=answers)
        )

    async def astream_turn(
        self, input: Any, *, thread_id: str | None = None
    ) -> AsyncIterator[StageEvent | TurnResult]:
        """Run one turn, yielding each ``StageEvent`` as it happens, then the ``TurnResult``.
        Leaving the loop early cancels the turn (nothing of it is stored)."""
        loop = asyncio.get_running_loop()
        queue: asyncio.Queue[Any] = asyncio.Queue()

        def listen(event: StageEvent) -> None:
            loop.call_soon_threadsafe(queue.put_nowait, event)

        task = asyncio.ensure_future(self._turn(input, thread_id, listen, None))
        task.add_done_callback(lambda _: loop.call_soon(queue.put_nowait, _END))
        try:
            while (item := await queue.get()) is not _END:
                yield item
            yield task.result()
        finally:
            if not task.done():
                task.cancel()
                await asyncio.gather(task, return_exceptions=True)

    async def _turn(
        self,
        given: Any,
        thread_id: str | None,
        listener: Listener | None,
        answers: Mapping[str, Any] | None,
    ) -> TurnResult:
        if self._closed:
            raise TurnError("this TurnRuntime is closed; make a new one on the same checkpointer")
        if answers is not None and (given is not None or thread_id is None):
            raise TurnError(
                "answers= resume the paused turn of a thread: pass thread_id=... and no input "
                "(the turn runs again with the input it paused with)"
            )
        # no input and a thread id: a paused turn resumes, or the thread's next turn takes
        # every input's default (decided once the thread is loaded)
        initial = (
            None
            if given is None and thread_id is not None
            else self.contract.build_initial_state(given)
        )
        tid: Any = thread_id
        if initial is not None and thread_id is None:
            tid = initial.inputs.get(self._thread_field)
        if not isinstance(tid, str) or not tid:
            raise TurnError(
                f"a turn needs a thread id: pass thread_id=... or give the input a non-empty "
                f"{self._thread_field!r} (got {tid!r})"
            )
        async with self._threads.locks.hold(tid):
            stages = Stages(tid, listener)
            with stages.stage("load"):
                run, record = self._threads.open(tid)
            turn = (record.turns if record is not None else 0) + 1
            log = RunLog(run.store, f"turn-{turn}")
            initial, resumed = self._turn_input(log, given, initial, answers, tid)
            user = initial.inputs.get(self._user_field)
            owner = Owner(user_id=user if isinstance(user, str) and user else None, session_id=tid)
            context = replace(self.context, thread_id=tid, turn=turn, owner=owner)
            began = 0.0
            watch = TurnWatch(tid, log.run_id) if watched(run.store) else None
            try:
                with run.store.transaction() as tx:
                    if watch is not None:
                        watch.start(tx)
                    with pausing(Asking(RunLog(tx, log.run_id), "turn", "turn")):
                        output = await self._inside(tx, initial, context, stages)
                    if resumed:  # the paused turn, done
                        log.complete(None, into=tx)
                    if watch is not None:
                        watch.end(tx)
                    stages.emit("persist", "started", 0.0, "runtime")
                    began = perf_counter()
                stages.stage_ms["persist"] = ms = ms_since(began)
                stages.emit("persist", "finished", ms, "runtime")
            except Interrupt as pause:  # nothing of the turn is stored but its question
                if watch is not None and watch.open:
                    watch.end(None, "paused")
                with run.store.transaction() as tx:
                    paused = RunRecord(kind="turn", status="paused", started_at=time.time())
                    tx.write(KIND, log.run_id, paused, source=SOURCE)
                    given = {"inputs": initial.inputs, "loaded": initial.loaded}
                    tx.write(KIND, log.path("input"), StepRecord(kind="input", result=given))
                    for asked in pause.pauses:
                        tx.write(KIND, asked.id, asked, source=SOURCE)
                output = Paused(log.run_id, pause.pauses)
            except BaseException as exc:
                if watch is not None and watch.open:
                    watch.end(None, "failed", f"{type(exc).__name__}: {exc}")
                if began:
                    stages.emit("persist", "failed", ms_since(began), "runtime")
                cause = exc.__cause__
                if isinstance(exc, NodeError) and isinstance(cause, TurnError):
                    raise cause.with_traceback(cause.__traceback__) from None
                if isinstance(exc, ConflictError):
                    self._threads.drop(tid)  # another process moved the thread on: read it again
                raise
        return TurnResult(output=output, thread_id=tid, turn=turn, elapsed_ms=stages.elapsed_ms())

    def _turn_input(
        self,
        log: RunLog,
        given: Any,
        initial: InitialState | None,
        answers: Mapping[str, Any] | None,
        tid: str,
    ) -> tuple[InitialState, bool]:
        """The input of the turn to run, and whether it is a paused turn running again: the
        one given, or a paused turn's once answered, here (``answers=``) or from outside
        (``weft answer``, the inspector, ``Reader.answer``: the answers are recorded and the
        turn's run marked running, and a call with the thread id and no input resumes it)."""
        known = log.run()
        status = None if known is None else known.status
        if answers is not None:
            if status != "paused":
                raise TurnError(
                    f"thread {tid!r} has no paused turn to answer; run a turn with input"
                )
            log.answer(answers, error=TurnError)
            return self._stored_input(log), True
        if status == "paused":
            asked = "; ".join(f"{p.id}: {p.question!r}" for p in log.pending())
            raise TurnError(
                f"thread {tid!r} waits for an answer before its next turn ({asked}); call "
                "run_turn(thread_id=..., answers={id: answer})"
            )
        if status == "running" and log.get("input") is not None:  # answered from outside
            if given is not None:
                raise TurnError(
                    f"thread {tid!r} has a paused turn that was answered and waits to run "
                    f"again; call run_turn(thread_id={tid!r}) with no input first"
                )
            return self._stored_input(log), True
        if initial is None:
            initial = self.contract.build_initial_state(given)
        return initial, False

    def _stored_input(self, log: RunLog) -> InitialState:
        stored = log.get("input")
        assert stored is not None, "a paused turn keeps its input"
        return InitialState(
            inputs=thaw(stored.result["inputs"]), loaded=thaw(stored.result["loaded"])
        )

    async def _inside(
        self, tx: Store, initial: InitialState, context: WorkflowContext, stages: Stages
    ) -> Any:
        began, started_at = tx.last_seq, time.time()
        start_turn(tx, self.codec.version)
        given = initial.inputs  # every input: a view never shows an earlier turn's
        tx.write_many(
            "input", [(f.path, given.get(f.path, f.default), CALLER) for f in self._inputs]
        )
        updates = [(f.path, cast(Reducer, f.marker).each_turn, SOURCE) for f in self._each_turn]
        for path, start, folds in self._starts:  # an earlier turn's value: back to the start
            entry = tx.get("state", path)
            if entry is not None and entry.stored is not start:
                if start is MISSING:
                    tx.delete("state", path, source=SOURCE)
                elif folds:  # past the field's reducer
                    tx.write("state", path, start, source=SOURCE, replace=True)
                else:
                    updates.append((path, start, SOURCE))
        tx.write_many("state", updates)
        with stages.stage("loaders"):
            loaded = await self._run_loaders(tx, context, initial.loaded)
        with stages.stage("graph"):
            observe = stages.listener is not None or self._diagnostics is not None
            unsubscribe = tx.subscribe(stages.on_note) if observe else None
            try:
                await self._graph.arun(store=tx, context=context)
            finally:
                if unsubscribe is not None:
                    unsubscribe()
        with stages.stage("finalise"):
            output = self._finalise(tx, stages, loaded, context.turn)
            end_turn(tx, context.turn, began, started_at)
            return output

    async def _run_loaders(
        self, tx: Store, context: WorkflowContext, supplied: Mapping[str, Any]
    ) -> dict[str, Any]:
        for path, value in supplied.items():
            tx.write("state", path, value, source=CALLER)
        pending = [leaf for leaf in self._loaded if leaf.path not in supplied]
        if not pending:
            return {}
        view = TurnState(self.schema, reader(tx.value))
        calls = [self._load_one(leaf, context, view) for leaf in pending]
        results = [await calls[0]] if len(calls) == 1 else await asyncio.gather(*calls)
        out: dict[str, Any] = {}  # each loader's time (and recall path), for the diagnostics
        for leaf, (value, info) in zip(pending, results, strict=True):
            tx.write("state", leaf.path, value, source=f"loader:{leaf.path}")
            out[leaf.path] = info
        return out

    async def _load_one(
        self, leaf: Field, context: WorkflowContext, view: TurnState
    ) -> tuple[Any, dict[str, Any]]:
        began = perf_counter()
        try:
            value = cast(Loaded, leaf.marker).loader(context, view)
            if inspect.isawaitable(value):
                value = await value
        except Exception as exc:
            raise TurnError(
                f"the loader of {leaf.path!r} failed ({type(exc).__name__}: {exc}); nothing of "
                "this turn was stored"
            ) from exc
        info: dict[str, Any] = {"ms": ms_since(began)}
        if isinstance(value, RecallResult):
            info["path"] = value.path
            value = value.values()
        return value, info

    def _finalise(self, tx: Store, stages: Stages, loaded: dict[str, Any], turn: int) -> Any:
        if self._diagnostics is not None:
            stamp: dict[str, Any] = {
                "turn": turn,
                "turn_total_ms": stages.elapsed_ms(),
                "stage_ms": dict(stages.stage_ms),
                "node_ms": dict(stages.node_ms),
            }
            if self._loaded:
                stamp["loaded"] = loaded
            stamp_diagnostics(tx, self._diagnostics, stamp)
        state = TurnState(self.schema, reader(tx.value))
        if self._transcript_fields:
            append_entries(tx, self._transcript_fields, self._transcript.entries(state))
        return self.contract.state_to_output(state)

    def thread_state(self, thread_id: str, *, turn: int | None = None) -> dict[str, Any]:
        """The thread's stored (``Reducer``) fields as plain data: now, or as they were at
        the end of turn ``turn`` (read from the log, so it works past a bad later record)."""
        try:
            store = self._threads.store(thread_id, turn=turn)
        except LookupError as exc:
            raise TurnError(str(exc)) from None
        flat = {
            e.path: thaw(e.value)
            for e in store.entries(kind="state", key_prefix="state:")
            if e.path in self._persisted
        }
        return unflatten(flat)

    def turns(self, thread_id: str) -> int:
        """How many turns of the thread are stored."""
        record = self.codec.read(self._threads.store(thread_id), thread_id)
        return 0 if record is None else record.turns

    def build_initial_state(self, input: Any) -> dict[str, Any]:
        """The graph-input view: the nested dict of Input and supplied Loaded fields."""
        initial = self.contract.build_initial_state(input)
        flat = {leaf.path: leaf.default for leaf in self.schema.of("input")}
        flat.update(initial.inputs)
        flat.update(initial.loaded)
        return unflatten({k: thaw(v) for k, v in flat.items() if v is not MISSING})

    def state_to_output(self, state: Mapping[str, Any]) -> Any:
        """The output view of a state (a ``TurnState`` or a dict of top-level fields)."""
        return self.contract.state_to_output(state)

    def close(self) -> None:
        """Close the open threads, and the checkpointer if the runtime made it."""
        if self._closed:
            return
        self._closed = True
        self._threads.close()
        if self._owns_backend:
            self.backend.close()

    def __enter__(self) -> TurnRuntime:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return (
            f"<TurnRuntime schema={self.schema.name} nodes={[n.label for n in self.nodes]} "
            f"open_threads={len(self._threads)}>"
        )


def _checkpointer(given: Backend | str | os.PathLike[str] | None, memory_store: object) -> Backend:
    """The event-log backend of a runtime: ``given``, a SQLite file at the path ``given``, or
    the default file; a ``TurnError`` for anything else (checked before a file is opened)."""
    if memory_store is not None and not isinstance(memory_store, (Backend, MemoryBackend)):
        raise TurnError(
            f"memory_store={memory_store!r:.80}: expected a weft.persist backend or a "
            "weft.memory backend (or None: the checkpointer's database)"
        )
    if given is None:
        return SQLiteBackend()
    if isinstance(given, Backend):
        return given
    if isinstance(given, (str, os.PathLike)):
        return SQLiteBackend(os.fspath(given))
    raise TurnError(
        f"checkpointer={given!r:.80}: expected a weft.persist backend (SQLiteBackend(path), "
        "PostgresBackend(...), InMemoryBackend()) or the path of a SQLite file"
    )
