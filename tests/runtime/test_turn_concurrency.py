"""The per-thread lock: two turns of one thread never interleave; threads run concurrently."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

from runtime_helpers import ChatState, Make, say

from weft.runtime import node
from weft.runtime.threads import ThreadLocks


def recording_node(log: list[str], pause: float) -> Any:
    @node(writes=["response_text"])
    async def work(state: Any) -> dict[str, Any]:
        log.append(f"enter {state['message']}")
        await asyncio.sleep(pause)
        log.append(f"exit {state['message']}")
        return {"response_text": state["message"]}

    return work


async def test_two_turns_of_one_thread_never_interleave(make: Make, tid: str) -> None:
    log: list[str] = []
    runtime = make(ChatState, [recording_node(log, 0.05)])
    await asyncio.gather(runtime.arun_turn(say("a", tid)), runtime.arun_turn(say("b", tid)))
    assert log in (
        ["enter a", "exit a", "enter b", "exit b"],
        ["enter b", "exit b", "enter a", "exit a"],
    )
    assert [e["role"] for e in runtime.thread_state(tid)["history"]] == ["user", "assistant"] * 2
    assert runtime.turns(tid) == 2


async def test_turns_of_different_threads_overlap(make: Make, tid: str) -> None:
    log: list[str] = []
    runtime = make(ChatState, [recording_node(log, 0.05)])
    await asyncio.gather(
        runtime.arun_turn(say("a", f"{tid}-1")), runtime.arun_turn(say("b", f"{tid}-2"))
    )
    assert log[:2] == ["enter a", "enter b"]  # b started while a was still inside its turn
    assert runtime.turns(f"{tid}-1") == runtime.turns(f"{tid}-2") == 1


def test_sync_turns_from_two_os_threads_of_one_thread_take_turns(make: Make, tid: str) -> None:
    log: list[str] = []
    runtime = make(ChatState, [recording_node(log, 0.03)])
    errors: list[BaseException] = []

    def run(text: str) -> None:
        try:
            runtime.run_turn(say(text, tid))
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    workers = [threading.Thread(target=run, args=(text,)) for text in ("a", "b", "c")]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    assert errors == []
    for i in range(0, 6, 2):
        assert log[i].replace("enter", "exit") == log[i + 1]
    assert runtime.turns(tid) == 3
    assert len(runtime.thread_state(tid)["history"]) == 6


async def test_locks_are_removed_once_no_turn_holds_or_waits() -> None:
    locks = ThreadLocks()
    async with locks.hold("a"):
        assert locks.busy("a")
        async with locks.hold("b"):
            assert len(locks) == 2
    assert len(locks) == 0


async def test_a_waiter_cancelled_never_holds_the_lock() -> None:
    locks = ThreadLocks()
    entered = asyncio.Event()

    async def hold_a_while() -> None:
        async with locks.hold("a"):
            entered.set()
            await asyncio.sleep(0.05)

    async def wait_forever() -> None:
        async with locks.hold("a"):
            raise AssertionError("the cancelled waiter got the lock")

    holder = asyncio.create_task(hold_a_while())
    await entered.wait()
    waiter = asyncio.create_task(wait_forever())
    await asyncio.sleep(0.01)
    waiter.cancel()
    await asyncio.gather(waiter, return_exceptions=True)
    await holder
    assert len(locks) == 0


async def test_a_thread_closed_to_keep_few_open_is_read_again_on_its_next_turn(
    make: Make, tid: str
) -> None:
    runtime = make(max_open_threads=1)
    for round_ in range(2):
        for n in range(3):
            await runtime.arun_turn(say(f"r{round_}", f"{tid}-{n}"))
    assert [runtime.turns(f"{tid}-{n}") for n in range(3)] == [2, 2, 2]
    assert len(runtime.thread_state(f"{tid}-0")["history"]) == 4
