"""The inspector over PostgreSQL: the same API, on runs another connection wrote."""

from __future__ import annotations

from fastapi.testclient import TestClient
from web_harness import PG, postgres_schema
from web_runs import review_graph

from weft.graph import Paused
from weft.inspect import Reader
from weft.inspect.web.app import create_app
from weft.memory import AgentMemory
from weft.persist import DurableRun, PostgresBackend


def test_the_inspector_reads_and_answers_runs_stored_in_postgresql() -> None:
    with (
        postgres_schema() as schema,
        PostgresBackend(PG, schema=schema, timeout=5) as writer,
        PostgresBackend(PG, schema=schema, timeout=5) as inspected,
    ):
        run = DurableRun.open(writer, "pg-review", run_id="pg-1")
        AgentMemory(run.store).set("shared:brief", "short", source="editor", title="Brief")
        graph = review_graph()
        paused = run.run_graph(graph, {"notes": "pg works"})
        assert isinstance(paused, Paused)
        app = create_app(Reader(inspected), allow_writes=True)
        with TestClient(app, base_url="http://127.0.0.1") as client:
            threads = client.get("/api/threads").json()["threads"]
            assert [t["thread_id"] for t in threads] == ["pg-review"]
            (brief,) = client.get("/api/threads/pg-review/memory").json()["kinds"]["shared"]
            assert (brief["title"], brief["source"]) == ("Brief", "editor")
            (question,) = client.get("/api/threads/pg-review/pauses").json()["pauses"]
            sent = client.post(
                "/api/threads/pg-review/answer", json={"id": question["id"], "answer": "yes"}
            )
            assert sent.status_code == 200, sent.text
            run.reload()
            assert run.run_graph(graph, {"notes": "pg works"}) == "published: Summary: pg works"
            (done,) = client.get("/api/threads/pg-review/runs").json()["runs"]
            assert done["status"] == "completed"
            assert {n["status"] for n in done["nodes"]} == {"finished"}
