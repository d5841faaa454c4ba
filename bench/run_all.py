"""Run every benchmark in one go and write ``bench/RESULTS.md``; ``--docs`` also puts the
tables into ``docs/performance.md``, so that every table there comes from one run.

    .venv/bin/python bench/run_all.py [--quick] [--docs] [--no-run]

The scripts run one after another, each in its own process (so no framework's imports or
garbage slow another's samples). A script prints each table between
``<!-- bench:NAME -->`` and ``<!-- /bench:NAME -->``; the output of a script that prints
no markers becomes one block named after it (``bench_store.py`` -> ``store``).
``RESULTS.md`` keeps the markers (HTML comments: invisible when rendered). ``--docs``
replaces what stands between the same markers in ``docs/performance.md``, and fails, naming
the block, if that page has a marker that this run did not produce. ``--no-run`` reads the
blocks from the ``RESULTS.md`` already written instead of running the scripts again.
"""

from __future__ import annotations

import argparse
import datetime
import re
import subprocess
import sys
from pathlib import Path

from harness import machine

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
RESULTS = BENCH / "RESULTS.md"
PAGE = ROOT / "docs" / "performance.md"

# script, heading in RESULTS.md, whether its output is a markdown table (else shown as text)
SCRIPTS = (
    ("bench_graph.py", "Graph engines, in memory (W1, W1b, W2)", True),
    ("bench_persist.py", "Durable runs on SQLite (W3, W4)", True),
    ("bench_turns.py", "Turns of a conversation", True),
    ("bench_store.py", "Store and memory", True),
    ("bench_agent.py", "Agents", False),
    ("bench_plan.py", "Plans of tool calls", False),
    ("bench_tool_loop.py", "The tool-calling loop", True),
    ("bench_width.py", "Width and length: 1,000 to 100,000 nodes", True),
    ("bench_recall.py", "Long-term recall at scale", True),
    ("bench_distributed.py", "Scale-out on Ray", True),
)
BLOCK = re.compile(r"^<!-- bench:([\w-]+) -->\n(.*?)\n<!-- /bench:\1 -->$", re.DOTALL | re.M)


def run(script: str, quick: bool) -> str:
    print(f"running {script} ...", file=sys.stderr, flush=True)
    command = [sys.executable, str(BENCH / script), *(["--quick"] if quick else [])]
    done = subprocess.run(command, cwd=ROOT, stdout=subprocess.PIPE, text=True, check=False)
    if done.returncode != 0:
        sys.exit(f"{script} failed (exit {done.returncode}); nothing was written")
    return done.stdout


def blocks_of(script: str, output: str, markdown: bool) -> dict[str, str]:
    found = dict(BLOCK.findall(output))
    if found:
        return found
    name = script.removeprefix("bench_").removesuffix(".py")
    body = output.strip("\n")
    return {name: body if markdown else f"```text\n{body}\n```"}


def wrap(name: str, body: str) -> str:
    return f"<!-- bench:{name} -->\n{body}\n<!-- /bench:{name} -->"


def results(sections: list[tuple[str, str, dict[str, str]]], header: str, quick: bool) -> str:
    parts = [
        "# Benchmark results",
        "",
        "Written by `python bench/run_all.py"
        + (" --quick`: a QUICK run (fewer rounds and sizes), not for the docs." if quick else "`.")
        + " Every table below comes from this one run.",
        "",
        wrap("machine", header),
    ]
    for script, heading, found in sections:
        parts += ["", f"## {heading}", "", f"`bench/{script}`", ""]
        parts += [wrap(name, body) + "\n" for name, body in found.items()]
    return "\n".join(parts).rstrip("\n") + "\n"


def update_page(found: dict[str, str]) -> list[str]:
    text = PAGE.read_text(encoding="utf-8")
    wanted = BLOCK.findall(text)
    missing = [name for name, _ in wanted if name not in found]
    if missing:
        sys.exit(f"{PAGE.name} has markers for {missing}, which this run did not produce")
    new = BLOCK.sub(lambda m: wrap(m.group(1), found[m.group(1)]), text)
    PAGE.write_text(new, encoding="utf-8")
    return [name for name, _ in wanted]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer rounds and sizes")
    parser.add_argument(
        "--docs", action="store_true", help="also replace the tables of docs/performance.md"
    )
    parser.add_argument(
        "--no-run", action="store_true", help="take the blocks from the existing RESULTS.md"
    )
    args = parser.parse_args()
    if args.no_run:
        if not RESULTS.exists():
            sys.exit(f"{RESULTS} does not exist: run without --no-run first")
        written = RESULTS.read_text(encoding="utf-8")
        if "QUICK run" in written and args.docs:
            sys.exit("RESULTS.md is from a --quick run; the docs' tables come from a full run")
        found = dict(BLOCK.findall(written))
    else:
        if args.quick and args.docs:
            sys.exit("--docs takes a full run: drop --quick")
        header = (
            f"Measured on {datetime.date.today().isoformat()}: {machine()}. "
            "All tables from one run of `python bench/run_all.py`; "
            "each script in its own process, one after another."
        )
        sections = []
        for script, heading, markdown in SCRIPTS:
            sections.append((script, heading, blocks_of(script, run(script, args.quick), markdown)))
        RESULTS.write_text(results(sections, header, args.quick), encoding="utf-8")
        print(f"wrote {RESULTS.relative_to(ROOT)}", file=sys.stderr)
        found = {"machine": header}
        for _, _, blocks in sections:
            found.update(blocks)
    if args.docs:
        names = update_page(found)
        print(f"{PAGE.relative_to(ROOT)}: replaced {', '.join(names)}", file=sys.stderr)


if __name__ == "__main__":
    main()
