"""Long-term memory: entries owned by a user (or a session), in namespaces, with TTL and recall.

Seed 004's *loaded* state: facts and session summaries that outlive a thread, fetched
again each turn. ``LongTermMemory`` is the owner-scoped API over a memory backend
(``weft.memory.backends``: in-memory, SQLite, PostgreSQL); every read and search is
filtered by the owner in the backend's own query, so no call can reach another
owner's entries. Given an event-log backend (``weft.persist``), it uses the memory
backend in that backend's database (``memory_backend(backend)``): one database for
threads and memory.

An owner is the user id when there is one, else the session id;
with neither, an ``OwnerError``. The two never collide (``user:alice`` and
``session:alice`` are different owners).

>>> from weft.memory import LongTermMemory, Owner, SemanticWorkingMemoryEntry
>>> from weft.memory import format_working_memory_entries
>>> from weft.persist import InMemoryBackend
>>> memory = LongTermMemory(InMemoryBackend(), owner=Owner(user_id="alice"))
>>> _ = memory.remember(SemanticWorkingMemoryEntry(category="relationship", subject="User",
...     predicate="WORRIES_ABOUT", object="work", evidence_quote="my boss is terrible"))
>>> found = memory.working_memory("trouble with my boss")
>>> found.path, format_working_memory_entries(found.values())
('token_recall', '[relationship] User WORRIES_ABOUT work — "my boss is terrible"')
"""

from __future__ import annotations

import builtins
import hashlib
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Final

from weft.errors import OwnerError, PersistError
from weft.memory.backends.base import MemoryBackend, MemoryRecord
from weft.memory.backends.shared import memory_backend
from weft.memory.recall import EmbeddingProvider, RecallHit, RecallResult, recall
from weft.memory.working import (
    EpisodicWorkingMemoryEntry,
    SemanticWorkingMemoryEntry,
    WorkingMemoryEntry,
)
from weft.persist import Backend
from weft.store import dumps

SEMANTIC: Final = "semantic"
"""The namespace of ``SemanticWorkingMemoryEntry`` s."""
EPISODIC: Final = "episodic"
"""The namespace of ``EpisodicWorkingMemoryEntry`` s."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Owner:
    """Who long-term memory belongs to: a user, or failing that a session."""

    user_id: str | None = None
    session_id: str | None = None

    @property
    def key(self) -> str:
        """``user:<id>``, else ``session:<id>``; neither is an ``OwnerError``."""
        if self.user_id:
            return f"user:{self.user_id}"
        if self.session_id:
            return f"session:{self.session_id}"
        raise OwnerError(
            "long-term memory needs an owner, and neither a user id nor a session id was "
            "given; pass Owner(user_id=...) for memory that follows the user, or "
            "Owner(session_id=...) for memory of one session"
        )


class LongTermMemory:
    """One owner's long-term memory on a memory backend, or on the one in an event-log
    backend's database (see the module docstring).

    ``backend`` is the memory backend it reads and writes (``memory_backend(backend)`` of
    the one given); ``embedder`` turns on hybrid recall; ``default_ttl`` (seconds) applies
    to ``put`` calls that give none; ``clock`` is the time source (a test passes a fake
    one).
    """

    def __init__(
        self,
        backend: Backend | MemoryBackend,
        *,
        owner: Owner,
        embedder: EmbeddingProvider | None = None,
        default_ttl: float | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        if not isinstance(owner, Owner):
            raise OwnerError(f"owner={owner!r}: expected an Owner(user_id=..., session_id=...)")
        self.owner = owner.key  # resolve now: a missing owner fails here, not on first use
        self.backend = memory_backend(backend)
        self.embedder = embedder
        self.default_ttl = default_ttl
        self._clock = clock

    def __repr__(self) -> str:
        return f"<LongTermMemory owner={self.owner!r}>"

    def put(
        self,
        namespace: str,
        key: str,
        value: Any,
        *,
        text: str | None = None,
        ttl: float | None = None,
    ) -> MemoryRecord:
        """Store ``value``; ``text`` is what recall searches (default: the entry's line for
        working-memory entries, the string itself, or the value's JSON). ``ttl`` seconds
        after now the entry disappears (``default_ttl`` when not given)."""
        now = self._clock()
        ttl = self.default_ttl if ttl is None else ttl
        if ttl is not None and not ttl > 0:
            raise PersistError(f"ttl={ttl!r}: expected a positive number of seconds, or None")
        return self.backend.put(
            self.owner,
            namespace,
            key,
            value,
            text=_text_of(value) if text is None else text,
            expires_at=None if ttl is None else now + ttl,
            now=now,
        )

    def get(self, namespace: str, key: str) -> MemoryRecord | None:
        """The entry, or None when absent or expired."""
        return self.backend.get(self.owner, namespace, key, now=self._clock())

    def get_value(self, namespace: str, key: str, default: Any = None) -> Any:
        """The entry's value, or ``default``."""
        record = self.get(namespace, key)
        return default if record is None else record.value

    def delete(self, namespace: str, key: str) -> bool:
        """Delete one entry; returns whether it existed."""
        return self.backend.delete(self.owner, namespace, key)

    def list(
        self, namespace: str | None = None, *, prefix: str = "", limit: int | None = None
    ) -> builtins.list[MemoryRecord]:
        """The owner's live entries, most recently updated first."""
        return self.backend.list(
            self.owner, namespace=namespace, prefix=prefix, limit=limit, now=self._clock()
        )

    def recall(
        self, query: str, *, namespaces: Sequence[str] | None = None, k: int = 5
    ) -> RecallResult:
        """The ``k`` entries that best match ``query``, and which path found them."""
        return recall(
            self.backend,
            self.owner,
            query,
            namespaces=namespaces,
            k=k,
            embedder=self.embedder,
            now=self._clock(),
        )

    def remember(self, entry: WorkingMemoryEntry, *, ttl: float | None = None) -> MemoryRecord:
        """Store a working-memory entry in its namespace, keyed by its content (storing the
        same fact twice keeps one entry)."""
        if isinstance(entry, SemanticWorkingMemoryEntry):
            namespace = SEMANTIC
        elif isinstance(entry, EpisodicWorkingMemoryEntry):
            namespace = EPISODIC
        else:
            raise PersistError(
                f"remember() takes a SemanticWorkingMemoryEntry or EpisodicWorkingMemoryEntry, "
                f"got {type(entry).__name__}; use put() for other values"
            )
        key = hashlib.sha256(dumps(entry).encode()).hexdigest()[:24]
        return self.put(namespace, key, entry, ttl=ttl)

    def working_memory(self, query: str | None = None, *, k: int = 8) -> RecallResult:
        """The entries to load into a turn: recalled for ``query`` (the user's message), or
        the ``k`` most recent when there is no query (``path`` is then ``recent``).
        ``format_working_memory_entries(result.values())`` renders them."""
        namespaces = (SEMANTIC, EPISODIC)
        if query and query.strip():
            return self.recall(query, namespaces=namespaces, k=k)
        recent = sorted(
            (r for ns in namespaces for r in self.list(ns, limit=k)),
            key=lambda r: -r.updated_at,
        )[:k]
        return RecallResult(path="recent", hits=[RecallHit(record=r, score=0.0) for r in recent])


def _text_of(value: Any) -> str:
    if isinstance(value, (SemanticWorkingMemoryEntry, EpisodicWorkingMemoryEntry)):
        return value.render()
    if isinstance(value, str):
        return value
    return dumps(value)
