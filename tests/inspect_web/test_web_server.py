"""The real server (uvicorn) and the ``weft inspect`` command, over HTTP with httpx."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from web_harness import read_line, serving, start_scene, stop
from web_runs import ODD, THREADS

from weft.errors import ServeError
from weft.inspect.web import binding
from weft.persist import SQLiteBackend


def test_the_feed_says_when_a_run_in_another_process_writes(db: Path) -> None:
    writer = None
    with serving(db) as where, httpx.Client(timeout=10) as client:
        url = where.url() + "api/feed"
        with client.stream("GET", url) as stream:
            lines = stream.iter_lines()
            first = _next_threads_event(lines)
            with SQLiteBackend(db) as backend:
                stored = {t.thread_id: t.last_step for t in backend.threads()}
            assert first == stored
            assert set(first) == THREADS
            writer = start_scene("writer", str(db), "live", "2", "0.2")
            try:
                read_line(writer, timeout=20)  # "wrote 0": committed
                written = time.monotonic()
                moved = _next_threads_event(lines)
                seen = time.monotonic() - written
                assert moved["live"] >= 1
                assert seen < 2.0, f"the feed took {seen:.2f}s to see another process's write"
            finally:
                stop(writer)


def _next_threads_event(lines: object) -> dict[str, int]:
    event = None
    for line in lines:  # type: ignore[attr-defined]
        if line.startswith("event: "):
            event = line[7:]
        elif line.startswith("data: ") and event == "threads":
            found: dict[str, int] = json.loads(line[6:])
            return found
    raise AssertionError("the feed ended")


def test_a_bind_beyond_loopback_gets_a_token_and_asks_for_it(db: Path) -> None:
    where = binding("0.0.0.0", 0)
    assert where.token is not None and len(where.token) >= 20
    assert binding("127.0.0.1", 0).token is None
    assert binding("0.0.0.0", 0, token="chosen-token").token == "chosen-token"
    with serving(db, host="0.0.0.0", token=where.token) as live, httpx.Client(timeout=10) as c:
        base = f"http://127.0.0.1:{live.port}"
        refused = c.get(f"{base}/api/threads")
        assert refused.status_code == 401
        assert "token" in refused.json()["error"]
        assert c.get(f"{base}/api/threads", params={"token": where.token}).status_code == 200
        assert (
            c.get(f"{base}/api/feed", headers={"Authorization": "Bearer nope-nope"}).status_code
            == 401
        )


@pytest.mark.parametrize(
    ("host", "port", "token", "says"),
    [
        ("", 80, None, "host=''"),
        ("127.0.0.1", 70000, None, "port=70000"),
        ("0.0.0.0", 8765, "short", "at least 8"),
        ("no-such-host.invalid", 0, None, "cannot listen there"),
    ],
)
def test_a_bad_address_or_token_is_a_serve_error(
    host: str, port: int, token: str | None, says: str
) -> None:
    with pytest.raises(ServeError, match=re.escape(says)):
        binding(host, port, token)


def _weft(*args: str) -> list[str]:
    return [sys.executable, "-c", "from weft.cli.main import app; app()", *args]


def test_weft_inspect_serves_the_database_it_is_given(db: Path) -> None:
    process = subprocess.Popen(
        _weft("inspect", str(db), "--port", "0"),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    try:
        line = read_line(process, timeout=30)
        assert "read-only" in line
        url = line.rsplit(" ", 1)[-1]
        assert url.startswith("http://127.0.0.1:")
        deadline = time.monotonic() + 15
        while True:
            try:
                page = httpx.get(url, timeout=5)
                break
            except httpx.TransportError:
                assert time.monotonic() < deadline, f"nothing answered at {url}"
                time.sleep(0.1)
        assert page.status_code == 200
        assert "weft inspector" in page.text
        threads = httpx.get(url + "api/threads", timeout=5).json()["threads"]
        assert {t["thread_id"] for t in threads} == {
            "research",
            "research-fork",
            "review",
            ODD,
            "agent",
        }
    finally:
        stop(process)


def test_weft_inspect_of_a_missing_file_says_so(tmp_path: Path) -> None:
    done = subprocess.run(
        _weft("inspect", str(tmp_path / "none.db")),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2
    assert "no such SQLite file" in done.stderr
    assert not (tmp_path / "none.db").exists()
