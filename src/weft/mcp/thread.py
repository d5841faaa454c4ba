"""The memory of one durable thread, as the MCP server serves it (no MCP in here).

``ThreadMemory.open(db, thread_id)`` opens the database (a SQLite path, or a PostgreSQL
DSN), loads the thread and serves the three memory tools over its ``AgentMemory``. Every
write is a commit of the thread, so it is on disk before the tool answers. Other processes
may write the same thread (a second server, an agent run): a call first reads the thread
again when its last step moved, and a write that loses the race to another writer is made
again on the thread as it now is.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final

# the types weft itself stores (chat messages of a ToolAgent's run, an executor's job
# outcomes) register as their modules load: a thread written by a run loads here too, in a
# process that never ran one
import weft.llm.messages
import weft.plan.jobs  # noqa: F401
from weft.errors import ConflictError, PersistError, StorageError
from weft.memory import AgentMemory, MemoryEntry, MemoryTools, memory_tools
from weft.memory.agent_memory import MemoryKind
from weft.persist import Backend, DurableRun, PostgresBackend, SQLiteBackend
from weft.persist.base import check_id
from weft.persist.runs import new_id
from weft.persist.sqlite import DEFAULT_PATH

POSTGRES_SCHEMES: Final = ("postgresql://", "postgres://")
_WRITE_ATTEMPTS: Final = 3
_THREADS_SHOWN: Final = 10


class ThreadMemory:
    """The memory tools over one durable thread, safe to call from several threads.

    >>> import tempfile, pathlib
    >>> db = pathlib.Path(tempfile.mkdtemp()) / "weft.db"
    >>> memory = ThreadMemory.open(db, "team-notes", create=True)
    >>> memory.call("memory_write", {"key": "plan", "value": "ship"}, source="mcp:demo")["key"]
    'shared:plan'
    >>> memory.close()
    >>> again = ThreadMemory.open(db, "team-notes")   # another process would see it too
    >>> again.call("memory_read", {"keys": ["shared:plan"]})["entries"]["shared:plan"]["value"]
    'ship'
    >>> again.close()
    """

    def __init__(self, backend: Backend, thread_id: str, *, owns_backend: bool = False) -> None:
        self.backend = backend
        self.thread_id = check_id(thread_id, "thread_id")
        self._owns_backend = owns_backend
        self._lock = threading.Lock()
        self._run = DurableRun.open(backend, thread_id, run_id=new_id("mcp"), name="weft.mcp")
        self._memory = _LiveMemory(self._run)
        self._tools = memory_tools(self._memory)

    @classmethod
    def open(
        cls,
        db: str | Path | None,
        thread_id: str,
        *,
        create: bool = False,
        schema: str = "weft",
    ) -> ThreadMemory:
        """Open ``db`` (a SQLite path, default ``./.weft/weft.db``, or a ``postgresql://``
        DSN, tables in ``schema``) and the thread ``thread_id``, which must exist unless
        ``create``; a clear ``PersistError`` (or ``StorageError``) when any is wrong."""
        check_id(thread_id, "thread_id")
        backend = open_backend(db, create=create, schema=schema)
        try:
            if not create and backend.thread(thread_id) is None:
                raise PersistError(_no_thread(backend, thread_id))
            return cls(backend, thread_id, owns_backend=True)
        except BaseException:
            backend.close()
            raise

    @property
    def tools(self) -> MemoryTools:
        """The three tools (their names, descriptions and JSON Schemas)."""
        return self._tools

    @property
    def location(self) -> str:
        """Where the thread lives, for messages: the file, or the server and schema."""
        return self.backend.location

    def call(
        self, name: str, arguments: Mapping[str, Any] | str | None, *, source: str | None = None
    ) -> dict[str, Any]:
        """Run the memory tool ``name`` on the thread as it now is; ``memory_write`` records
        ``source`` as the writer. Never raises: a problem is ``{"ok": false, "error": ...}``."""
        with self._lock:
            self._memory.catch_up()
            return self._tools.call(name, arguments, source=source)

    def entries(self, kind: MemoryKind | None = None) -> list[MemoryEntry]:
        """Every memory entry of the thread as it now is (of ``kind``), oldest write first."""
        with self._lock:
            self._memory.catch_up()
            return self._memory.list(kind=kind)

    def close(self) -> None:
        """Stop serving: the run stops journaling, and a backend this object opened closes."""
        with self._lock:
            self._run.close()
            if self._owns_backend:
                self.backend.close()

    def __repr__(self) -> str:
        return f"<ThreadMemory thread={self.thread_id!r} at {self.location}>"


class _LiveMemory(AgentMemory):
    """AgentMemory over a durable thread that other processes append to as well."""

    def __init__(self, run: DurableRun) -> None:
        super().__init__(run.store)
        self._run = run

    def catch_up(self) -> None:
        """Read the thread again if another writer appended since this process last did."""
        if self._run.backend.last_step(self._run.thread_id) != self._run.step:
            self._reload()

    def set(self, key: str, value: Any, **options: Any) -> MemoryEntry:
        for attempt in range(1, _WRITE_ATTEMPTS + 1):
            try:
                return super().set(key, value, **options)
            except ConflictError:  # refused whole and undone: write again on the new thread
                if attempt == _WRITE_ATTEMPTS:
                    raise
                self._reload()
        raise AssertionError("unreachable")  # pragma: no cover

    def _reload(self) -> None:
        self._run.reload()
        self._store = self._run.store


def open_backend(db: str | Path | None, *, create: bool = False, schema: str = "weft") -> Backend:
    """The event-log backend ``db`` names: a ``postgresql://`` DSN, or the path of a SQLite
    file (default ``./.weft/weft.db``), which must exist unless ``create``."""
    text = "" if db is None else str(db)
    if text.startswith(POSTGRES_SCHEMES):
        _reach_postgres(text)
        return PostgresBackend(text, schema=schema, timeout=5.0)
    if "://" in text:
        raise PersistError(
            f"database {text.split('://')[0]}://...: unknown kind of database URL; give the "
            "path of a SQLite file (e.g. .weft/weft.db) or a PostgreSQL DSN "
            "(postgresql://user@host:5432/dbname)"
        )
    path = DEFAULT_PATH if db is None else Path(db)
    if path.is_dir():
        raise PersistError(f"database {path}: is a folder; give the path of a SQLite file")
    if not create and not path.exists():
        raise PersistError(
            f"database {path}: no such SQLite file. Give the file your runs use (weft's "
            f"default is {DEFAULT_PATH}), or pass create=True (--create) to start a new one"
        )
    return SQLiteBackend(path)


def _reach_postgres(dsn: str) -> None:
    """Connect once, so that a server that is down or a database that does not exist is
    said at once and in the server's words (a pool would retry until its timeout)."""
    try:
        import psycopg
    except ImportError:
        return  # PostgresBackend says how to install it
    from psycopg.conninfo import conninfo_to_dict

    try:
        parts = conninfo_to_dict(dsn)
    except psycopg.Error as exc:
        raise StorageError(
            f"database {dsn.split('://')[0]}://...: not a PostgreSQL DSN ({exc}); give "
            "postgresql://user@host:5432/dbname"
        ) from exc
    where = f"{parts.get('host', 'localhost')}:{parts.get('port', 5432)}/{parts.get('dbname')}"
    try:
        psycopg.connect(dsn, connect_timeout=5).close()
    except psycopg.Error as exc:
        reason = " ".join(str(exc).split())
        raise StorageError(
            f"PostgreSQL {where}: cannot connect ({reason}). Is the server running "
            "and the database created (createdb -h HOST -U USER DBNAME)? Check the DSN"
        ) from exc


def _no_thread(backend: Backend, thread_id: str) -> str:
    names = [info.thread_id for info in backend.threads()]
    shown = ", ".join(repr(name) for name in names[:_THREADS_SHOWN])
    if len(names) > _THREADS_SHOWN:
        shown += f" and {len(names) - _THREADS_SHOWN} more"
    return (
        f"thread {thread_id!r} does not exist in {backend.location}; "
        f"{f'its threads are {shown}' if names else 'it has no threads yet'}. Check the id, "
        "or pass create=True (--create) to start a new thread"
    )
