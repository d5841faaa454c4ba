"""The prompt text: the memory-tools section and the upstream-key hint (keys, never values)."""

from __future__ import annotations

import pytest

from weft.errors import MemoryKeyError
from weft.memory import AgentMemory, memory_tools_prompt_section, upstream_memory_hint


def test_prompt_section_explains_progressive_disclosure() -> None:
    section = memory_tools_prompt_section()
    assert section.startswith("## Memory Tools (progressive disclosure)")
    for word in ("memory_list", "memory_read", "memory_write", "shared:", "step:", "task:"):
        assert word in section
    assert "None of it is in this prompt" in section


def test_hint_names_keys_with_titles_and_never_values() -> None:
    memory = AgentMemory()
    memory.set("task:research", "SECRET-FINDINGS-42", title="Research findings")
    memory.set("step:plain", "ANOTHER-VALUE")
    hint = upstream_memory_hint(["task:research", "step:plain", "step:later"], memory)
    assert hint.splitlines() == [
        "# Required upstream memory (call `memory_read` with these keys):",
        "- task:research — Research findings",
        "- step:plain",
        "- step:later",
    ]
    assert "SECRET-FINDINGS-42" not in hint
    assert "ANOTHER-VALUE" not in hint


def test_hint_without_memory_lists_keys_once() -> None:
    hint = upstream_memory_hint(["task:a", "task:a", "task:b"])
    assert hint.splitlines()[1:] == ["- task:a", "- task:b"]


def test_hint_keeps_a_title_on_one_line() -> None:
    memory = AgentMemory()
    memory.set("task:a", 1, title="two\nlines")
    assert upstream_memory_hint(["task:a"], memory).splitlines()[1] == "- task:a — two lines"


def test_no_keys_no_hint() -> None:
    assert upstream_memory_hint([]) == ""


def test_hint_refuses_a_malformed_key() -> None:
    with pytest.raises(MemoryKeyError, match="research"):
        upstream_memory_hint(["research"])
