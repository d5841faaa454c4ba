"""Store benchmark: per-operation cost against a plain dict, and fork cost as the store grows.

Run: .venv/bin/python bench/bench_store.py [--quick]

Prints one table. The floor column is the nearest plain-Python operation:
dict set/get; ``dict.copy()`` for a fork (what an isolated copy costs without
structural sharing); a copy + 10 sets + ``update`` for fork/merge; a scan of
the keys with ``startswith`` for a prefix listing.
"""

from __future__ import annotations

import argparse
import platform
import statistics
import sys
import time
from collections.abc import Callable

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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="fewer repeats")
    args = parser.parse_args()
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


if __name__ == "__main__":
    main()
