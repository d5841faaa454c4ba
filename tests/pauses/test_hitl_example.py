"""examples/human_in_the_loop.py runs: a refund pauses in one process and is answered in
another without its lookup running again; a memory deletion waits for the next turn's yes."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "human_in_the_loop.py"


def test_the_human_in_the_loop_example_answers_across_a_restart() -> None:
    done = subprocess.run(
        [sys.executable, str(EXAMPLE)], capture_output=True, text=True, timeout=120, check=True
    )
    lines = done.stdout.splitlines()
    assert lines.count("  lookup A-42") == 1  # not again in the process that answered
    assert (
        "  paused; question refund-42/approve#1/pauses/0: {'refund': 120, 'order': 'A-42'}" in lines
    )
    assert "  -> refunded 120" in lines
    assert (
        "  user: 'forget that I like tea' -> Delete the memory that you like tea? (yes/no)" in lines
    )
    assert "  user: 'yes' -> Done: I forgot that you like tea." in lines
    assert lines[-1] == "  facts: ['live in Oslo']"
