"""``build_server`` mounted in-process (the SDK's own in-memory transport): what is cheaper to
check without a process, such as paging through many resources."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from mcp import MCPError
from mcp_helpers import client, payload

from weft.mcp import ThreadMemory, build_server


@pytest.fixture
def memory(tmp_path: Path) -> Iterator[ThreadMemory]:
    opened = ThreadMemory.open(tmp_path / "weft.db", "big", create=True)
    for number in range(250):
        opened.call("memory_write", {"key": f"fact_{number:03}", "value": number}, source="code")
    yield opened
    opened.close()


async def test_resources_come_in_pages_of_200(memory: ThreadMemory) -> None:
    async with client(build_server(memory), "pager") as session:
        first = await session.list_resources()
        assert first.next_cursor is not None
        second = await session.list_resources(cursor=first.next_cursor)
        with pytest.raises(MCPError, match="pass back the nextCursor"):
            await session.list_resources(cursor="page-two")
        written = payload(await session.call_tool("memory_write", {"key": "k", "value": 1}))
    names = [r.name for r in first.resources] + [r.name for r in second.resources]
    assert len(first.resources) == 200
    assert second.next_cursor is None
    assert names == [f"shared:fact_{number:03}" for number in range(250)]
    assert written["ok"]


async def test_a_resource_outside_memory_is_refused(memory: ThreadMemory) -> None:
    async with client(build_server(memory)) as session:
        with pytest.raises(MCPError, match="this server's resources are weft-memory:///"):
            await session.read_resource("file:///etc/passwd")
