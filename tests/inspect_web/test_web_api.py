"""The inspector's JSON API over a database written by real runs (FastAPI's TestClient)."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

import pytest
from fastapi.testclient import TestClient
from web_runs import HOSTILE, ODD, THREADS

from weft.inspect import Reader
from weft.inspect.web.app import _feed, create_app
from weft.persist import SQLiteBackend
from weft.store.records import Pause, RunRecord

BASE = "http://127.0.0.1"
QUESTION = "review-1/review#1/pauses/0"


@pytest.fixture
def backend(db: Path) -> Iterator[SQLiteBackend]:
    with SQLiteBackend(db) as opened:
        yield opened


@pytest.fixture
def client(backend: SQLiteBackend) -> Iterator[TestClient]:
    with TestClient(create_app(Reader(backend)), base_url=BASE) as opened:
        yield opened


@pytest.fixture
def writer(backend: SQLiteBackend) -> Iterator[TestClient]:
    with TestClient(create_app(Reader(backend), allow_writes=True), base_url=BASE) as opened:
        yield opened


def test_threads_lists_every_thread_with_its_forks(client: TestClient) -> None:
    rows = {t["thread_id"]: t for t in client.get("/api/threads").json()["threads"]}
    assert set(rows) == THREADS
    assert rows["research"]["forks"] == [{"thread_id": "research-fork", "step": 7}]
    assert rows["research-fork"]["parent_thread"] == "research"
    assert rows["research-fork"]["parent_step"] == 7
    assert rows["research"]["last_step"] == 8


def test_runs_show_each_node_with_status_and_timing(client: TestClient) -> None:
    done = client.get("/api/threads/research/runs").json()["runs"]
    assert [r["run_id"] for r in done] == ["research-1"]
    assert done[0]["status"] == "completed"
    nodes = done[0]["nodes"]
    assert [(n["label"], n["status"]) for n in nodes] == [
        ("research", "finished"),
        ("summarise", "finished"),
    ]
    assert all(n["duration_ms"] is not None and n["started_at"] for n in nodes)
    waiting = client.get("/api/threads/review/runs").json()["runs"][0]
    assert waiting["status"] == "paused"
    assert [(n["unit"], n["status"]) for n in waiting["nodes"]] == [
        ("summarise#0", "finished"),
        ("review#1", "waiting"),
        ("publish#2", "pending"),
    ]


def test_an_agents_run_shows_its_iterations_and_the_units_inside_them(
    client: TestClient,
) -> None:
    (run,) = client.get("/api/threads/agent/runs").json()["runs"]
    assert (run["run_id"], run["kind"], run["status"]) == ("job-1", "agent", "completed")
    assert [(n["unit"], n["label"], n["depth"]) for n in run["nodes"]] == [
        ("iter/0", "agent", 0),
        ("iter/0/reply", "reply", 1),
        ("iter/0/action/0", "Search", 1),
        ("iter/1", "agent", 0),
        ("iter/1/reply", "reply", 1),
    ]
    assert {n["status"] for n in run["nodes"]} == {"finished"}


def test_timeline_lists_the_stored_events_after_a_step(client: TestClient) -> None:
    whole = client.get("/api/threads/research/timeline").json()
    assert [e["step"] for e in whole["events"]] == list(range(1, 9))
    assert whole["events"][0]["key"] == "input:topic"
    assert whole["events"][0]["source"] == "user"
    assert whole["events"][1]["record"] == "StepRecord"
    window = client.get("/api/threads/research/timeline", params={"since": 2, "limit": 3})
    assert [e["step"] for e in window.json()["events"]] == [3, 4, 5]
    tail = client.get("/api/threads/research/timeline", params={"since": 6}).json()
    assert [(e["step"], e["key"], e["preview"]) for e in tail["events"]] == [
        (7, "state:plan", '"A"'),
        (8, "state:plan", '"B"'),
    ]


def test_state_at_a_step_and_its_diff(client: TestClient) -> None:
    at7 = client.get("/api/threads/research/state", params={"at": 7, "prefix": "state:"})
    assert at7.status_code == 200, at7.text
    assert [(e["key"], e["value"]) for e in at7.json()["entries"]] == [("state:plan", "A")]
    now = client.get("/api/threads/research/state", params={"prefix": "state:"}).json()
    assert now["step"] == 8
    assert [(e["key"], e["value"]) for e in now["entries"]] == [("state:plan", "B")]
    diff = client.get("/api/threads/research/diff", params={"at": 8}).json()
    assert [(c["key"], c["change"], c["before"], c["after"]) for c in diff["changes"]] == [
        ("state:plan", "changed", "A", "B")
    ]
    added = client.get("/api/threads/research/diff", params={"at": 7}).json()["changes"]
    assert [(c["key"], c["change"]) for c in added] == [("state:plan", "added")]


def test_memory_groups_entries_by_kind_with_title_description_source_and_size(
    client: TestClient,
) -> None:
    kinds = client.get("/api/threads/research/memory").json()["kinds"]
    assert kinds["step_result"] == []  # the runs' own records are not memory
    (finding,) = kinds["shared"]
    assert finding["key"] == "shared:finding"
    assert finding["title"] == "Key finding"
    assert finding["description"] == "What the research node found about otters"
    assert finding["source"] == "researcher"
    value = {"fact": "otters hold hands"}
    assert finding["value"] == value
    assert finding["value_bytes"] == len(json.dumps(value, separators=(",", ":")).encode())
    assert [e["key"] for e in kinds["task_result"]] == ["task:report"]
    assert [e["key"] for e in kinds["input"]] == ["input:topic"]


def test_pauses_list_the_question_waiting(client: TestClient) -> None:
    (pause,) = client.get("/api/threads/review/pauses").json()["pauses"]
    assert pause["id"] == QUESTION
    assert pause["question"] == {"approve?": "Summary: beavers build dams"}
    assert pause["answered"] is False


def test_an_unknown_thread_is_404_naming_the_threads_there(client: TestClient) -> None:
    response = client.get("/api/threads/nope/memory")
    assert response.status_code == 404
    assert "'nope'" in response.json()["error"]
    assert "'research'" in response.json()["error"]


def test_a_step_past_the_end_is_404_naming_the_steps_there(client: TestClient) -> None:
    response = client.get("/api/threads/research/state", params={"at": 99})
    assert response.status_code == 404
    assert "no step 99: its steps go from 0 to 8" in response.json()["error"]


def test_read_only_refuses_answers_and_forks_and_writes_nothing(
    client: TestClient, backend: SQLiteBackend
) -> None:
    before = backend.last_step("review")
    answer = client.post("/api/threads/review/answer", json={"id": QUESTION, "answer": "yes"})
    fork = client.post("/api/threads/research/fork", json={"step": 3})
    assert (answer.status_code, fork.status_code) == (403, 403)
    assert "--allow-writes" in answer.json()["error"]
    assert backend.last_step("review") == before
    assert len(backend.threads()) == 5


def test_an_answer_is_recorded_on_the_pause_and_the_run(
    writer: TestClient, backend: SQLiteBackend
) -> None:
    response = writer.post("/api/threads/review/answer", json={"id": QUESTION, "answer": "yes"})
    assert response.status_code == 200, response.text
    store = backend.load("review").to_store()
    pause = store.value("step", QUESTION)
    assert isinstance(pause, Pause)
    assert (pause.answered, pause.answer) == (True, "yes")
    run = store.value("step", "review-1")
    assert isinstance(run, RunRecord)
    assert run.status == "running"
    again = writer.post("/api/threads/review/answer", json={"id": QUESTION, "answer": "no"})
    assert again.status_code == 400
    assert "answered already" in again.json()["error"]


def test_an_answer_to_no_question_names_those_waiting(writer: TestClient) -> None:
    response = writer.post("/api/threads/review/answer", json={"id": "x/y", "answer": 1})
    assert response.status_code == 400
    assert QUESTION in response.json()["error"]
    shapeless = writer.post("/api/threads/review/answer", json=["yes"])
    assert shapeless.status_code == 400
    assert '"id"' in shapeless.json()["error"]


def test_a_write_that_is_not_json_or_from_another_origin_is_refused(writer: TestClient) -> None:
    form = writer.post(
        "/api/threads/review/answer",
        content=f"id={QUESTION}&answer=yes",
        headers={"Content-Type": "application/x-www-form-urlencoded"},
    )
    assert form.status_code == 403
    assert "application/json" in form.json()["error"]
    foreign = writer.post(
        "/api/threads/review/answer",
        json={"id": QUESTION, "answer": "yes"},
        headers={"Origin": "http://evil.example"},
    )
    assert foreign.status_code == 403


def test_a_fork_starts_a_new_thread_at_the_step_given(
    writer: TestClient, backend: SQLiteBackend
) -> None:
    made = writer.post("/api/threads/research/fork", json={"step": 7}).json()
    info = backend.thread(made["thread_id"])
    assert info is not None
    assert (info.parent_thread, info.parent_step) == ("research", 7)
    assert backend.load(made["thread_id"]).to_store().value("state", "plan") == "A"
    past = writer.post("/api/threads/research/fork", json={"step": 99})
    assert past.status_code == 404
    assert "no step 99" in past.json()["error"]
    shapeless = writer.post("/api/threads/research/fork", json={"step": "7"})
    assert shapeless.status_code == 400


def test_a_host_that_is_not_loopback_is_refused_on_a_loopback_bind(client: TestClient) -> None:
    response = client.get("/api/threads", headers={"Host": "attacker.example:8765"})
    assert response.status_code == 403
    assert "loopback" in response.json()["error"]


def test_a_token_is_asked_for_by_header_query_or_cookie(backend: SQLiteBackend) -> None:
    app = create_app(Reader(backend), token="s3cret-token", loopback=False)
    with TestClient(app, base_url="http://inspector.example") as client:
        assert client.get("/api/threads").status_code == 401
        assert client.get("/api/threads", params={"token": "wrong-one"}).status_code == 401
        bearer = {"Authorization": "Bearer s3cret-token"}
        assert client.get("/api/threads", headers=bearer).status_code == 200
        page = client.get("/", params={"token": "s3cret-token"})
        assert page.status_code == 200
        assert client.get("/api/threads").status_code == 200  # the cookie it set


def test_the_page_and_its_assets_are_served_from_the_package(client: TestClient) -> None:
    page = client.get("/")
    assert page.status_code == 200
    assert '<script src="/static/app.js">' in page.text
    assert "http" not in page.text.replace("http-equiv", "")  # nothing from the internet
    for asset in ("app.js", "style.css"):
        response = client.get(f"/static/{asset}")
        assert response.status_code == 200
        assert "https://" not in response.text


def test_a_thread_id_with_a_slash_and_a_hash_is_one_path_parameter(client: TestClient) -> None:
    where = f"/api/threads/{quote(ODD, safe='')}"
    (entry,) = client.get(f"{where}/memory").json()["kinds"]["shared"]
    assert (entry["key"], entry["title"]) == ("shared:odd", HOSTILE)
    state = client.get(f"{where}/state", params={"prefix": "state:"}).json()
    assert [e["key"] for e in state["entries"]] == ["state:note"]


def test_a_malformed_request_is_400_saying_what_was_wrong(client: TestClient) -> None:
    response = client.get("/api/threads/research/timeline", params={"since": -1})
    assert response.status_code == 400
    assert "since" in response.json()["error"]
    assert "greater than or equal to 0" in response.json()["error"]


async def test_the_feed_says_when_the_database_cannot_be_read_and_goes_on(db: Path) -> None:
    class Open:  # a client that stays connected
        async def is_disconnected(self) -> bool:
            return False

    backend = SQLiteBackend(db)
    stopping = threading.Event()
    feed = _feed(Open(), backend, 0.01, stopping)  # type: ignore[arg-type]
    assert await anext(feed) == "retry: 1000\n\n"
    assert (await anext(feed)).startswith("event: threads\n")
    backend.close()
    problem = await anext(feed)
    assert problem.startswith("event: problem\n")
    assert "closed" in json.loads(problem.split("data: ", 1)[1])["error"]
    stopping.set()
    with pytest.raises(StopAsyncIteration):
        await anext(feed)
