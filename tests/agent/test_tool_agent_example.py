"""examples/tool_agent.py runs offline, pauses for a person, and resumes from its SQLite
file without asking the model again for what it had answered."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "tool_agent.py"


def test_the_tool_agent_example_runs(capsys: pytest.CaptureFixture[str]) -> None:
    spec = importlib.util.spec_from_file_location("example_tool_agent", EXAMPLE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.main()
    out = capsys.readouterr().out
    part_one, part_two = out.split("Part 2:")
    assert part_one.count("(look_up") == 2 and "(look_up" not in part_two
    assert '  look_up -> {"city": "Lyon", "population": 522250}' in part_one
    assert "paused: {'send to': 'ada@example.com'" in part_one
    assert "(mail to ada@example.com" not in part_one and "(mail to ada@example.com" in part_two
    assert "answer: Report sent: Paris is about 4x Lyon." in part_two
    assert "stopped: answered after 4 model calls (1 in this process), 4 tool calls" in part_two
    assert "shared:populations = {'Paris': 2102650, 'Lyon': 522250}" in part_two
