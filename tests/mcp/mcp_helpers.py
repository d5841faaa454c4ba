"""Helpers for the MCP tests: ``weft mcp`` as a real subprocess, reached by the official MCP
Python client over stdio or streamable HTTP (a module of its own: ``conftest`` is ambiguous
across test folders)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mcp import Client, StdioServerParameters
from mcp_types import CallToolResult, Implementation, TextContent

from weft.memory import AgentMemory
from weft.persist import DurableRun, SQLiteBackend

PG = "postgresql://postgres@127.0.0.1:5432/weft_test"
WEFT = [sys.executable, "-m", "weft.cli"]
URL = re.compile(r"on (http://\S+/mcp)")


def seed_thread(path: Path, thread: str = "notes") -> Path:
    """A SQLite file whose thread holds a task result and an input, as a run leaves them."""
    with SQLiteBackend(path) as backend:
        run = DurableRun.open(backend, thread)
        memory = AgentMemory(run.store)
        memory.set("task:research", {"findings": ["otters hold hands"]}, title="Findings")
        memory.set("input:topic", "otters", source="caller")
        run.close()
    return path


def stdio(*args: str, cwd: Path | None = None) -> StdioServerParameters:
    """``weft mcp ARGS`` launched by the SDK's stdio client."""
    return StdioServerParameters(
        command=sys.executable,
        args=["-m", "weft.cli", "mcp", *args],
        cwd=cwd,
        env=dict(os.environ),
    )


def client(server: Any, name: str = "tester", *, mode: str = "auto") -> Client:
    """The official client, introducing itself as ``name``."""
    return Client(server, client_info=Implementation(name=name, version="1.0"), mode=mode)


def payload(result: CallToolResult) -> dict[str, Any]:
    """A tool result's JSON, checked to be the same in its text and its structured form."""
    [content] = result.content
    assert isinstance(content, TextContent)
    data: dict[str, Any] = json.loads(content.text)
    assert data == result.structured_content
    assert result.is_error is (not data["ok"])
    return data


@dataclass
class HttpServer:
    url: str
    process: subprocess.Popen[str]
    stderr: list[str] = field(default_factory=list)


@contextmanager
def http_server(*args: str, cwd: Path | None = None) -> Iterator[HttpServer]:
    """``weft mcp --transport http --port 0 ARGS`` in a subprocess, until the block ends;
    the URL is the one the server announces (so no port can be taken in between)."""
    process = subprocess.Popen(
        [*WEFT, "mcp", "--transport", "http", "--port", "0", *args],
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stderr is not None
    lines: list[str] = []
    found = threading.Event()

    def drain() -> None:
        assert process.stderr is not None
        for line in process.stderr:
            lines.append(line)
            if URL.search(line):
                found.set()

    drainer = threading.Thread(target=drain, daemon=True)
    drainer.start()
    deadline = time.monotonic() + 30
    while not found.wait(0.05):
        if process.poll() is not None or time.monotonic() > deadline:
            process.kill()
            process.wait()
            drainer.join(timeout=10)
            process.stderr.close()
            raise AssertionError(f"weft mcp did not start: {''.join(lines)}")
    match = next(URL.search(line) for line in lines if URL.search(line))
    assert match is not None
    server = HttpServer(match.group(1), process, lines)
    try:
        yield server
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        drainer.join(timeout=10)
        process.stderr.close()
    assert "Traceback" not in "".join(lines), "".join(lines)


def run_weft(*args: str, cwd: Path, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    """``weft ARGS`` to its end (for the start-up errors), with no standard input."""
    return subprocess.run(
        [*WEFT, *args],
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
