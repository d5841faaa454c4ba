"""``weft mcp`` over stdio, spawned and driven by the official MCP Python client.

Each server here is a real process (the SDK's import alone takes a second or more), so a
test covers one session's worth of behaviour; the HTTP tests share one server instead."""

from __future__ import annotations

from pathlib import Path

import pytest
from mcp_cases import BAD_CALLS, REFUSED_KEYS
from mcp_helpers import client, payload, seed_thread, stdio

from weft.memory import AgentMemory, memory_tools
from weft.persist import DurableRun, SQLiteBackend


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return seed_thread(tmp_path / "weft.db")


async def test_a_client_sees_the_tools_and_lists_reads_writes_the_thread(db: Path) -> None:
    expected = memory_tools(AgentMemory())
    async with client(stdio("--db", str(db), "--thread", "notes"), "researcher") as session:
        listed = {tool.name: tool for tool in (await session.list_tools()).tools}
        before = payload(await session.call_tool("memory_list", {}))
        read = payload(await session.call_tool("memory_read", {"keys": ["task:research"]}))
        written = payload(
            await session.call_tool(
                "memory_write", {"key": "top_source", "value": {"url": "x"}, "title": "Best"}
            )
        )
        again = payload(await session.call_tool("memory_read", {"keys": ["top_source"]}))
        shared = payload(await session.call_tool("memory_list", {"kind": "shared"}))

    assert list(listed) == ["memory_list", "memory_read", "memory_write"]
    for tool in expected:  # exactly what weft gives a model
        assert listed[tool.name].description == tool.description
        assert listed[tool.name].input_schema == tool.parameters
    assert {entry["key"] for entry in before["entries"]} == {"task:research", "input:topic"}
    assert all("value" not in entry for entry in before["entries"])
    assert read["entries"]["task:research"]["value"] == {"findings": ["otters hold hands"]}
    assert written["key"] == "shared:top_source"
    entry = again["entries"]["shared:top_source"]
    assert (entry["value"], entry["title"]) == ({"url": "x"}, "Best")
    assert entry["source"] == "mcp:researcher"
    assert [e["key"] for e in shared["entries"]] == ["shared:top_source"]


async def test_only_shared_can_be_written_and_bad_arguments_are_explained(db: Path) -> None:
    async with client(stdio("--db", str(db), "--thread", "notes")) as session:
        refused = [
            await session.call_tool("memory_write", {"key": k, "value": 1}) for k in REFUSED_KEYS
        ]
        bad = [await session.call_tool(tool, arguments) for tool, arguments, _ in BAD_CALLS]
        after = payload(await session.call_tool("memory_list", {}))
        topic = payload(await session.call_tool("memory_read", {"keys": ["input:topic"]}))

    for key, result in zip(REFUSED_KEYS, refused, strict=True):
        assert result.is_error
        error = payload(result)["error"]
        assert f"names the {key.partition(':')[0]}: namespace" in error
        assert "nothing was written" in error
    for (_, _, says), result in zip(BAD_CALLS, bad, strict=True):
        assert result.is_error
        assert says in payload(result)["error"]
    assert len(after["entries"]) == 2  # nothing was written, input:topic is unchanged
    assert topic["entries"]["input:topic"]["value"] == "otters"


async def test_writes_outlive_the_server_and_reach_any_run_of_the_thread(tmp_path: Path) -> None:
    db = str(tmp_path / "new" / "weft.db")  # --create: a new file and thread
    async with client(stdio("--db", db, "--thread", "fresh", "--create"), "first") as session:
        empty = payload(await session.call_tool("memory_list", {}))
        payload(await session.call_tool("memory_write", {"key": "decision", "value": [1, 2]}))
    async with client(stdio("--db", db, "--thread", "fresh"), "second", mode="legacy") as s:
        read = payload(await s.call_tool("memory_read", {"keys": ["shared:decision"]}))
        payload(await s.call_tool("memory_write", {"key": "decision", "value": [3]}))
    assert empty["entries"] == []
    assert read["entries"]["shared:decision"]["value"] == [1, 2]
    assert read["entries"]["shared:decision"]["source"] == "mcp:first"
    with SQLiteBackend(db) as backend:
        run = DurableRun.open(backend, "fresh")
        entry = AgentMemory(run.store).get("shared:decision")
        run.close()
    assert entry is not None
    assert (entry.value, entry.source) == ([3], "mcp:second")  # named in initialize
    assert entry.created_at < entry.updated_at  # a rewrite keeps when it was created
