"""Store benchmark: per-operation cost against a plain dict, and fork cost as the store grows.

Run: .venv/bin/python bench/bench_store.py [--quick] [--build-sizes 1000,100000,1000000]
                                           [--pause-gc]

Prints two tables. In the first, the floor column is the nearest plain-Python
operation: dict set/get; ``dict.copy()`` for a fork (what an isolated copy
costs without structural sharing); a copy + 10 sets + ``update`` for
fork/merge; a scan of the keys with ``startswith`` for a prefix listing.

The second builds stores of growing size by single ``write`` calls of new
keys (in key order and in random order) and shows whether a write, a fork
and a prefix listing stay flat as the store grows: the total build time
(with the share spent in Python's cyclic garbage collector), the median cost
of writing one more new key at that size, and the ratio to the smallest size.
"""

from __future__ import annotations

import argparse
import gc
import platform
import random
import statistics
import sys
import time
from collections.abc import Callable, Iterator

from weft.memory import AgentMemory, memory_tools
from weft.store import Store, reducers


def measure(fn: Callable[[], object], *, inner: int, repeats: int) -> float:
    """Median microseconds per call of ``fn`` over ``repeats`` batches of ``inner`` calls."""
    samples = []
    for _ in range(repeats):
        start = time.perf_counter_ns()
        for _ in range(inner):
            fn()
        samples.append((time.perf_counter_ns() - start) / inner / 1000)
    return statistics.median(samples)


def filled_store(n: int) -> Store:
    store = Store(reducers={"state:log": reducers.append})
    for i in range(n):
        store.write("step", f"s{i:06}", {"i": i})
    return store


def filled_dict(n: int) -> dict[str, object]:
    return {f"step:s{i:06}": {"i": i} for i in range(n)}


def rows(quick: bool) -> list[tuple[str, float, float]]:
    repeats = 5 if quick else 9
    out: list[tuple[str, float, float]] = []

    store, plain = Store(), {}
    counter = iter(range(10**9))
    out.append(
        (
            "write (new key)",
            measure(
                lambda: plain.__setitem__(f"state:k{next(counter)}", 1), inner=2000, repeats=repeats
            ),
            measure(
                lambda: store.write("state", f"k{next(counter)}", 1), inner=2000, repeats=repeats
            ),
        )
    )
    out.append(
        (
            "write (same key)",
            measure(lambda: plain.__setitem__("state:k", 1), inner=2000, repeats=repeats),
            measure(lambda: store.write("state", "k", 1), inner=2000, repeats=repeats),
        )
    )
    out.append(
        (
            "read value",
            measure(lambda: plain["state:k"], inner=5000, repeats=repeats),
            measure(lambda: store.value("state", "k"), inner=5000, repeats=repeats),
        )
    )

    for n in (1_000, 10_000, 100_000):
        store, plain = filled_store(n), filled_dict(n)
        out.append(
            (
                f"fork() of {n:,}",
                measure(plain.copy, inner=20, repeats=repeats),
                measure(store.fork, inner=2000, repeats=repeats),
            )
        )

        def dict_round(plain: dict[str, object] = plain) -> None:
            copy = plain.copy()
            for j in range(10):
                copy[f"step:new{j}"] = j
            plain.update(copy)

        def store_round(store: Store = store) -> None:
            child = store.fork()
            for j in range(10):
                child.write("step", f"new{j}", j)
            store.merge([child])

        out.append(
            (
                f"fork + 10 writes + merge, {n:,}",
                measure(dict_round, inner=20, repeats=repeats),
                measure(store_round, inner=200, repeats=repeats),
            )
        )

    n = 100_000
    store, plain = filled_store(n), filled_dict(n)
    memory = AgentMemory(store)
    tools = memory_tools(memory)
    prefix = "step:s04200"  # ten keys: s042000 .. s042009
    assert len(memory.list(key_prefix=prefix)) == 10
    out.append(
        (
            "list 10 by prefix of 100,000",
            measure(lambda: [k for k in plain if k.startswith(prefix)], inner=5, repeats=repeats),
            measure(lambda: memory.list(key_prefix=prefix), inner=500, repeats=repeats),
        )
    )
    out.append(
        (
            "memory_list tool, same query",
            measure(lambda: [k for k in plain if k.startswith(prefix)], inner=5, repeats=repeats),
            measure(lambda: tools.memory_list({"key_prefix": prefix}), inner=500, repeats=repeats),
        )
    )
    return out


class GcClock:
    """Time spent in the cyclic garbage collector, and its runs per generation, while active."""

    def __init__(self) -> None:
        self.seconds = 0.0
        self.runs = [0, 0, 0]
        self._started = 0.0

    def _callback(self, phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            self._started = time.perf_counter()
        else:
            self.seconds += time.perf_counter() - self._started
            self.runs[info["generation"]] += 1

    def __enter__(self) -> GcClock:
        gc.callbacks.append(self._callback)
        return self

    def __exit__(self, *exc: object) -> None:
        gc.callbacks.remove(self._callback)


def new_key_write(store: Store, n: int, *, batches: int, batch: int) -> float:
    """Median microseconds of one ``write`` of a key the store does not hold, at random
    places among its keys; each batch writes into a fresh fork, so the size stays ``n``."""
    rng = random.Random(7)
    samples = []
    for b in range(batches):
        fork = store.fork()
        paths = [f"item/{rng.randrange(n):07}~{b}" for _ in range(batch)]
        start = time.perf_counter_ns()
        for path in paths:
            fork.write("shared", path, 1)
        samples.append((time.perf_counter_ns() - start) / batch / 1000)
    return statistics.median(samples)


def built_by_single_writes(n: int, order: str, pause_gc: bool) -> tuple[Store, float, GcClock]:
    """A store of ``n`` new keys written one ``write`` at a time; seconds and GC during it
    (none if ``pause_gc``: the collector is off for the build, as a caller could do)."""
    paths = [f"item/{i:07}" for i in range(n)]
    if order == "random":
        random.Random(n).shuffle(paths)
    gc.collect()
    store = Store()
    write = store.write
    with GcClock() as clock:
        if pause_gc:
            gc.disable()
        start = time.perf_counter()
        for i, path in enumerate(paths):
            write("shared", path, i)
        built = time.perf_counter() - start
        if pause_gc:
            gc.enable()
    return store, built, clock


def grown_costs(store: Store, n: int, repeats: int) -> dict[str, float]:
    memory = AgentMemory(store)
    prefix = "shared:item/000042"  # ten keys: item/0000420 .. item/0000429
    assert len(store.entries(key_prefix=prefix)) == len(memory.list(key_prefix=prefix)) == 10
    return {
        "new key us": new_key_write(store, n, batches=repeats * 5, batch=100),
        "fork us": measure(store.fork, inner=2000, repeats=repeats),
        "entries us": measure(lambda: store.entries(key_prefix=prefix), inner=500, repeats=repeats),
        "list us": measure(lambda: memory.list(key_prefix=prefix), inner=500, repeats=repeats),
    }


def growth_rows(
    sizes: list[int], quick: bool, pause_gc: bool
) -> Iterator[tuple[int, str, dict[str, float]]]:
    """Per size and key order: build seconds, GC seconds and gen-2 runs, and per-op costs."""
    repeats = 5 if quick else 9
    for n in sizes:
        for order in ("in order", "random"):
            store, built, clock = built_by_single_writes(n, order, pause_gc)
            start = time.perf_counter()
            store.entries(key_prefix="shared:item/000042")
            first = time.perf_counter() - start
            numbers = {
                "build s": built,
                "gc s": clock.seconds,
                "gen-2 runs": clock.runs[2],
                "1st list s": first,
            }
            numbers.update(grown_costs(store, n, repeats))
            del store
            yield n, order, numbers


def print_growth(sizes: list[int], quick: bool, pause_gc: bool) -> None:
    columns = (
        "build s",
        "gc s",
        "gen-2 runs",
        "1st list s",
        "new key us",
        "fork us",
        "entries us",
        "list us",
    )
    header = f"| {'entries':>9} | {'key order':<9} | " + " | ".join(f"{c:>10}" for c in columns)
    header += f" | {'new key / smallest':>18} |"
    print(header)
    print("|" + "|".join("-" * (len(part)) for part in header.split("|")[1:-1]) + "|")
    smallest: dict[str, float] = {}
    for n, order, numbers in growth_rows(sizes, quick, pause_gc):
        smallest.setdefault(order, numbers["new key us"])
        cells = " | ".join(
            f"{numbers[c]:>10.0f}" if c == "gen-2 runs" else f"{numbers[c]:>10.3f}" for c in columns
        )
        ratio = numbers["new key us"] / smallest[order]
        print(f"| {n:>9,} | {order:<9} | {cells} | {ratio:>17.2f}x |")
        sys.stdout.flush()
    print()
    print("build: single store.write calls of new keys shared:item/NNNNNNN, gc s and gen-2 runs")
    print("during it; 1st list: the first store.entries by prefix after it (the index sorts")
    print("the keys written since it was last read); new key: median of one more write of a")
    print("new key at a random place (on a fork, so the size stays); entries / list: medians")
    print("of store.entries and AgentMemory.list of the 10 keys under shared:item/000042.")
    if pause_gc:
        print("The cyclic garbage collector was off during each build (--pause-gc).")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="fewer repeats")
    parser.add_argument(
        "--build-sizes",
        default="1000,100000,1000000",
        help="comma-separated store sizes for the growth table (empty: skip it)",
    )
    parser.add_argument(
        "--pause-gc",
        action="store_true",
        help="turn the cyclic garbage collector off while the growth table's stores are built",
    )
    args = parser.parse_args()
    sizes = [int(size) for size in args.build_sizes.split(",") if size]
    print(
        f"weft store benchmark — Python {platform.python_version()} on "
        f"{platform.machine()} {platform.system()}, {time.strftime('%Y-%m-%d')}"
    )
    print()
    header = f"| {'operation':<34} | {'floor us':>10} | {'weft us':>10} | {'weft / floor':>12} |"
    print(header)
    print("|" + "|".join("-" * (len(part)) for part in header.split("|")[1:-1]) + "|")
    for name, floor, weft in rows(args.quick):
        print(f"| {name:<34} | {floor:>10.3f} | {weft:>10.3f} | {weft / floor:>11.2f}x |")
    print()
    print("floor: dict set/get; dict.copy() for a fork; copy + 10 sets + update for a round;")
    print("a startswith scan of all keys for a prefix listing.")
    sys.stdout.flush()
    if sizes:
        print()
        print_growth(sizes, args.quick, args.pause_gc)


if __name__ == "__main__":
    main()
