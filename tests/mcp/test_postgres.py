"""``weft mcp --db postgresql://...``: the same tools on a thread in PostgreSQL (the real
server on 127.0.0.1:5432, database ``weft_test``, a schema of the test's own)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import psycopg
import pytest
from mcp_helpers import PG, client, payload, stdio

from weft.memory import AgentMemory
from weft.persist import DurableRun, PostgresBackend


@pytest.fixture
def schema() -> Iterator[str]:
    name = f"t_{uuid.uuid4().hex[:12]}"
    yield name
    with psycopg.connect(PG, autocommit=True) as conn:
        conn.execute(f'DROP SCHEMA IF EXISTS "{name}" CASCADE')


async def test_a_thread_in_postgres_is_served_and_written_durably(schema: str) -> None:
    with PostgresBackend(PG, schema=schema) as backend:
        run = DurableRun.open(backend, "notes")
        AgentMemory(run.store).set("task:research", ["alpha"], title="Findings")
        run.close()

    server = stdio("--db", PG, "--schema", schema, "--thread", "notes")
    async with client(server, "pg-client") as session:
        listed = payload(await session.call_tool("memory_list", {}))
        payload(await session.call_tool("memory_write", {"key": "verdict", "value": "go"}))
        refused = await session.call_tool("memory_write", {"key": "task:research", "value": 0})

    assert [entry["key"] for entry in listed["entries"]] == ["task:research"]
    assert refused.is_error
    with PostgresBackend(PG, schema=schema) as backend:  # what any later run of it loads
        run = DurableRun.open(backend, "notes")
        memory = AgentMemory(run.store)
        verdict = memory.get("shared:verdict")
        assert verdict is not None
        assert (verdict.value, verdict.source) == ("go", "mcp:pg-client")
        assert memory.get_value("task:research") == ["alpha"]
        run.close()
