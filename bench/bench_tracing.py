"""What tracing costs the W1 state chain (``bench_graph.py``: 200 state nodes on a Store).

Two tables:

off vs before  W1 on this tree with ``weft.telemetry`` imported and tracing not on, against
               W1 on the source of ``--base`` (a git revision from before tracing existed),
               each side in its own process (two versions of weft cannot share one), the
               sides alternating for ``--repeats`` rounds; every round's cell is the median
               of its process's samples. Both sides run the same graph on the same store.
on vs off      in one process, interleaved: tracing never turned on, turned on and stopped
               again, and on (the OpenTelemetry SDK, spans kept by its in-memory
               exporter: a span per node and per run).

Run: ``python bench/bench_tracing.py --base <rev> [--repeats 6] [--quick]``
(needs ``pip install -e '.[dev,bench]'`` and git).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent

CHILD = """
import gc, json, statistics, sys, time
sys.path.insert(0, {bench!r})
import weft
assert weft.__file__.startswith({src!r}), weft.__file__
if {telemetry!r}:
    import weft.telemetry  # installed, not turned on
from bench_graph import w1_weft
run = w1_weft()
for _ in range(5):
    run()
gc.collect(); gc.freeze()
wall, cpu = [], []
for _ in range({samples}):
    gc.collect()
    w, c = time.perf_counter_ns(), time.process_time_ns()
    for _ in range({inner}):
        run()
    cpu.append((time.process_time_ns() - c) / {inner} / 1000)
    wall.append((time.perf_counter_ns() - w) / {inner} / 1000)
print(json.dumps([statistics.median(wall), statistics.median(cpu)]))
"""


def child(src: Path, telemetry: bool, samples: int, inner: int) -> tuple[float, float]:
    """Median wall-clock and CPU microseconds per W1 run, in a process of its own."""
    code = CHILD.format(
        bench=str(BENCH), src=str(src), telemetry=telemetry, samples=samples, inner=inner
    )
    env = {**os.environ, "PYTHONPATH": str(src)}
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
    )
    wall, cpu = json.loads(done.stdout)
    return float(wall), float(cpu)


def before_and_after(base: str, repeats: int, samples: int, inner: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        archive = subprocess.run(
            ["git", "archive", base, "src"], cwd=ROOT, capture_output=True, check=True
        )
        subprocess.run(["tar", "-x", "-C", tmp], input=archive.stdout, check=True)
        sides = {"before": Path(tmp) / "src", "off": ROOT / "src"}
        taken: dict[str, list[tuple[float, float]]] = {name: [] for name in sides}
        for round_ in range(repeats):
            order = list(sides) if round_ % 2 == 0 else list(reversed(sides))
            for name in order:
                taken[name].append(child(sides[name], name == "off", samples, inner))
    print(
        f"<!-- bench:tracing-off -->\nW1 state chain, 200 nodes: us per run (wall clock and "
        f"CPU time), median of {samples} samples per process, {repeats} rounds, base {base}\n"
    )
    print(
        "| round | before: wall | off: wall | off / before | before: CPU | off: CPU | off / before |"
    )
    print("|---:|---:|---:|---:|---:|---:|---:|")
    rows = list(zip(taken["before"], taken["off"], strict=True))
    for i, ((bw, bc), (ow, oc)) in enumerate(rows, 1):
        print(
            f"| {i} | {bw:,.0f} | {ow:,.0f} | {ow / bw:.3f} | {bc:,.0f} | {oc:,.0f} | {oc / bc:.3f} |"
        )
    wall = statistics.median(o[0] / b[0] for b, o in rows)
    cpu = statistics.median(o[1] / b[1] for b, o in rows)
    bw, ow = (statistics.median(t[0] for t in taken[n]) for n in ("before", "off"))
    bc, oc = (statistics.median(t[1] for t in taken[n]) for n in ("before", "off"))
    print(f"| median | {bw:,.0f} | {ow:,.0f} | {wall:.3f} | {bc:,.0f} | {oc:,.0f} | {cpu:.3f} |")
    print("<!-- /bench:tracing-off -->\n")


def on_and_off(rounds: int, inner: int) -> None:
    from bench_graph import w1_weft
    from harness import interleaved, timed
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    import weft.telemetry

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    never = timed(w1_weft(), inner=inner)
    weft.telemetry.instrument(provider).stop()
    stopped = timed(w1_weft(), inner=inner)
    chain = w1_weft()

    def traced() -> None:
        with weft.telemetry.instrument(provider):
            chain()
        exporter.clear()

    medians = interleaved(
        {"never on": never, "on, then stopped": stopped, "on": timed(traced, inner=inner)},
        rounds,
    )
    print("<!-- bench:tracing-on -->\nW1 state chain, 200 nodes, in one process: us per run\n")
    print("| tracing | us per run | / never on |")
    print("|---|---:|---:|")
    for name, value in medians.items():
        print(f"| {name} | {value:,.0f} | {value / medians['never on']:.2f} |")
    print("<!-- /bench:tracing-on -->")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--base", required=True, help="a git revision from before tracing")
    parser.add_argument("--repeats", type=int, default=6, help="rounds of the two processes")
    parser.add_argument("--quick", action="store_true", help="fewer samples")
    args = parser.parse_args()
    samples = 30 if args.quick else 100
    sys.path.insert(0, str(BENCH))
    before_and_after(args.base, args.repeats, samples, inner=5)
    on_and_off(samples, inner=5)


if __name__ == "__main__":
    main()
