"""examples/companion.py runs: three turns, a restart, a fourth turn that continues."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "companion.py"


async def test_the_companion_example_continues_after_a_restart(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = importlib.util.spec_from_file_location("example_companion", EXAMPLE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # typing.get_type_hints looks its schema up there
    try:
        spec.loader.exec_module(module)
        await module.main(tmp_path)
    finally:
        del sys.modules[spec.name]
    out = capsys.readouterr().out
    assert "turn 2  user: trouble with my boss again" in out
    assert "That sounds draining." in out
    assert "--- restart: a new runtime on the same database ---" in out
    assert "turn 4  user: do you remember what we talked about?" in out
    assert "[node respond:" in out and "[runtime persist:" in out
    assert "history: 8 entries" in out
    assert "session_progress: {'turn_count': 4}" in out
    assert "session_memory: {'summary': '4 turns; last topic: do you remember" in out
    assert "user: I miss my dog" in out.split("the model's prompt at turn 4")[1]
    assert (tmp_path / "companion.db").exists()
