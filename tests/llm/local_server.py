"""A real HTTP server on 127.0.0.1 that answers each request with the next scripted reply.

Used where the socket matters: retries on real statuses, read timeouts, refused connections,
streams sent in chunks that split lines, and connections dropped in the middle of a stream.
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

FIXTURES = Path(__file__).parent / "fixtures"


@dataclass
class Reply:
    """One scripted answer: a status, headers, and a body sent whole or in chunks."""

    status: int = 200
    body: bytes = b""
    headers: dict[str, str] = field(default_factory=dict)
    chunk: int | None = None  # send the body chunked, this many bytes at a time
    delay: float = 0.0  # wait this long before answering
    drop_after: int | None = None  # close the connection after this many body bytes


def json_reply(status: int, body: Any, headers: dict[str, str] | None = None) -> Reply:
    return Reply(
        status, json.dumps(body).encode(), {"content-type": "application/json", **(headers or {})}
    )


def sse_reply(name: str, *, chunk: int = 64, crlf: bool = False, **kwargs: Any) -> Reply:
    """A recorded stream from tests/llm/fixtures, chunked so that lines are split."""
    text = (FIXTURES / name).read_text()
    if crlf:
        text = text.replace("\n", "\r\n")
    headers = {"content-type": "text/event-stream; charset=utf-8"}
    return Reply(200, text.encode(), headers, chunk=chunk, **kwargs)


@dataclass
class Seen:
    path: str
    headers: dict[str, str]
    body: Any


class _Quiet(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # a client that timed out and hung up is what some tests do on purpose


class LocalServer:
    """``with LocalServer(reply, ...) as server:`` then point a model at ``server.url``."""

    def __init__(self, *replies: Reply) -> None:
        self.replies = list(replies)
        self.requests: list[Seen] = []
        self._lock = threading.Lock()
        self._server = _Quiet(("127.0.0.1", 0), self._handler())
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def __enter__(self) -> LocalServer:
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(5)

    def _next(self, seen: Seen) -> Reply:
        with self._lock:
            self.requests.append(seen)
            if not self.replies:
                return json_reply(500, {"error": {"message": "no reply scripted"}})
            return self.replies.pop(0)

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(length)
                headers = {key.lower(): value for key, value in self.headers.items()}
                reply = server._next(Seen(self.path, headers, json.loads(raw or b"null")))
                if reply.delay:
                    time.sleep(reply.delay)
                self.send_response(reply.status)
                for key, value in reply.headers.items():
                    self.send_header(key, value)
                body = reply.body
                if reply.drop_after is not None:
                    body = body[: reply.drop_after]
                if reply.chunk is None:
                    self.send_header("content-length", str(len(reply.body)))
                    self.end_headers()
                    self.wfile.write(body)
                else:
                    self.send_header("transfer-encoding", "chunked")
                    self.end_headers()
                    for start in range(0, len(body), reply.chunk):
                        part = body[start : start + reply.chunk]
                        self.wfile.write(b"%x\r\n%s\r\n" % (len(part), part))
                        self.wfile.flush()
                    if reply.drop_after is None:
                        self.wfile.write(b"0\r\n\r\n")
                if reply.drop_after is not None:
                    self.close_connection = True
                self.wfile.flush()

        return Handler


def closed_port() -> str:
    """The URL of a port on 127.0.0.1 where nothing listens (connections are refused)."""
    probe = ThreadingHTTPServer(("127.0.0.1", 0), BaseHTTPRequestHandler)
    host, port = probe.server_address[:2]
    probe.server_close()
    return f"http://{host!s}:{port}"
