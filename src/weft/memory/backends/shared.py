"""``memory_backend(backend)``: the long-term memory that shares an event-log backend's
database, so that a user keeps one database for threads and memory.

- ``SQLiteBackend(path)``: a ``SQLiteMemoryBackend`` on the same file (its own
  connection, the same ``synchronous``; WAL lets the two work side by side).
- ``PostgresBackend(conninfo, schema=...)``: a ``PostgresMemoryBackend`` on the same
  server and schema (its own pool).
- ``InMemoryBackend()``: an ``InMemoryMemoryBackend``.

There is one memory backend per event-log backend object, made on first use and kept
as long as that object lives: every ``LongTermMemory`` on one ``InMemoryBackend`` sees
the same rows, and a file or server gets one more connection, not one per call. Its
connections close when nothing refers to it any more (or at exit), or at
``memory_backend(backend).close()``. A ``MemoryBackend`` is returned as it is.

>>> from weft.memory import memory_backend
>>> from weft.persist import InMemoryBackend
>>> backend = InMemoryBackend()
>>> memory_backend(backend) is memory_backend(backend)
True
"""

from __future__ import annotations

import threading
import weakref
from typing import Final

from weft.errors import PersistError
from weft.memory.backends.base import MemoryBackend
from weft.memory.backends.in_memory import InMemoryMemoryBackend
from weft.memory.backends.postgres import PostgresMemoryBackend
from weft.memory.backends.sqlite import SQLiteMemoryBackend
from weft.persist import Backend, InMemoryBackend, PostgresBackend, SQLiteBackend

_LOCK: Final = threading.Lock()
_BESIDE: Final[weakref.WeakKeyDictionary[Backend, MemoryBackend]] = weakref.WeakKeyDictionary()


def memory_backend(backend: Backend | MemoryBackend) -> MemoryBackend:
    """The long-term memory backend in ``backend`` 's database (see the module docstring)."""
    if isinstance(backend, MemoryBackend):
        return backend
    if not isinstance(backend, Backend):
        raise PersistError(
            f"long-term memory needs a memory backend, got {type(backend).__name__}; pass a "
            "weft.persist backend (InMemoryBackend, SQLiteBackend, PostgresBackend) or a "
            "weft.memory MemoryBackend (InMemoryMemoryBackend(), SQLiteMemoryBackend(path), "
            "PostgresMemoryBackend(conninfo))"
        )
    with _LOCK:
        found = _BESIDE.get(backend)
        if found is None:
            found = _BESIDE[backend] = _open_beside(backend)
        return found


def _open_beside(backend: Backend) -> MemoryBackend:
    if isinstance(backend, InMemoryBackend):
        return InMemoryMemoryBackend(types=backend.types)
    if isinstance(backend, SQLiteBackend):
        return SQLiteMemoryBackend(
            backend.path, synchronous=backend.synchronous, types=backend.types
        )
    if isinstance(backend, PostgresBackend):
        return PostgresMemoryBackend(backend.conninfo, schema=backend.schema, types=backend.types)
    raise PersistError(
        f"{type(backend).__name__} keeps event logs only, and weft has no long-term memory "
        "backend for its database; pass a weft.memory MemoryBackend instead "
        "(InMemoryMemoryBackend(), SQLiteMemoryBackend(path), PostgresMemoryBackend(conninfo), "
        "or your own subclass of MemoryBackend)"
    )
