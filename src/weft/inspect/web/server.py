"""Running the web inspector: ``serve(db, host=..., port=...)`` and the checks before it.

A loopback bind (``127.0.0.1``, the default) needs no token. Any other bind is reachable by
others, so it asks for a token: the one given, or a fresh one printed with the URL.
"""

from __future__ import annotations

import ipaddress
import secrets
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Final

from weft.errors import ServeError

if TYPE_CHECKING:
    import uvicorn

    from weft.inspect.reader import Reader

GRACE: Final = 1
"""Seconds uvicorn waits for open feeds on shutdown before closing them."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Binding:
    """Where the inspector listens, and the token it asks for (None on loopback)."""

    host: str
    port: int
    token: str | None

    @property
    def loopback(self) -> bool:
        return is_loopback(self.host)

    def url(self, port: int | None = None) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        if host in ("0.0.0.0", "[::]"):
            host = "127.0.0.1"
        query = f"?token={self.token}" if self.token is not None else ""
        return f"http://{host}:{self.port if port is None else port}/{query}"


def free_port(host: str = "127.0.0.1") -> int:
    """A port nobody listens on at ``host`` now."""
    import socket

    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    try:
        with socket.socket(family, socket.SOCK_STREAM) as probe:
            probe.bind((host, 0))
            return int(probe.getsockname()[1])
    except OSError as exc:
        raise ServeError(
            f"host={host!r}: cannot listen there ({exc}); give an address of this machine "
            "such as 127.0.0.1 (this machine only) or 0.0.0.0 (every interface)"
        ) from None


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def binding(host: str = "127.0.0.1", port: int = 8765, token: str | None = None) -> Binding:
    """Check the address (port 0: a free one, picked now so the URL can say it); a
    non-loopback host gets ``token`` or a fresh one."""
    if not isinstance(host, str) or not host:
        raise ServeError(f"host={host!r}: expected an address such as 127.0.0.1 or 0.0.0.0")
    if isinstance(port, bool) or not isinstance(port, int) or not 0 <= port <= 65535:
        raise ServeError(f"port={port!r}: expected a port number from 0 (any free one) to 65535")
    if token is not None and (not isinstance(token, str) or len(token) < 8):
        raise ServeError(
            "--token: expected at least 8 characters; leave it out to get a fresh token"
        )
    if token is None and not is_loopback(host):
        token = secrets.token_urlsafe(24)
    return Binding(host=host, port=port or free_port(host), token=token)


def server(
    reader: Reader, where: Binding, *, allow_writes: bool = False, poll: float | None = None
) -> uvicorn.Server:
    """A uvicorn server of the inspector over ``reader`` (not started)."""
    try:
        import uvicorn

        from weft.inspect.web.app import POLL, Server, create_app
    except ImportError as exc:
        raise ServeError(
            f"the web inspector needs FastAPI and uvicorn ({exc}); install them with "
            "pip install 'weft[inspect]'"
        ) from None

    stopping = threading.Event()
    app = create_app(
        reader,
        allow_writes=allow_writes,
        token=where.token,
        loopback=where.loopback,
        poll=POLL if poll is None else poll,
        stopping=stopping,
    )
    config = uvicorn.Config(
        app,
        host=where.host,
        port=where.port,
        log_level="warning",
        timeout_graceful_shutdown=GRACE,
        lifespan="off",
    )
    return Server(config, stopping)


def serve(
    db: str | Path | None,
    *,
    host: str = "127.0.0.1",
    port: int = 8765,
    allow_writes: bool = False,
    token: str | None = None,
    say: Callable[[str], None] = print,
) -> None:
    """Serve the inspector of ``db`` (a SQLite file, default ``./.weft/weft.db``, or a
    ``postgresql://`` DSN) until interrupted; ``say`` gets the URL to open."""
    from weft.inspect.reader import Reader

    where = binding(host, port, token)
    with Reader.open(db) as reader:
        instance = server(reader, where, allow_writes=allow_writes)
        mode = "answering and forking allowed" if allow_writes else "read-only"
        say(f"weft inspector of {reader.location} ({mode}): {where.url()}")
        instance.run()
