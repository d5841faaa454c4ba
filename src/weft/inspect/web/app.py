"""The web inspector's FastAPI app: the page, its JSON API and the live feed.

This module imports FastAPI (the ``inspect`` extra); ``weft.inspect.web.server`` imports
it only when a server is made.

``create_app(reader, allow_writes=..., token=...)`` builds it over one ``Reader``. The page
(``static/``: plain HTML, CSS and JavaScript, nothing fetched from the internet) reads
the API below and follows ``/api/feed``, a stream of server-sent events that says which
threads moved; the feed polls the durable log's last steps, so runs in other processes
show up within ``poll`` seconds.

Who may do what:

- Read-only unless ``allow_writes``: answering a pause and forking a thread are refused
  with 403 otherwise.
- With a ``token`` (the server requires one when bound to anything but loopback), every
  request must carry it: ``Authorization: Bearer <token>``, the ``weft_inspect`` cookie, or
  ``?token=<token>`` on the page's URL, which sets the cookie. Else 401.
- Writes must be JSON (``Content-Type: application/json``, which a cross-site form cannot
  send without the browser asking first) and, when the browser says where the request
  comes from (``Origin``), come from the inspector's own page. Else 403.
- On a loopback bind the ``Host`` header must name a loopback host, so a web page cannot
  reach the inspector through a DNS name of its own (DNS rebinding). Else 403.
"""

from __future__ import annotations

import asyncio
import html
import json
import secrets
import socket
import threading
from collections.abc import AsyncIterator, Awaitable, Callable
from importlib import resources
from typing import TYPE_CHECKING, Annotated, Any, Final
from urllib.parse import urlsplit

import uvicorn
from fastapi import Body, FastAPI, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import HTMLResponse, JSONResponse, StreamingResponse
from fastapi.staticfiles import StaticFiles
from starlette.responses import Response

from weft.errors import PauseError, PersistError, ServeError, StepError, WeftError
from weft.inspect.web import views

if TYPE_CHECKING:
    from weft.inspect.reader import Reader
    from weft.persist import Backend

COOKIE: Final = "weft_inspect"
LOOPBACK_NAMES: Final = frozenset({"127.0.0.1", "localhost", "::1", "[::1]"})
POLL: Final = 0.25
"""Seconds between two looks at the durable log's last steps (the live feed)."""
_REFUSAL_PAGE: Final = (
    '<!doctype html><html lang="en"><head><meta charset="utf-8"><title>weft inspector</title>'
    '</head><body><h1>weft inspector</h1><p id="error">{message}</p></body></html>'
)
KEEPALIVE: Final = 15.0
"""Seconds of silence after which the feed sends a comment, so proxies keep it open."""


def create_app(
    reader: Reader,
    *,
    allow_writes: bool = False,
    token: str | None = None,
    loopback: bool = True,
    poll: float = POLL,
    stopping: threading.Event | None = None,
) -> FastAPI:
    """The inspector over ``reader`` (see the module docstring). ``loopback``: the server
    is bound to a loopback address, so ``Host`` is checked to be one; ``stopping``, once
    set, ends the live feeds (``Server`` sets it as it shuts down)."""
    stopping = stopping if stopping is not None else threading.Event()
    if token is not None and (not isinstance(token, str) or len(token) < 8):
        raise ServeError("token: expected a string of at least 8 characters (or None)")
    if not isinstance(poll, (int, float)) or not 0.01 <= poll <= 10:
        raise ServeError(f"poll={poll!r}: expected seconds between 0.01 and 10")

    app = FastAPI(title="weft inspector", docs_url=None, redoc_url=None, openapi_url=None)
    static = resources.files("weft.inspect.web") / "static"

    @app.middleware("http")
    async def guard(request: Request, call_next: Callable[[Request], Awaitable[Response]]) -> Any:
        refusal = _refusal(request, token=token, loopback=loopback)
        if refusal is not None:
            status, message = refusal
            if request.url.path == "/":
                return HTMLResponse(_REFUSAL_PAGE.format(message=html.escape(message)), status)
            return JSONResponse({"error": message}, status_code=status)
        if request.method not in ("GET", "HEAD", "OPTIONS"):
            refusal = _write_refusal(request, allow_writes=allow_writes)
            if refusal is not None:
                return JSONResponse({"error": refusal[1]}, status_code=refusal[0])
        response = await call_next(request)
        given = request.query_params.get("token")
        if token is not None and given is not None:
            response.set_cookie(COOKIE, given, httponly=True, samesite="strict")
        response.headers.setdefault("Cache-Control", "no-store")
        response.headers.setdefault("X-Content-Type-Options", "nosniff")
        return response

    @app.exception_handler(RequestValidationError)
    async def bad_request(_request: Request, error: RequestValidationError) -> Any:
        problems = "; ".join(
            f"{'.'.join(str(part) for part in problem['loc'])}: {problem['msg']}"
            for problem in error.errors()
        )
        return JSONResponse({"error": f"a request the inspector cannot take: {problems}"}, 400)

    @app.exception_handler(WeftError)
    async def weft_error(_request: Request, error: WeftError) -> Any:
        status = 404 if isinstance(error, StepError) else 400
        return JSONResponse({"error": str(error), "type": type(error).__name__}, status)

    def call(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Awaitable[Any]:
        return asyncio.to_thread(fn, reader, *args, **kwargs)

    @app.get("/", response_class=HTMLResponse)
    async def index() -> str:
        return (static / "index.html").read_text(encoding="utf-8")

    @app.get("/api/info")
    async def info() -> dict[str, Any]:
        return {"location": reader.location, "allow_writes": allow_writes, "poll": poll}

    @app.get("/api/threads")
    async def threads() -> Any:
        return {"threads": await call(views.threads)}

    @app.get("/api/threads/{thread_id:path}/runs")
    async def runs(thread_id: str) -> Any:
        return await call(views.runs, thread_id)

    @app.get("/api/threads/{thread_id:path}/timeline")
    async def timeline(
        thread_id: str, since: int = Query(0, ge=0), limit: int = Query(500, ge=1, le=5000)
    ) -> Any:
        return await call(views.timeline, thread_id, since=since, limit=limit)

    @app.get("/api/threads/{thread_id:path}/state")
    async def state(thread_id: str, at: int | None = Query(None, ge=0), prefix: str = "") -> Any:
        return await call(views.state, thread_id, at=at, prefix=prefix)

    @app.get("/api/threads/{thread_id:path}/diff")
    async def diff(thread_id: str, at: int = Query(..., ge=1)) -> Any:
        return await call(views.diff, thread_id, at=at)

    @app.get("/api/threads/{thread_id:path}/memory")
    async def memory(thread_id: str) -> Any:
        return await call(views.memory, thread_id)

    @app.get("/api/threads/{thread_id:path}/pauses")
    async def pauses(thread_id: str) -> Any:
        return await call(views.pauses, thread_id)

    @app.post("/api/threads/{thread_id:path}/answer")
    async def answer(thread_id: str, body: Annotated[Any, Body()]) -> Any:
        if (
            not isinstance(body, dict)
            or not isinstance(body.get("id"), str)
            or "answer" not in body
        ):
            raise PauseError(
                'expected a JSON object {"id": "<question id>", "answer": <any JSON>}; the '
                "question ids are listed by /api/threads/<thread>/pauses"
            )
        return await call(views.answer, thread_id, body["id"], body["answer"])

    @app.post("/api/threads/{thread_id:path}/fork")
    async def fork(thread_id: str, body: Annotated[Any, Body()]) -> Any:
        if not isinstance(body, dict) or "step" not in body:
            raise PersistError('expected a JSON object {"step": <the step to fork at>}')
        return await call(views.fork, thread_id, step=body["step"])

    @app.get("/api/feed")
    async def feed(request: Request) -> Any:
        return StreamingResponse(
            _feed(request, reader.backend, poll, stopping),
            media_type="text/event-stream",
            headers={"Cache-Control": "no-store", "X-Accel-Buffering": "no"},
        )

    app.mount("/static", StaticFiles(packages=[("weft.inspect.web", "static")]), name="static")
    return app


class Server(uvicorn.Server):
    """uvicorn's server, ending the inspector's live feeds first when it shuts down (a
    feed never ends by itself, so uvicorn would wait for it, then cancel it)."""

    def __init__(self, config: uvicorn.Config, stopping: threading.Event) -> None:
        super().__init__(config)
        self.stopping = stopping

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        self.stopping.set()
        await super().shutdown(sockets)


async def _feed(
    request: Request, backend: Backend, poll: float, stopping: threading.Event
) -> AsyncIterator[str]:
    """Server-sent events: ``threads`` with every thread's last step, at once and then
    whenever any thread moves (a run in another process included); ``problem`` with the
    error when the database cannot be read (the feed goes on, and says ``threads`` again
    once it can)."""
    seen: dict[str, int] | None = None
    failed: str | None = None
    quiet = 0.0
    yield "retry: 1000\n\n"
    while not stopping.is_set() and not await request.is_disconnected():
        try:
            infos = await asyncio.to_thread(backend.threads)
        except WeftError as error:
            if str(error) != failed:
                failed, seen = str(error), None
                yield f"event: problem\ndata: {json.dumps({'error': failed})}\n\n"
            await asyncio.sleep(poll)
            continue
        failed = None
        now = {info.thread_id: info.last_step for info in infos}
        if now != seen:
            seen, quiet = now, 0.0
            yield f"event: threads\ndata: {json.dumps(now)}\n\n"
        elif quiet >= KEEPALIVE:
            quiet = 0.0
            yield ": keepalive\n\n"
        await asyncio.sleep(poll)
        quiet += poll


def _refusal(request: Request, *, token: str | None, loopback: bool) -> tuple[int, str] | None:
    if loopback:
        host = _hostname(request.headers.get("host", ""))
        if host not in LOOPBACK_NAMES:
            return 403, (
                f"Host {host!r}: the inspector is bound to a loopback address and answers "
                "only to 127.0.0.1 or localhost; open http://127.0.0.1:<port>/"
            )
    if token is None:
        return None
    given = _given_token(request)
    if given is None or not secrets.compare_digest(given.encode(), token.encode()):
        return 401, (
            "this inspector asks for its token: open the URL it printed (…/?token=<token>), "
            "or send the header Authorization: Bearer <token>"
        )
    return None


def _write_refusal(request: Request, *, allow_writes: bool) -> tuple[int, str] | None:
    if not allow_writes:
        return 403, (
            "the inspector is read-only: answering and forking need it started with "
            "`weft inspect --allow-writes`"
        )
    content_type = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if content_type != "application/json":
        return 403, f"a write must be sent as application/json, not {content_type or 'nothing'!r}"
    origin = request.headers.get("origin")
    if origin is not None and urlsplit(origin).netloc != request.headers.get("host"):
        return 403, f"a write from {origin!r} is refused: only the inspector's own page writes"
    return None


def _given_token(request: Request) -> str | None:
    header = request.headers.get("authorization", "")
    if header.lower().startswith("bearer "):
        return header[7:].strip()
    query = request.query_params.get("token")
    return query if query is not None else request.cookies.get(COOKIE)


def _hostname(host: str) -> str:
    if host.startswith("["):
        return host[: host.find("]") + 1] if "]" in host else host
    return host.rsplit(":", 1)[0] if host.count(":") == 1 else host
