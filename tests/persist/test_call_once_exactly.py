"""Keyed calls at most once, with reconcile: an intent holding the call's idempotency key is
committed before the effect; after a crash between the effect and its record, the call goes
to ``reconcile`` (or is made again with the same key, or is an ``UnreconciledCallError``),
never silently made again without its key. In process, and with real SIGKILLs."""

from __future__ import annotations

import functools
import json
import random
import uuid
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from crash_helpers import (
    Forker,
    drop_schema,
    effects,
    forker,
    kill_after,
    kill_point,
    spec_for,
)
from weft.agent import Agent
from weft.calls import Tool
from weft.errors import NodeError, StoreError, UnreconciledCallError
from weft.graph import Paused, RunContext, WorkGraph, WorkGraphNode, interrupt
from weft.llm import ScriptedChatModel, ScriptedReasoner
from weft.memory import AgentMemory
from weft.persist import Backend, DurableRun, load_store
from weft.plan import Step, Task, TaskExecutor
from weft.store import NOT_DONE, CallIntent, RunLog, StepRecord, Store

WORKER = Path(__file__).parent / "once_crash_worker.py"


class Crash(BaseException):
    """Stands for the process dying inside the call: nothing in weft catches it."""


class Service:
    """A service that deduplicates by idempotency key, as payment APIs do; ``crash``
    makes the next call die (``Crash``) right after its effect."""

    def __init__(self) -> None:
        self.keys: list[str] = []
        self.applied: dict[str, dict[str, int]] = {}
        self.crash = False

    def charge(self, order: int, idempotency_key: str) -> dict[str, int]:
        self.keys.append(idempotency_key)
        self.applied.setdefault(idempotency_key, {"charged": order})
        if self.crash:
            self.crash = False
            raise Crash(idempotency_key)
        return self.applied[idempotency_key]

    def lookup(self, idempotency_key: str) -> Any:
        return self.applied.get(idempotency_key, NOT_DONE)


def crashed_call(backend: Backend, service: Service, thread: str = "t") -> str:
    """A call that dies between its effect and its record; the key it was given."""
    service.crash = True
    with DurableRun.open(backend, thread) as run, pytest.raises(Crash):
        run.call_once("charge", service.charge, 17)
    return service.keys[-1]


# ------------------------------------------------------------------ in process


def test_the_intent_is_committed_before_the_call_with_the_key_it_gets(backend: Backend) -> None:
    seen: list[Any] = []

    def charge(idempotency_key: str) -> str:
        seen.append(load_store(backend, "t").value("step", "calls/charge"))  # the database
        return idempotency_key

    key = DurableRun.open(backend, "t").call_once("charge", charge)
    assert seen == [CallIntent(key=key, label="charge", started_at=seen[0].started_at)]
    assert key.startswith("calls/charge~")
    record = load_store(backend, "t").value("step", "calls/charge")
    assert isinstance(record, StepRecord) and record.result == key  # the result replaced it


def test_an_interrupted_call_goes_to_reconcile_with_its_key(backend: Backend) -> None:
    service = Service()
    key = crashed_call(backend, service)
    asked: list[str] = []

    def reconcile(idempotency_key: str) -> Any:
        asked.append(idempotency_key)
        return service.lookup(idempotency_key)

    run = DurableRun.open(backend, "t")
    assert run.call_once("charge", service.charge, 17, reconcile=reconcile) == {"charged": 17}
    assert asked == [key] and service.keys == [key]  # answered: not called again
    assert DurableRun.open(backend, "t").call_once("charge", service.charge, 17) == {"charged": 17}
    assert service.keys == [key]


def test_reconcile_saying_not_done_makes_the_call_again_with_the_same_key(
    backend: Backend,
) -> None:
    service = Service()
    key = crashed_call(backend, service)
    run = DurableRun.open(backend, "t")
    out = run.call_once("charge", service.charge, 17, reconcile=lambda k: NOT_DONE)
    assert out == {"charged": 17} and service.keys == [key, key]


def test_without_reconcile_a_call_that_takes_the_key_is_made_again_with_it(
    backend: Backend,
) -> None:
    service = Service()
    key = crashed_call(backend, service)
    assert DurableRun.open(backend, "t").call_once("charge", service.charge, 17) == {"charged": 17}
    assert service.keys == [key, key] and len(service.applied) == 1  # deduplicated


def test_without_reconcile_a_keyless_interrupted_call_is_an_error_naming_the_key(
    backend: Backend,
) -> None:
    calls: list[int] = []

    def send(n: int) -> int:
        calls.append(n)
        if len(calls) == 1:
            raise Crash("died after the effect")
        return n

    with pytest.raises(Crash):
        DurableRun.open(backend, "t").call_once("mail", send, 1)
    with pytest.raises(UnreconciledCallError) as caught:
        DurableRun.open(backend, "t").call_once("mail", send, 1)
    assert calls == [1]  # not made again blindly
    error = caught.value
    assert error.key == "mail" and error.path == "calls/mail"
    assert error.idempotency_key.startswith("calls/mail~")
    for words in ("'mail'", error.idempotency_key, "reconcile=", "NOT_DONE", "idempotency_key"):
        assert words in str(error), words


def test_a_call_that_raised_is_made_again_with_the_same_key(backend: Backend) -> None:
    keys: list[str] = []

    def flaky(idempotency_key: str) -> str:
        keys.append(idempotency_key)
        if len(keys) == 1:
            raise TimeoutError("no answer")
        return "ok"

    run = DurableRun.open(backend, "t")
    with pytest.raises(TimeoutError):
        run.call_once("k", flaky)
    intent = run.store.value("step", "calls/k")
    assert isinstance(intent, CallIntent) and intent.failed == "TimeoutError: no answer"
    assert run.call_once("k", flaky) == "ok" and keys[0] == keys[1]


def test_a_retry_of_a_call_that_raised_is_unknown_again_if_it_dies(backend: Backend) -> None:
    attempts: list[str] = []

    def send() -> None:
        attempts.append("send")
        raise (ValueError("refused") if len(attempts) == 1 else Crash("died"))

    run = DurableRun.open(backend, "t")
    with pytest.raises(ValueError, match="refused"):
        run.call_once("k", send)
    with pytest.raises(Crash):
        run.call_once("k", send)  # made again: its caller saw the error
    with pytest.raises(UnreconciledCallError):
        DurableRun.open(backend, "t").call_once("k", send)  # this time nobody saw the end
    assert attempts == ["send", "send"]


async def test_the_async_form_reconciles_with_a_sync_or_async_hook(backend: Backend) -> None:
    service = Service()

    async def charge(order: int, idempotency_key: str) -> dict[str, int]:
        return service.charge(order, idempotency_key)

    key = crashed_call(backend, service, "a")
    crashed_call(backend, service, "b")

    async def lookup(idempotency_key: str) -> Any:
        return service.lookup(idempotency_key)

    first = DurableRun.open(backend, "a")
    assert await first.acall_once("charge", charge, 17, reconcile=lookup) == {"charged": 17}
    second = DurableRun.open(backend, "b")
    assert await second.acall_once("charge", charge, 17, reconcile=service.lookup) == {
        "charged": 17
    }
    assert len(service.keys) == 2 and service.keys[0] == key  # neither made again

    async def send() -> None:
        raise Crash("died")

    with pytest.raises(Crash):
        await DurableRun.open(backend, "c").acall_once("mail", send)
    with pytest.raises(UnreconciledCallError):
        await DurableRun.open(backend, "c").acall_once("mail", send)


async def test_the_async_form_takes_a_plain_function_result_as_it_is() -> None:
    store, made = Store(), []
    log = RunLog(store, "r")
    assert await log.aonce("", "k", lambda: made.append(1) or "sent") == "sent"
    assert await log.aonce("", "k", lambda: made.append(1) or "sent") == "sent"
    assert made == [1]


class Unprintable(Exception):
    def __str__(self) -> str:
        raise RuntimeError("no text")


def test_an_error_that_cannot_be_recorded_is_raised_and_leaves_the_call_unknown() -> None:
    store = Store()

    def send() -> None:
        raise Unprintable

    with pytest.raises(Unprintable):
        RunLog(store, "r").once("", "k", send)
    intent = store.value("step", "r/calls/k")
    assert isinstance(intent, CallIntent) and intent.failed is None
    with pytest.raises(UnreconciledCallError):
        RunLog(store, "r").once("", "k", send)


def test_a_sync_call_with_an_async_hook_names_the_async_form() -> None:
    store = Store()
    store.write("step", "r/calls/k", CallIntent(key="r/calls/k~1", label="k"))

    async def lookup(key: str) -> Any:
        return NOT_DONE

    with pytest.raises(StoreError, match="acall_once"):
        RunLog(store, "r").once("", "k", print, reconcile=lookup)


@pytest.mark.parametrize(
    ("fn", "kwargs", "words"),
    [
        (42, {}, "42 is not callable"),
        (print, {"reconcile": "ask"}, "reconcile='ask' is not callable"),
        (lambda idempotency_key: 1, {"idempotency_key": "mine"}, "drop the argument"),
    ],
)
def test_bad_keyed_calls_are_store_errors_that_say_what_to_pass(
    fn: Any, kwargs: dict[str, Any], words: str
) -> None:
    store = Store()
    with pytest.raises(StoreError, match=words):
        RunLog(store, "r").once("", "k", fn, **kwargs)
    assert not store.entries(kind="step")  # nothing recorded, nothing called


def test_the_key_reaches_only_a_function_that_names_it() -> None:
    log = RunLog(Store(), "r")
    got: dict[str, Any] = {}

    def by_keyword(*, idempotency_key: str, **rest: Any) -> None:
        got["kw"] = idempotency_key

    def only_rest(**rest: Any) -> None:  # **kwargs does not ask for the key
        got["rest"] = rest

    class Caller:
        def __call__(self, idempotency_key: str) -> None:
            got["object"] = idempotency_key

    @functools.wraps(by_keyword)  # a decorator's wrapper: its signature is the wrapped one's
    def logged(*args: Any, **kwargs: Any) -> None:
        got["wrapped"] = kwargs

    calls = {
        "a": by_keyword,
        "b": only_rest,
        "c": Caller(),
        "d": logged,
        "e": functools.partial(by_keyword),
    }
    for key, fn in calls.items():
        log.once("", key, fn)
    assert got["rest"] == {}
    assert got["object"].startswith("r/calls/c~")
    assert got["wrapped"]["idempotency_key"].startswith("r/calls/d~")
    assert got["kw"].startswith("r/calls/e~")  # the partial's call, the last of by_keyword's


def test_without_a_run_id_the_call_gets_a_fresh_key_and_nothing_is_recorded() -> None:
    keys: list[str] = []

    def charge(idempotency_key: str) -> None:
        keys.append(idempotency_key)

    def pay_with_key(ctx: RunContext[None]) -> None:
        ctx.call_once("pay", charge, reconcile=lambda k: NOT_DONE)  # not passed on

    store = Store()
    WorkGraph([WorkGraphNode(pay_with_key)]).run(store=store)
    WorkGraph([WorkGraphNode(pay_with_key)]).run(store=store)
    assert len(set(keys)) == 2 and keys[0].startswith("pay_with_key#0/calls/pay~")
    assert not store.entries(kind="step")


def test_an_agent_without_a_run_id_passes_no_hook_on_and_a_fresh_key() -> None:
    keys: list[str] = []
    reply = json.dumps({"next_actions": [[{"type": "pay", "args": {}}]]})

    def pay(call_once: Any) -> Any:
        return call_once(
            "k", lambda idempotency_key: keys.append(idempotency_key) or 1, reconcile=print
        )

    agent = Agent(
        ScriptedReasoner([reply, json.dumps({"task_status": "Completed"})]), actor={"pay": pay}
    )
    agent.run("pay")
    assert len(keys) == 1 and keys[0].startswith("calls/k~")


def test_a_graph_node_call_reconciles_on_resume(backend: Backend) -> None:
    service = Service()
    asked: list[str] = []

    def pay(order: int, ctx: RunContext[Service]) -> Any:
        def reconcile(key: str) -> Any:
            asked.append(key)
            return service.lookup(key)

        return ctx.call_once("charge", ctx.deps.charge, order, reconcile=reconcile)

    graph = WorkGraph([WorkGraphNode(pay)])
    service.crash = True
    with pytest.raises(Crash):
        DurableRun.open(backend, "t").run_graph(graph, 17, run_id="job", context=service)
    out = DurableRun.open(backend, "t").run_graph(graph, 17, run_id="job", context=service)
    assert out == {"charged": 17} and asked == service.keys
    assert asked[0].startswith("job/pay#0/calls/charge~")


def test_a_graph_node_keyless_interrupted_call_is_refused_on_resume() -> None:
    store, sent = Store(), []

    def mail(ctx: RunContext[None]) -> Any:
        def send() -> None:
            sent.append(1)
            if len(sent) == 1:
                raise Crash("died")

        return ctx.call_once("mail", send)

    graph = WorkGraph([WorkGraphNode(mail)])
    with pytest.raises(Crash):
        graph.run(run_id="job", store=store)
    with pytest.raises(NodeError) as caught:
        graph.run(run_id="job", store=store)
    assert isinstance(caught.value.__cause__, UnreconciledCallError) and sent == [1]


def test_a_keyed_call_that_pauses_is_made_again_when_the_answer_comes(backend: Backend) -> None:
    """A pause is not a crash: the call's caller saw it end, so its intent is settled as
    for an error, and the resumed unit makes the call again (``interrupt`` answering)."""
    charged: list[str] = []

    def node(ctx: RunContext[None]) -> Any:
        def charge() -> str:
            if interrupt("charge 42?") == "yes":
                charged.append("42")
            return "done"

        return ctx.call_once("charge", charge)

    graph = WorkGraph([WorkGraphNode(node)])
    paused = DurableRun.open(backend, "t").run_graph(graph, run_id="job")
    assert isinstance(paused, Paused) and charged == []
    answers = {paused.questions[0].id: "yes"}
    assert DurableRun.open(backend, "t").run_graph(graph, run_id="job", answers=answers) == "done"
    assert charged == ["42"]


def test_an_executor_step_asks_its_model_again_after_a_crash_during_a_reply() -> None:
    """A step's keyed calls replay it (model replies, tools that ask): they guard no
    effect, so a reply the crash interrupted is asked for again, not refused."""
    asked: Counter[str] = Counter()
    crash = [True]

    def lookup(q: str) -> dict[str, str]:
        asked["lookup"] += 1
        return {"found": q}

    def script(messages: Any, tools: Any) -> Any:
        asked["model"] += 1
        tool_results = [m for m in messages if m.role == "tool"]
        if not tool_results:
            return ScriptedChatModel.tool_call("lookup", {"q": "bob"})
        if crash.pop() if crash else False:
            raise Crash("the process dies while the model answers")
        return ScriptedChatModel.tool_call("finish_step", {"result": tool_results[-1].content})

    tools = [Tool(name="lookup", fn=lookup, parameters={"type": "object"})]
    task = Task(id="mail", steps=[Step(id="send", instructions="Send it.")])
    executor = TaskExecutor(
        task, model=ScriptedChatModel(script), memory=AgentMemory(), tools=tools
    )
    with pytest.raises(Crash):
        executor.execute(run_id="job")
    done = executor.execute(run_id="job")
    assert done.ok, done
    assert asked == Counter({"model": 3, "lookup": 1})  # the first reply was replayed


def test_an_intent_is_never_listed_as_memory() -> None:
    store = Store()
    with pytest.raises(TimeoutError):
        RunLog(store, "r").once("", "k", _timeout)
    assert isinstance(store.value("step", "r/calls/k"), CallIntent)
    assert AgentMemory(store).list() == []


def _timeout() -> None:
    raise TimeoutError("down")


# ------------------------------------------------------------------ real processes


@pytest.fixture
def pg_schema() -> Iterator[str]:
    schema = f"t_{uuid.uuid4().hex[:12]}"
    yield schema
    drop_schema(schema)


@pytest.fixture(scope="module")
def workers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Forker]:
    with forker(WORKER, tmp_path_factory.mktemp("once")) as server:
        yield server


def lines(counter: Path, what: str) -> list[str]:
    """The keys of COUNTER's ``effect`` or ``reconcile`` lines, in order."""
    return [line.split(" ", 1)[1] for _pid, line in effects(counter) if line.startswith(what)]


SCENARIOS = {
    # scenario: (the resumed run's answer, effects made, reconcile asked)
    "reconcile": ({"charged": 17}, 1, 1),
    "not_done": ({"charged": 17}, 2, 1),
    "key": ({"charged": 17}, 2, 0),
    "plain": ({"error": "UnreconciledCallError", "key": "charge"}, 1, 0),
    "async": ({"charged": 17}, 1, 1),
    "graph": ({"charged": 17}, 1, 1),
}


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
@pytest.mark.parametrize("scenario", list(SCENARIOS))
def test_sigkill_between_the_effect_and_its_record_then_resume(
    workers: Forker, kind: str, scenario: str, tmp_path: Path, pg_schema: str
) -> None:
    """The effect kills its own process right after it took effect; a new process resumes.
    The effect ran at most once unless reconcile said not done, the hook was asked with
    the key the effect got, and every attempt got that same key."""
    spec, counter = spec_for(kind, tmp_path, pg_schema), tmp_path / "service.log"
    first = workers.start(spec, "t", str(counter), scenario, "die")
    assert workers.wait(first.token) == -9, str(first)  # died by its own SIGKILL
    answer = workers.start(spec, "t", str(counter), scenario, "run").finish()
    expected, made, asked = SCENARIOS[scenario]
    made_with = lines(counter, "effect")
    if scenario == "plain":
        assert answer["error"] == expected["error"] and answer["key"] == expected["key"]
    else:
        assert answer == expected
        assert len(set(made_with)) == 1, made_with  # the same key both times
    assert len(made_with) == made, made_with
    assert lines(counter, "reconcile") == made_with[:asked]


def crash_and_resume(workers: Forker, spec: str, folder: Path, attempt: int, calls: int) -> Any:
    """Kill a worker once or twice at a random point (``kill_point``, counting the lines of
    the service's log), then run it to the end in a fresh process; what that one returns."""
    rng = random.Random(20240901 + attempt)
    thread, counter = f"crash-{attempt}", folder / f"crash-{attempt}.log"
    for _kill in range(rng.randint(1, 2)):
        seen, made = len(effects(counter)), len(set(lines(counter, "effect")))
        worker = workers.start(spec, thread, str(counter), "random", "run")
        kill_after(worker, counter, *kill_point(rng, seen, calls - made, 0.003))
    return workers.start(spec, thread, str(counter), "random", "run").finish()


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
def test_sigkill_at_random_points_applies_each_keyed_effect_once(
    workers: Forker, kind: str, tmp_path: Path, pg_schema: str
) -> None:
    """Twenty attempts per backend, killed once or twice anywhere: inside a call, between
    the effect and its record (each effect sleeps there), before the first intent, after
    the last record. Every keyed effect is applied exactly once, each interrupted call is
    reconciled with the key its effect got, and the run ends as an uninterrupted one."""
    spec = spec_for(kind, tmp_path, pg_schema)
    reference = workers.start(spec, "reference", str(tmp_path / "ref.log"), "random", "run")
    expected = reference.finish()
    calls = len(expected)
    with ThreadPoolExecutor(max_workers=3) as pool:
        ends = list(
            pool.map(lambda a: crash_and_resume(workers, spec, tmp_path, a, calls), range(20))
        )
    reconciled = 0
    for attempt, end in enumerate(ends):
        assert end == expected, f"attempt {attempt}"
        counter = tmp_path / f"crash-{attempt}.log"
        made = Counter(lines(counter, "effect"))
        assert len(made) == calls and set(made.values()) == {1}, f"attempt {attempt}: {made}"
        asked = lines(counter, "reconcile")
        assert set(asked) <= set(made), f"attempt {attempt}: a hook asked of another key"
        reconciled += len(asked)
    assert reconciled > 0  # some kills fell between an intent and its record
