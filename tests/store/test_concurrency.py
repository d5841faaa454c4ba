"""Concurrent writers lose nothing, and subscribers see every event once, in order."""

from __future__ import annotations

import asyncio
import threading

from weft.store import Event, Store, reducers

WRITES = 200


def test_32_threads_and_32_tasks_lose_no_write() -> None:
    store = Store(reducers={"state:log": reducers.append, "state:count": reducers.add})
    seen: list[int] = []
    lock = threading.Lock()

    def count(event: Event) -> None:
        with lock:
            seen.append(event.seq)

    def flaky(event: Event) -> None:
        if event.seq % 7 == 0:
            raise RuntimeError("flaky subscriber")

    store.subscribe(count)
    store.subscribe(flaky)
    start = threading.Barrier(33)

    def thread_writer(n: int) -> None:
        start.wait()
        for i in range(WRITES):
            store.write("state", "log", f"t{n}-{i}")
            store.write("state", "count", 1)
            store.write("shared", f"t{n}/{i}", i)

    async def task_writer(n: int) -> None:
        for i in range(WRITES):
            store.write("state", "log", f"a{n}-{i}")
            store.write("state", "count", 1)
            store.write("shared", f"a{n}/{i}", i)
            if i % 10 == 0:
                await asyncio.sleep(0)

    async def tasks() -> None:
        await asyncio.gather(*(task_writer(n) for n in range(32)))

    threads = [threading.Thread(target=thread_writer, args=(n,)) for n in range(32)]
    for thread in threads:
        thread.start()
    start.wait()
    asyncio.run(tasks())
    for thread in threads:
        thread.join()

    total = 64 * WRITES
    log = store.value("state", "log")
    assert len(log) == total
    assert len(set(log)) == total
    assert store.value("state", "count") == total
    assert len(store.entries(kind="shared")) == total
    assert len(store.events()) == 3 * total
    assert seen == list(range(1, 3 * total + 1))  # every event once, in seq order


def test_forks_written_from_threads_merge_in_fork_order() -> None:
    store = Store(reducers={"state:log": reducers.append})
    forks = [store.fork(name=f"b{i}") for i in range(16)]

    def work(i: int) -> None:
        for j in range(50):
            forks[i].write("state", "log", [i, j])

    threads = [threading.Thread(target=work, args=(i,)) for i in reversed(range(16))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    store.merge(forks)
    assert store.value("state", "log") == [[i, j] for i in range(16) for j in range(50)]
