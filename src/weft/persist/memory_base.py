"""The long-term memory interface: rows owned by an owner, in namespaces, with TTL and recall.

An *owner* is an opaque string (``weft.memory.Owner`` makes it: ``user:<id>`` or
``session:<id>``). Every primitive takes the owner and filters by it in the query
itself, so no path (get, list, token search, vectors) can return another owner's row.

A row keeps the value (a versioned record, see ``weft.persist.codec``), the text that
recall searches, its times, an optional expiry, and an optional embedding vector with
the name of the model that made it (stale vectors are ignored and recomputed).

Expired rows are invisible at once and purged lazily: ``list``, ``search`` and
``vectors`` delete the owner's expired rows before reading, ``get`` deletes the one it
finds expired.
"""

from __future__ import annotations

import array
import re
import sys
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final

from weft.errors import PersistError
from weft.persist.codec import decode_value, encode_value
from weft.store import TypeRegistry, freeze, registry

MemoryRow = tuple[str, str, str, str, float, float, float | None]
"""(namespace, key, record, text, created_at, updated_at, expires_at) as a backend stores it."""

_Rows = list[MemoryRow]
_ScoredRows = list[tuple[MemoryRow, float]]
_VectorRows = list[tuple[MemoryRow, bytes | None]]
_Blobs = list[tuple[str, str, bytes]]

_WORD: Final = re.compile(r"\w+")


_STOPWORDS = (
    "a about above after again against all am an and any are as at be because been before "
    "being below between both but by can did do does doing down during each few for from "
    "further had has have having he her here hers herself him himself his how i if in into "
    "is it its itself just me more most my myself no nor not now of off on once only or "
    "other our ours ourselves out over own same she should so some such than that the their "
    "theirs them themselves then there these they this those through to too under until up "
    "very was we were what when where which while who whom why will with you your yours "
    "yourself yourselves"
)
STOPWORDS: Final = frozenset(_STOPWORDS.split())
"""English words a query ignores (PostgreSQL's ``english`` configuration drops the same
kind), so "my boss" matches on "boss", not on every entry that says "my"."""


def tokens(text: str) -> list[str]:
    """The words token recall matches: lower-case runs of letters, digits and ``_``."""
    return _WORD.findall(text.lower())


def query_words(text: str) -> list[str]:
    """The words of a query that recall searches for: ``tokens`` less ``STOPWORDS``."""
    return [word for word in tokens(text) if word not in STOPWORDS]


def pack_vector(vector: Sequence[float]) -> bytes:
    """An embedding as little-endian float32 bytes (4 bytes a dimension)."""
    packed = array.array("f", vector)
    if sys.byteorder != "little":  # pragma: no cover - big-endian machines
        packed.byteswap()
    return packed.tobytes()


def unpack_vector(blob: bytes) -> list[float]:
    """The inverse of ``pack_vector``."""
    packed = array.array("f")
    packed.frombytes(blob)
    if sys.byteorder != "little":  # pragma: no cover - big-endian machines
        packed.byteswap()
    return packed.tolist()


@dataclass(frozen=True, slots=True, kw_only=True)
class MemoryRecord:
    """One long-term memory row as read back."""

    owner: str
    namespace: str
    key: str
    value: Any
    text: str
    created_at: float
    updated_at: float
    expires_at: float | None = None


_Records = list[MemoryRecord]
_ScoredRecords = list[tuple[MemoryRecord, float]]
_VectorRecords = list[tuple[MemoryRecord, list[float] | None]]


def check_name(value: object, what: str) -> str:
    """An owner, namespace or key: a non-empty string without control characters."""
    if not isinstance(value, str) or not value or not value.isprintable():
        raise PersistError(
            f"{what}={value!r}: expected a non-empty printable string such as 'preferences'"
        )
    return value


class MemoryBackend(ABC):
    """Long-term memory rows on one backend (``backend.memory``)."""

    def __init__(self, *, types: TypeRegistry = registry) -> None:
        self.types = types

    # ------------------------------------------------------------------ public

    def put(
        self,
        owner: str,
        namespace: str,
        key: str,
        value: Any,
        *,
        text: str,
        expires_at: float | None,
        now: float,
    ) -> MemoryRecord:
        """Store ``value`` under (owner, namespace, key), replacing what was there.

        ``created_at`` is kept when the row existed (and had not expired); the vector is
        dropped, since the text may have changed."""
        for name, what in ((owner, "owner"), (namespace, "namespace"), (key, "key")):
            check_name(name, what)
        where = _where(owner, namespace, key)
        # the store's rules for a value: a frozen copy, tuples as lists, no NaN, known types
        record = encode_value(freeze(value, where=where, types=self.types), self.types)
        created = self._put_row(owner, namespace, key, record, text, expires_at, now)
        return MemoryRecord(
            owner=owner,
            namespace=namespace,
            key=key,
            value=decode_value(record, where=where, types=self.types),
            text=text,
            created_at=created,
            updated_at=now,
            expires_at=expires_at,
        )

    def get(self, owner: str, namespace: str, key: str, *, now: float) -> MemoryRecord | None:
        """The row, or None when absent or expired (an expired row is deleted here)."""
        row = self._get_row(owner, namespace, key)
        if row is None:
            return None
        if row[6] is not None and row[6] <= now:
            self._delete_row(owner, namespace, key)
            return None
        return self._record(owner, row)

    def delete(self, owner: str, namespace: str, key: str) -> bool:
        """Delete one row; returns whether it existed."""
        return self._delete_row(owner, namespace, key)

    def list(
        self,
        owner: str,
        *,
        namespace: str | None = None,
        prefix: str = "",
        limit: int | None = None,
        now: float,
    ) -> _Records:
        """The owner's live rows (of one namespace, with keys starting with ``prefix``),
        most recently updated first."""
        self._purge(owner, now)
        return [
            self._record(owner, row) for row in self._list_rows(owner, namespace, prefix, limit)
        ]

    def search(
        self,
        owner: str,
        query: str,
        *,
        namespaces: Sequence[str] | None = None,
        limit: int = 10,
        now: float,
    ) -> _ScoredRecords:
        """Token recall over the owner's live rows: (row, score), best first.

        SQLite uses FTS5 and ``bm25()``, PostgreSQL ``ts_rank`` over a ``tsvector``, the
        in-memory backend a BM25 in Python; a higher score is a better match. Any word of
        the query may match (the words are OR-ed; ``STOPWORDS`` are left out); a query of
        no other word finds nothing."""
        words = query_words(query)
        if not words or limit <= 0:
            return []
        self._purge(owner, now)
        found = self._search_rows(owner, words, _names(namespaces), limit)
        return [(self._record(owner, row), score) for row, score in found]

    def vectors(
        self,
        owner: str,
        model: str,
        *,
        namespaces: Sequence[str] | None = None,
        now: float,
    ) -> _VectorRecords:
        """Every live row of the owner with its vector from ``model`` (None if it has none)."""
        self._purge(owner, now)
        return [
            (self._record(owner, row), None if blob is None else unpack_vector(blob))
            for row, blob in self._vector_rows(owner, model, _names(namespaces))
        ]

    def set_vectors(
        self, owner: str, model: str, items: Sequence[tuple[str, str, Sequence[float]]]
    ) -> None:
        """Store vectors from ``model`` for (namespace, key) rows of the owner."""
        if items:
            self._set_vector_rows(owner, model, [(ns, k, pack_vector(v)) for ns, k, v in items])

    def purge_expired(self, *, now: float, owner: str | None = None) -> int:
        """Delete expired rows (of one owner, or all); returns how many."""
        return self._purge(owner, now)

    # -------------------------------------------------------------- primitives

    @abstractmethod
    def _put_row(
        self,
        owner: str,
        namespace: str,
        key: str,
        record: str,
        text: str,
        expires_at: float | None,
        now: float,
    ) -> float:
        """Insert or replace the row (vector cleared); returns its ``created_at``."""

    @abstractmethod
    def _get_row(self, owner: str, namespace: str, key: str) -> MemoryRow | None: ...

    @abstractmethod
    def _delete_row(self, owner: str, namespace: str, key: str) -> bool: ...

    @abstractmethod
    def _list_rows(
        self, owner: str, namespace: str | None, prefix: str, limit: int | None
    ) -> _Rows: ...

    @abstractmethod
    def _search_rows(
        self, owner: str, words: Sequence[str], namespaces: tuple[str, ...] | None, limit: int
    ) -> _ScoredRows: ...

    @abstractmethod
    def _vector_rows(
        self, owner: str, model: str, namespaces: tuple[str, ...] | None
    ) -> _VectorRows: ...

    @abstractmethod
    def _set_vector_rows(self, owner: str, model: str, rows: _Blobs) -> None: ...

    @abstractmethod
    def _purge(self, owner: str | None, now: float) -> int: ...

    # ----------------------------------------------------------------- helpers

    def _record(self, owner: str, row: MemoryRow) -> MemoryRecord:
        namespace, key, record, text, created, updated, expires = row
        value = decode_value(record, where=_where(owner, namespace, key), types=self.types)
        return MemoryRecord(
            owner=owner,
            namespace=namespace,
            key=key,
            value=value,
            text=text,
            created_at=created,
            updated_at=updated,
            expires_at=expires,
        )


def _where(owner: str, namespace: str, key: str) -> str:
    return f"the long-term memory entry {namespace}/{key} of owner {owner!r}"


def _names(namespaces: Sequence[str] | None) -> tuple[str, ...] | None:
    if namespaces is None:
        return None
    if isinstance(namespaces, str):
        return (namespaces,)
    return tuple(namespaces)
