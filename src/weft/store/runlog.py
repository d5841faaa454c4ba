"""``RunLog``: the one resume mechanism, reading and writing the typed records of one run
(``weft.store.records``), and keyed calls: a call made once per idempotency key, with an
intent recorded before it and a ``reconcile`` hook for an intent found without a result.
"""

from __future__ import annotations

import contextlib
import inspect
import secrets
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import replace
from types import CodeType, FunctionType, MethodType
from typing import TYPE_CHECKING, Any, Final

from weft.errors import StoreError, UnreconciledCallError, ValueTypeError
from weft.store.records import CALLS, KIND, PAUSES, CallIntent, Pause, RunRecord, StepRecord
from weft.store.values import _Sentinel

if TYPE_CHECKING:
    from weft.store.store import Store


def check_run_id(run_id: object, error: type[Exception] = StoreError) -> str:
    """A run id: a non-empty string without ``/`` (it starts the records' paths)."""
    if not isinstance(run_id, str) or not run_id or "/" in run_id:
        raise error(
            f"run_id={run_id!r}: a run id is a non-empty string without '/', e.g. 'job-1'; "
            "it names the records of one run, so reuse it to resume that run"
        )
    return run_id


class RunLog:
    """The records of one run in one store (``weft.store.records``): the one resume
    mechanism, and the keyed calls made in the run (``once``)."""

    __slots__ = ("_prefix", "run_id", "store")

    def __init__(self, store: Store, run_id: str, *, scope: str = "") -> None:
        self.store = store
        self.run_id = check_run_id(run_id)
        self._prefix = f"{run_id}/{scope}/" if scope else f"{run_id}/"

    def scope(self, unit: str) -> RunLog:
        """The log of the units under ``unit`` of this run (an agent's branch, say)."""
        inner = self._prefix[len(self.run_id) + 1 :] + unit
        return RunLog(self.store, self.run_id, scope=inner)

    def path(self, unit: str) -> str:
        return self._prefix + unit

    def run(self) -> RunRecord | None:
        """The run's record, or None if it never began."""
        found = self.store.value(KIND, self.run_id, None)
        return found if isinstance(found, RunRecord) else None

    def begin(
        self, kind: str, units: tuple[str, ...] = (), *, error: type[Exception] = StoreError
    ) -> RunRecord:
        """The run's record: written now (status ``running``) if the run is new, else the
        one recorded, checked to be of the same kind and units (else ``error``)."""
        known = self.check(kind, units, error=error)
        if known is not None:
            return known
        record = RunRecord(
            kind=kind, units=units, began=self.store.last_seq, started_at=time.time()
        )
        self.store.write(KIND, self.run_id, record, source=f"weft.{kind}")
        return record

    def check(
        self, kind: str, units: tuple[str, ...], *, error: type[Exception] = StoreError
    ) -> RunRecord | None:
        """The run's record if one was written, checked to be of the same kind and units
        (else ``error``); None for a run that never completed a record of its own."""
        known = self.store.value(KIND, self.run_id, None)
        if known is None:
            return None
        run_id = self.run_id
        if not isinstance(known, RunRecord):
            raise error(
                f"run {run_id!r} cannot be recorded: {KIND}:{run_id} holds a "
                f"{type(known).__name__} that is not a run record (the result of an executor's "
                "step of that id, say); use another run_id"
            )
        if known.kind != kind or known.units != units:
            raise error(
                f"run {run_id!r} was recorded for a {known.kind} ({_units(known.units)}), not "
                f"for this {kind} ({_units(units)}); resume a run with what started it, or use "
                "a new run_id"
            )
        return known

    def completed(self, kind: str, units: tuple[str, ...], started_at: float) -> RunRecord:
        """The record of this run, completed now (to write in the run's last commit)."""
        return RunRecord(
            kind=kind,
            status="completed",
            units=units,
            started_at=started_at,
            duration_ms=_ms_since(started_at),
        )

    def complete(self, output: Any, *, into: Store | None = None) -> None:
        """Mark the run completed with ``output`` (None if it cannot be recorded)."""
        known = self.run()
        if known is None:
            return
        target = into if into is not None else self.store
        done = replace(
            known, status="completed", output=None, duration_ms=_ms_since(known.started_at)
        )
        try:
            record = replace(done, output=output)
        except ValueTypeError:
            record = done  # every part was recorded already; keep the status
        target.write(KIND, self.run_id, record, source=f"weft.{known.kind}")

    def get(self, unit: str) -> StepRecord | None:
        """The record of ``unit`` if it finished, else None."""
        found = self.store.value(KIND, self._prefix + unit, None)
        return found if isinstance(found, StepRecord) else None

    def recorded(self) -> dict[str, StepRecord]:
        """Every unit record under this log, by unit (nested units included, by path)."""
        prefix = self._prefix
        out: dict[str, StepRecord] = {}
        for entry in self.store.entries(kind=KIND, key_prefix=f"{KIND}:{prefix}"):
            value = entry.value
            if isinstance(value, StepRecord):
                out[entry.path[len(prefix) :]] = value
        return out

    def record(self, unit: str, record: StepRecord, *, into: Store | None = None) -> StepRecord:
        """Record that ``unit`` finished, in the store or in ``into`` (a fork that holds the
        unit's writes: both reach the store as one commit)."""
        target = into if into is not None else self.store
        target.write(KIND, self._prefix + unit, record, source=record.label or unit)
        return record

    def paused(self, kind: str = "", units: tuple[str, ...] = ()) -> None:
        """Mark the run paused: some unit waits for an answer (``pending``). A run with no
        record yet (a graph writes its own as it ends) gets one of ``kind`` and ``units``."""
        known = self.run()
        if known is None and kind:
            known = RunRecord(kind=kind, units=units, started_at=time.time())
        if known is not None and known.status != "paused":
            self.store.write(
                KIND, self.run_id, replace(known, status="paused"), source="weft.pause"
            )

    def pause(self, unit: str, index: int) -> Pause | None:
        """The record of ``unit``'s ``index``-th question, if it was asked."""
        found = self.store.value(KIND, f"{self._prefix}{unit}/{PAUSES}/{index}", None)
        return found if isinstance(found, Pause) else None

    def ask(self, unit: str, index: int, question: Any, label: str | None = None) -> Pause:
        """Record that ``unit`` asks ``question`` at its ``index``-th pause point (kept as
        it was if it asked already: the first question stands)."""
        known = self.pause(unit, index)
        if known is not None:
            return known
        whole = self._prefix[len(self.run_id) + 1 :] + unit  # the unit's path in the run
        record = Pause(
            run_id=self.run_id,
            unit=whole,
            label=label,
            index=index,
            question=question,
            asked_at=time.time(),
        )
        self.store.write(KIND, record.id, record, source=label or unit)
        return record

    def pending(self) -> tuple[Pause, ...]:
        """The questions of this run (and of runs nested in its units, whose ids begin
        with ``<run id>.``) that wait for an answer, in path order."""
        run_id = self.run_id
        at = len(run_id)
        return tuple(
            value
            for entry in self.store.entries(kind=KIND, key_prefix=f"{KIND}:{run_id}")
            if entry.path[at : at + 1] in ("/", ".")
            and isinstance(value := entry.value, Pause)
            and not value.answered
        )

    def answer(self, answers: Any, *, error: type[Exception] = StoreError) -> None:
        """Give the answers (``{pause id: answer}``) to questions waiting, in one commit,
        and mark the run running again; an id that waits for no answer is ``error``."""
        if not isinstance(answers, Mapping) or not answers:
            raise error(
                f"answers={answers!r}: expected a non-empty dict of question id to answer, "
                "e.g. paused.answer('yes') or {paused.questions[0].id: 'yes'}"
            )
        now = time.time()
        records = []
        for key, value in answers.items():
            found = self.store.value(KIND, key, None) if isinstance(key, str) else None
            if not isinstance(found, Pause) or found.answered:
                waiting = ", ".join(repr(p.id) for p in self.pending()) or "none"
                raise error(
                    f"no question waits for an answer under {key!r} (run {self.run_id!r}); "
                    f"the questions waiting are: {waiting}"
                )
            try:
                records.append(replace(found, answered=True, answer=value, answered_at=now))
            except ValueTypeError as exc:
                raise error(f"the answer to {key!r} cannot be stored: {exc}") from None
        with self.store.transaction() as tx:
            for record in records:
                tx.write(KIND, record.id, record, source="weft.answer")
            # A nested run (``<outer>.<inner>``) passed its pause up to the runs around
            # it: they all run again once the question is answered.
            parts = self.run_id.split(".")
            for end in range(len(parts), 0, -1):
                run_id = ".".join(parts[:end])
                known = self.store.value(KIND, run_id, None)
                if isinstance(known, RunRecord) and known.status == "paused":
                    tx.write(KIND, run_id, replace(known, status="running"), source="weft.answer")

    def once(
        self,
        unit: str,
        key: str,
        fn: Callable[..., Any],
        *args: Any,
        reconcile: Reconcile | None = None,
        **kwargs: Any,
    ) -> Any:
        """``fn(*args, **kwargs)`` unless the call with ``key`` was recorded under ``unit``
        (``""``: the run as a whole); returns the recorded result (frozen JSON form). See
        ``once`` for the idempotency key and ``reconcile``."""
        return once(
            self.store, self._call_path(unit, key), fn, *args, reconcile=reconcile, **kwargs
        )

    async def aonce(
        self,
        unit: str,
        key: str,
        fn: Callable[..., Awaitable[Any]],
        *args: Any,
        reconcile: Reconcile | None = None,
        **kwargs: Any,
    ) -> Any:
        """The async form of ``once``."""
        path = self._call_path(unit, key)
        return await aonce(self.store, path, fn, *args, reconcile=reconcile, **kwargs)

    def forget_calls(self, unit: str) -> None:
        """Delete the keyed calls recorded under ``unit`` (one commit): a unit that failed
        runs again from scratch, asking again what it asked."""
        prefix = f"{KIND}:{self._prefix}{unit}/{CALLS}/"
        paths = [e.path for e in self.store.entries(kind=KIND, key_prefix=prefix)]
        if paths:
            with self.store.transaction() as tx:
                for path in paths:
                    tx.delete(KIND, path, source="weft.forget")

    def _call_path(self, unit: str, key: str) -> str:
        _check_key(key)
        base = self._prefix + unit if unit else self._prefix.rstrip("/")
        return f"{base}/{CALLS}/{key}"


IDEMPOTENCY_KEY: Final = "idempotency_key"
"""The parameter by which a keyed call's function asks for the call's idempotency key."""


class _NotDone(_Sentinel):
    __slots__ = ()


NOT_DONE: Final = _NotDone("NOT_DONE")
"""What a ``reconcile`` hook returns when the call did not take effect: it is made again,
with the same idempotency key."""

Reconcile = Callable[[str], Any]
"""``reconcile(idempotency_key)``: the call's result, or ``NOT_DONE`` (awaitable in
``aonce``)."""


class UnitExit(BaseException):
    """weft's own way out of a unit of work that is not an error (``interrupt`` pausing
    the unit). A keyed call it leaves ended as visibly as one that raised, so it is made
    again when the unit runs again; any other ``BaseException`` (a cancellation, the
    process stopping) leaves the call's outcome unknown."""


def call_path(key: str) -> str:
    """Where a keyed call of a durable run as a whole is recorded (kind ``step``)."""
    _check_key(key)
    return f"{CALLS}/{key}"


def once(
    store: Store,
    path: str,
    fn: Callable[..., Any],
    *args: Any,
    reconcile: Reconcile | None = None,
    **kwargs: Any,
) -> Any:
    """Call ``fn`` unless a call was recorded at ``path``; record and return its result.

    At most once, with reconcile: a ``CallIntent`` holding the call's idempotency key is
    written before ``fn`` is called (a commit of its own on a durable store) and the
    result's ``StepRecord`` replaces it after. ``fn`` is given the key when it has a
    parameter named ``idempotency_key``. An intent found without a result (the process
    stopped during the call, or the call raised) is handed to ``reconcile(key)`` when one
    is given: it returns the call's result (recorded as if the call had returned it), or
    ``NOT_DONE`` to make the call again with the same key. Without ``reconcile`` the call
    is made again only if ``fn`` takes the key (the service deduplicates) or the last
    attempt raised; otherwise it is an ``UnreconciledCallError``, never a blind re-run."""
    found = store.value(KIND, path, None)
    if found.__class__ is StepRecord:
        return found.value
    intent, ask = _intent(store, path, found, fn, kwargs, reconcile)
    if ask:
        assert reconcile is not None
        hook = f"its reconcile hook {_name(reconcile)!r}"
        outcome = _not_awaitable(reconcile(intent.key), path, hook, "hook")
        if outcome is not NOT_DONE:
            return _record_call(store, path, intent, outcome)
    try:
        result = _not_awaitable(fn(*args, **kwargs), path, repr(_name(fn)), "function")
    except (Exception, UnitExit) as exc:
        _failed(store, path, intent, exc)
        raise
    return _record_call(store, path, intent, result)


async def aonce(
    store: Store,
    path: str,
    fn: Callable[..., Awaitable[Any]],
    *args: Any,
    reconcile: Reconcile | None = None,
    **kwargs: Any,
) -> Any:
    """The async form of ``once``: ``fn`` and ``reconcile`` may be sync or async."""
    found = store.value(KIND, path, None)
    if found.__class__ is StepRecord:
        return found.value
    intent, ask = _intent(store, path, found, fn, kwargs, reconcile)
    if ask:
        assert reconcile is not None
        outcome = reconcile(intent.key)
        if inspect.isawaitable(outcome):
            outcome = await outcome
        if outcome is not NOT_DONE:
            return _record_call(store, path, intent, outcome)
    try:
        result = fn(*args, **kwargs)
        if inspect.isawaitable(result):  # a plain function's result is taken as it is
            result = await result
    except (Exception, UnitExit) as exc:
        _failed(store, path, intent, exc)
        raise
    return _record_call(store, path, intent, result)


def unrecorded(scope: str, key: str, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """``fn(*args, **kwargs)`` where nothing is recorded (a run without a run id): a call
    that cannot be resumed is a new call each time, so a function that asks for an
    ``idempotency_key`` gets a fresh one (``<scope>/calls/<key>~<random>``)."""
    if takes_key(fn):
        where = f"{scope}/{CALLS}/{key}" if scope else f"{CALLS}/{key}"
        _check_own_key(where, kwargs)
        kwargs[IDEMPOTENCY_KEY] = f"{where}~{secrets.token_hex(8)}"
    return fn(*args, **kwargs)


def _intent(
    store: Store,
    path: str,
    found: Any,
    fn: Callable[..., Any],
    kwargs: dict[str, Any],
    reconcile: Reconcile | None,
) -> tuple[CallIntent, bool]:
    """The call's intent, committed and pending before ``fn`` is called (its key put in
    ``kwargs`` when ``fn`` takes it), and whether ``reconcile`` must be asked first (an
    earlier attempt)."""
    if not callable(fn):
        raise StoreError(f"the keyed call {path!r}: {fn!r} is not callable; pass a function")
    if reconcile is not None and not callable(reconcile):
        raise StoreError(
            f"the keyed call {path!r}: reconcile={reconcile!r} is not callable; pass a "
            "function of the idempotency key that returns the call's result or NOT_DONE"
        )
    gets_key = takes_key(fn)
    if gets_key:
        _check_own_key(path, kwargs)
    label = path.rsplit("/", 1)[-1]
    if found.__class__ is not CallIntent:
        intent = CallIntent(
            key=f"{path}~{secrets.token_hex(8)}", label=label, started_at=time.time()
        )
        store.write(KIND, path, intent, source=f"call:{label}")
    elif reconcile is None and not gets_key and found.failed is None:
        raise UnreconciledCallError(
            f"the keyed call {label!r} (recorded at step:{path}) began in an earlier run and "
            "has no result: the process stopped during the call, so whether its effect "
            "happened is unknown, and it is not made again blindly. Pass reconcile=fn: it is "
            f"called with the idempotency key {found.key!r} and returns the call's result "
            "(ask the service what happened) or weft.store.NOT_DONE to make the call again "
            f"with that key; or give {_name(fn)!r} a parameter named {IDEMPOTENCY_KEY} and "
            "pass the key on to a service that deduplicates by it",
            key=label,
            idempotency_key=found.key,
            path=path,
        )
    elif found.failed is not None:  # pending again: a crash in this attempt is unknown again
        intent = replace(found, failed=None)
        store.write(KIND, path, intent, source=f"call:{label}")
    else:
        intent = found
    if gets_key:
        kwargs[IDEMPOTENCY_KEY] = intent.key
    return intent, found.__class__ is CallIntent and reconcile is not None


def _failed(store: Store, path: str, intent: CallIntent, exc: BaseException) -> None:
    """The call raised (or paused): its caller is told, so a later call makes it again."""
    # Recording this must not hide the call's own error: if it fails (the backend is down
    # too, an error that cannot be shown), the intent stays pending, and the outcome reads
    # as unknown, which is the safe side.
    with contextlib.suppress(Exception):
        failed = replace(intent, failed=f"{type(exc).__name__}: {exc}"[:300])
        store.write(KIND, path, failed, source=f"call:{intent.label}")


def _record_call(store: Store, path: str, intent: CallIntent, result: Any) -> Any:
    record = StepRecord(
        kind="call",
        label=intent.label,
        result=result,
        tuple_result=result.__class__ is tuple,
        started_at=intent.started_at,
        duration_ms=_ms_since(intent.started_at),
    )
    store.write(KIND, path, record, source=f"call:{intent.label}")
    return record.value


_KEYED: dict[int, tuple[CodeType, bool]] = {}
"""Whether a function's code takes the key, by ``id`` (the code is kept: its id stays its
own). Reading a code object's fields costs more than a call of a small function."""


def takes_key(fn: Callable[..., Any]) -> bool:
    """Whether ``fn`` has a parameter ``idempotency_key`` that a keyword can fill (then a
    keyed call passes it the call's idempotency key)."""
    target: Any = fn.__func__ if fn.__class__ is MethodType else fn
    if target.__class__ is FunctionType and "__wrapped__" not in target.__dict__:
        code = target.__code__  # the hot path: a plain function, known by its code
        known = _KEYED.get(id(code))
        if known is not None and known[0] is code:
            return known[1]
        first, last = code.co_posonlyargcount, code.co_argcount + code.co_kwonlyargcount
        takes = IDEMPOTENCY_KEY in code.co_varnames[first:last]
        if len(_KEYED) >= 4096:
            _KEYED.clear()
        _KEYED[id(code)] = (code, takes)
        return takes
    try:
        parameter = inspect.signature(fn).parameters.get(IDEMPOTENCY_KEY)
    except (TypeError, ValueError):  # a builtin without a signature
        return False
    return parameter is not None and parameter.kind in (
        inspect.Parameter.POSITIONAL_OR_KEYWORD,
        inspect.Parameter.KEYWORD_ONLY,
    )


def _check_own_key(where: str, kwargs: dict[str, Any]) -> None:
    if IDEMPOTENCY_KEY in kwargs:
        raise StoreError(
            f"the keyed call {where!r} was passed {IDEMPOTENCY_KEY}= itself; weft gives the "
            "function its idempotency key (stable across resumes): drop the argument and "
            "choose the call's key instead"
        )


def _not_awaitable(value: Any, path: str, source: str, what: str) -> Any:
    """``value``, returned by ``source`` in a sync keyed call: a ``StoreError`` if awaitable."""
    if inspect.isawaitable(value):
        if inspect.iscoroutine(value):
            value.close()
        raise StoreError(
            f"the keyed call {path!r} got an awaitable from {source}; for an async {what} use "
            "the async form (acall_once / aonce) and await it"
        )
    return value


def _name(fn: Any) -> str:
    return str(getattr(fn, "__name__", fn))


def _ms_since(started: float) -> float:
    """Milliseconds from ``started`` (wall clock) to now, to the microsecond."""
    return round((time.time() - started) * 1000, 3)


def _check_key(key: object) -> None:
    if not isinstance(key, str) or not key:
        raise StoreError(f"idempotency key {key!r}: expected a non-empty string")


def _units(units: tuple[str, ...]) -> str:
    if not units:
        return "no fixed units"
    shown = ", ".join(units[:5])
    return f"units [{shown}{', ...' if len(units) > 5 else ''}]"
