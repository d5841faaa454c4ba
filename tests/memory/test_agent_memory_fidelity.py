"""AgentMemory's snapshot round trip (``restore``, ``set(created_at=...)``), its Markdown
rendering for prompts, and ``memory_read`` of a bare shared name."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest

from weft.errors import MemoryKeyError, ValueTypeError
from weft.memory import AgentMemory, MemoryEvent, memory_tools

EARLIER = datetime(2026, 5, 7, 14, 0, 1, 234000, tzinfo=UTC)


# ---------------------------------------------------------------- created_at


def test_set_takes_created_at_and_a_rewrite_keeps_it() -> None:
    memory = AgentMemory()
    entry = memory.set("task:research", {"findings": ["a"]}, created_at=EARLIER)
    assert entry.created_at == EARLIER
    again = memory.set("task:research", {"findings": ["b"]}, title="Findings")
    assert again.created_at == EARLIER
    assert again.updated_at > EARLIER
    assert memory.get("task:research").created_at == EARLIER  # type: ignore[union-attr]


@pytest.mark.parametrize("bad", [datetime(2026, 5, 7, 14, 0), 1700000000, "2026-05-07"])
def test_set_refuses_a_created_at_that_is_no_aware_datetime(bad: object) -> None:
    memory = AgentMemory()
    with pytest.raises(ValueTypeError, match="created_at"):
        memory.set("shared:x", 1, created_at=bad)  # type: ignore[arg-type]
    assert not memory.has("shared:x")


# ---------------------------------------------------------------- restore


def test_restore_loads_a_snapshot_into_a_live_memory() -> None:
    old = AgentMemory()
    old.set("task:research", ["alpha"], source="research", title="Findings", created_at=EARLIER)
    old.set("shared:top", "url", description="the best source")
    snapshot = old.snapshot()

    live = AgentMemory()
    live.set("task:research", ["stale"])
    live.set("input:topic", "forks")
    heard: list[MemoryEvent] = []
    live.subscribe(heard.append)
    live.restore(snapshot)

    assert live.get_value("task:research") == ["alpha"]  # overwritten
    assert live.get_value("input:topic") == "forks"  # left as it was
    restored = {e.key: e for e in live.list(keys=["task:research", "shared:top"])}
    for was in snapshot:
        now = restored[was.key]
        assert (now.created_at, now.title, now.description, now.source) == (
            was.created_at,
            was.title,
            was.description,
            was.source,
        )
    assert [(e.op, e.key) for e in heard] == [("set", "task:research"), ("set", "shared:top")]
    assert heard[0].entry is not None and heard[0].entry.created_at == EARLIER


def test_restore_refuses_what_is_not_an_entry_and_writes_nothing() -> None:
    old = AgentMemory()
    old.set("shared:a", 1)
    live = AgentMemory()
    with pytest.raises(MemoryKeyError, match=r"restore\(\) takes MemoryEntry"):
        live.restore([*old.snapshot(), {"key": "shared:b", "value": 2}])  # type: ignore[list-item]
    assert len(live) == 0


# ---------------------------------------------------------------- format_for_prompt


def test_format_for_prompt_renders_markdown_in_creation_order() -> None:
    memory = AgentMemory()
    memory.set("step:search", "plain text", title="Search")
    memory.set("task:research", {"findings": ["alpha"]}, description="Top sources.")
    memory.set("input:topic", "forks", created_at=EARLIER)  # written last, created first
    text = memory.format_for_prompt()
    assert text == "\n".join(
        [
            "# Memory (results of earlier steps and tasks, inputs, shared facts)",
            "",
            "## [input] input:topic",
            "```",
            "forks",
            "```",
            "",
            "## [step_result] Search (step:search)",
            "```",
            "plain text",
            "```",
            "",
            "## [task_result] task:research",
            "Top sources.",
            "```json",
            json.dumps({"findings": ["alpha"]}, indent=2),
            "```",
        ]
    )


def test_format_for_prompt_takes_the_list_filters_and_is_empty_when_none_match() -> None:
    memory = AgentMemory()
    memory.set("step:a", 1)
    memory.set("task:t", 2)
    assert "step:a" not in memory.format_for_prompt(kind="task_result")
    assert "task:t" in memory.format_for_prompt(key_prefix="task:")
    assert memory.format_for_prompt(sources=["nobody"]) == ""


def test_format_for_prompt_keeps_a_value_fence_unbroken() -> None:
    memory = AgentMemory()
    memory.set("shared:code", "```python\nprint(1)\n```")
    text = memory.format_for_prompt()
    assert "````\n```python\nprint(1)\n```\n````" in text


def test_format_for_prompt_orders_ties_by_write() -> None:
    memory = AgentMemory()
    memory.set("shared:b", 1, created_at=EARLIER)
    memory.set("shared:a", 2, created_at=EARLIER)
    memory.set("shared:c", 3, created_at=EARLIER - timedelta(seconds=1))
    text = memory.format_for_prompt()
    assert text.index("shared:c") < text.index("shared:b") < text.index("shared:a")


# ---------------------------------------------------------------- memory_read


def test_memory_read_of_a_bare_shared_name_reads_it_and_says_which_key() -> None:
    memory = AgentMemory()
    memory.set("shared:top_source", "https://example.com", title="Top source")
    _, read, _ = memory_tools(memory)
    result = read({"keys": ["top_source", "task:none"]})
    assert result["ok"] is True
    assert result["entries"]["shared:top_source"]["value"] == "https://example.com"
    assert result["resolved_keys"] == {"top_source": "shared:top_source"}
    assert result["missing"] == ["task:none"]
    assert "top_source" not in result["missing"]


def test_memory_read_of_a_bare_name_nothing_holds_is_missing_with_a_note() -> None:
    memory = AgentMemory()
    _, read, _ = memory_tools(memory)
    result = read({"keys": ["nothing_here"]})
    assert result["missing"] == ["nothing_here"] and result["entries"] == {}
    assert "resolved_keys" not in result
    assert "not memory keys: nothing_here" in result["note"]
