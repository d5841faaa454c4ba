"""``weft mcp --transport http``: a real server process reached by the official MCP client
over streamable HTTP. One server serves the module (clients are cheap, processes are not);
the durability tests start their own."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest
from mcp_cases import BAD_CALLS, REFUSED_KEYS
from mcp_helpers import HttpServer, client, http_server, payload, seed_thread

from weft.memory import AgentMemory, memory_tools
from weft.persist import DurableRun, SQLiteBackend


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HttpServer]:
    db = seed_thread(tmp_path_factory.mktemp("http") / "weft.db")
    with http_server("--db", str(db), "--thread", "notes") as running:
        yield running


def test_it_listens_on_loopback_by_default(server: HttpServer) -> None:
    assert server.url.startswith("http://127.0.0.1:")
    assert server.url.endswith("/mcp")


async def test_the_tools_keep_weft_s_descriptions_and_schemas(server: HttpServer) -> None:
    async with client(server.url) as session:
        listed = (await session.list_tools()).tools
    expected = memory_tools(AgentMemory())
    assert [(t.name, t.description, t.input_schema) for t in listed] == [
        (t.name, t.description, t.parameters) for t in expected
    ]


async def test_clients_read_and_write_and_each_is_recorded_by_its_name(
    server: HttpServer,
) -> None:
    async with client(server.url, "planner") as planner, client(server.url, "coder") as coder:
        await asyncio.gather(
            planner.call_tool("memory_write", {"key": "http_plan", "value": ["a", "b"]}),
            coder.call_tool("memory_write", {"key": "http_patch", "value": "diff"}),
        )
        seen = payload(await coder.call_tool("memory_read", {"keys": ["http_plan", "http_patch"]}))
        by_coder = payload(await planner.call_tool("memory_list", {"sources": ["mcp:coder"]}))
    async with client(server.url, "reviewer", mode="legacy") as reviewer:  # initialize era
        payload(await reviewer.call_tool("memory_write", {"key": "http_review", "value": "ok"}))
        review = payload(await reviewer.call_tool("memory_read", {"keys": ["http_review"]}))

    entries = seen["entries"]
    assert entries["shared:http_plan"]["value"] == ["a", "b"]
    assert entries["shared:http_plan"]["source"] == "mcp:planner"
    assert entries["shared:http_patch"]["source"] == "mcp:coder"
    assert [e["key"] for e in by_coder["entries"]] == ["shared:http_patch"]
    assert review["entries"]["shared:http_review"]["source"] == "mcp:reviewer"


@pytest.mark.parametrize("key", REFUSED_KEYS)
async def test_only_shared_can_be_written(server: HttpServer, key: str) -> None:
    async with client(server.url) as session:
        result = await session.call_tool("memory_write", {"key": key, "value": "x"})
        topic = payload(await session.call_tool("memory_read", {"keys": ["input:topic"]}))
    assert result.is_error
    assert "nothing was written" in payload(result)["error"]
    assert topic["entries"]["input:topic"]["value"] == "otters"


@pytest.mark.parametrize(("tool", "arguments", "says"), BAD_CALLS)
async def test_bad_arguments_get_the_tool_s_readable_error(
    server: HttpServer, tool: str, arguments: dict[str, object], says: str
) -> None:
    async with client(server.url) as session:
        result = await session.call_tool(tool, arguments)
    assert result.is_error
    assert says in payload(result)["error"]


async def test_entries_are_resources_too(server: HttpServer) -> None:
    from mcp import MCPError

    async with client(server.url) as session:
        resources = {r.name: r for r in (await session.list_resources()).resources}
        [content] = (await session.read_resource(resources["task:research"].uri)).contents
        with pytest.raises(MCPError, match="memory holds no entry 'shared:nothing'"):
            await session.read_resource("weft-memory:///shared:nothing")
    assert resources["task:research"].title == "Findings"
    assert resources["task:research"].mime_type == "application/json"
    assert '"otters hold hands"' in getattr(content, "text", "")


async def test_two_servers_on_one_file_see_each_other_and_lose_nothing(
    tmp_path: Path,
) -> None:
    db = str(seed_thread(tmp_path / "weft.db"))
    with (
        http_server("--db", db, "--thread", "notes") as a,
        http_server("--db", db, "--thread", "notes") as b,
    ):
        async with client(a.url, "alice") as alice, client(b.url, "bob") as bob:
            payload(await alice.call_tool("memory_write", {"key": "n", "value": 1}))
            seen_by_bob = payload(await bob.call_tool("memory_read", {"keys": ["n"]}))
            payload(await bob.call_tool("memory_write", {"key": "n", "value": 2}))
            payload(await bob.call_tool("memory_write", {"key": "m", "value": "bob's"}))
            seen_by_alice = payload(await alice.call_tool("memory_read", {"keys": ["n", "m"]}))
            payload(await alice.call_tool("memory_write", {"key": "k", "value": "alice's"}))
    with SQLiteBackend(db) as backend:  # both servers stopped: what the thread holds
        run = DurableRun.open(backend, "notes")
        after = AgentMemory(run.store).list(kind="shared")
        run.close()

    assert seen_by_bob["entries"]["shared:n"]["value"] == 1
    assert seen_by_alice["entries"]["shared:n"]["value"] == 2
    assert seen_by_alice["entries"]["shared:n"]["source"] == "mcp:bob"
    assert seen_by_alice["entries"]["shared:m"]["value"] == "bob's"
    sources = {entry.key: entry.source for entry in after}
    assert sources == {"shared:n": "mcp:bob", "shared:m": "mcp:bob", "shared:k": "mcp:alice"}


@pytest.mark.parametrize(
    ("header", "status"),
    [({"Host": "evil.example"}, 421), ({"Origin": "http://evil.example"}, 403)],
)
def test_a_page_of_another_site_cannot_reach_it(
    server: HttpServer, header: dict[str, str], status: int
) -> None:
    """DNS-rebinding protection: a request naming another host or origin is refused."""
    import httpx

    ping = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
    accept = {"Accept": "application/json, text/event-stream"}
    response = httpx.post(server.url, json=ping, headers={**accept, **header}, timeout=10)
    assert response.status_code == status
