"""The long-term memory backend: rows owned by an owner, in namespaces, with TTL and recall.

An *owner* is an opaque string (``weft.memory.Owner`` makes it: ``user:<id>`` or
``session:<id>``). Every primitive takes the owner and filters by it in the query
itself, so no path (get, list, token search, vectors) can return another owner's row.

A row keeps the value (a versioned record, see ``weft.persist.codec``), the text that
recall searches, its times, an optional expiry, and an optional embedding vector with
the name of the model that made it (stale vectors are ignored and recomputed).

Expired rows are invisible at once and purged lazily: ``list``, ``search`` and
``unembedded`` delete the owner's expired rows before reading, ``get`` deletes the one it
finds expired.

A backend implements the abstract row-level verbs below; checks, encoding, expiry and
the vector indexes of embedding recall (``weft.memory.vector_index``) live here once, and
token search defaults to BM25 over ``_list_rows`` (the SQL backends use their own
full-text engines instead).
"""

from __future__ import annotations

import array
import sys
import threading
from abc import abstractmethod
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from weft.errors import PersistError
from weft.memory.backends.text import bm25, query_words
from weft.memory.vector_index import VectorIndex, VectorRow
from weft.persist.base import Closeable
from weft.persist.codec import decode_value, encode_value
from weft.store import TypeRegistry, freeze, registry

MemoryRow = tuple[str, str, str, str, float, float, float | None]
"""(namespace, key, record, text, created_at, updated_at, expires_at) as a backend stores it."""

Namespaces = tuple[str, ...] | None
"""The namespaces a read is limited to, or None for all."""

_Rows = list[MemoryRow]
_ScoredRows = list[tuple[MemoryRow, float]]
_Blobs = list[tuple[str, str, bytes]]
_VectorRows = list[VectorRow]


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


_MAKING = threading.Lock()


def check_name(value: object, what: str) -> str:
    """An owner, namespace or key: a non-empty string without control characters."""
    if not isinstance(value, str) or not value or not value.isprintable():
        raise PersistError(
            f"{what}={value!r}: expected a non-empty printable string such as 'preferences'"
        )
    return value


class MemoryBackend(Closeable):
    """Where long-term memory rows are kept (see the module docstring); synchronous, like
    the event-log backends."""

    INDEXED_OWNERS: int = 64
    """How many (owner, model) vector indexes a backend keeps, least recently used dropped."""

    def __init__(self, *, types: TypeRegistry = registry) -> None:
        self.types = types

    @property
    def _indexes(self) -> OrderedDict[tuple[str, str], VectorIndex]:
        """The vector indexes, made on first use (the SQL backends' own ``__init__`` come
        first in their bases), guarded by ``_indexes_lock``."""
        made: OrderedDict[tuple[str, str], VectorIndex] | None = self.__dict__.get("_index_map")
        if made is None:
            with _MAKING:
                made = self.__dict__.setdefault("_index_map", OrderedDict())
        return made

    @property
    def _indexes_lock(self) -> threading.Lock:
        made: threading.Lock | None = self.__dict__.get("_index_lock")
        if made is None:
            with _MAKING:
                made = self.__dict__.setdefault("_index_lock", threading.Lock())
        return made

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
        created, version = self._put_row(owner, namespace, key, record, text, expires_at, now)
        self._changed(owner, version, lambda _, index: index.put((namespace, key), expires_at))
        return self._record(owner, (namespace, key, record, text, created, now, expires_at))

    def get(self, owner: str, namespace: str, key: str, *, now: float) -> MemoryRecord | None:
        """The row, or None when absent or expired (an expired row is deleted here)."""
        row = self._get_row(owner, namespace, key)
        if row is None:
            return None
        if row[6] is not None and row[6] <= now:
            self.delete(owner, namespace, key)
            return None
        return self._record(owner, row)

    def delete(self, owner: str, namespace: str, key: str) -> bool:
        """Delete one row; returns whether it existed."""
        version = self._delete_row(owner, namespace, key)
        if version is None:
            return False
        self._changed(owner, version, lambda _, index: index.delete((namespace, key)))
        return True

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
        namespaces = None if namespace is None else (namespace,)
        return [
            self._record(owner, row) for row in self._list_rows(owner, namespaces, prefix, limit)
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
        """Token recall over the owner's live rows: (row, score), best first (higher is
        better; each backend ranks with its own engine). Any word of the query may match
        (the words are OR-ed; stopwords are left out); a query of no other word finds nothing."""
        words = query_words(query)
        if not words or limit <= 0:
            return []
        self._purge(owner, now)
        found = self._search_rows(owner, words, _names(namespaces), limit)
        return [(self._record(owner, row), score) for row, score in found]

    def unembedded(
        self,
        owner: str,
        model: str,
        *,
        namespaces: Sequence[str] | None = None,
        now: float,
    ) -> _Records:
        """The owner's live rows that have no vector from ``model`` yet, by namespace and key."""
        self._purge(owner, now)
        index = self._index(owner, model)
        wanted = _names(namespaces)
        with self._indexes_lock:
            keys = sorted(
                key
                for key, expires in index.missing.items()
                if (expires is None or expires > now) and (wanted is None or key[0] in wanted)
            )
        return [self._record(owner, row) for row in self._get_rows(owner, keys)]

    def set_vectors(
        self, owner: str, model: str, items: Sequence[tuple[str, str, Sequence[float]]]
    ) -> None:
        """Store vectors from ``model`` for (namespace, key) rows of the owner."""
        if not items:
            return
        blobs = [(ns, k, pack_vector(v)) for ns, k, v in items]
        version = self._set_vector_rows(owner, model, blobs)

        def follow(made_by: str, index: VectorIndex) -> None:
            for namespace, key, blob in blobs:
                if made_by == model:
                    index.set((namespace, key), blob)
                else:  # a row keeps the vector of one model: the other one's is gone
                    index.forget((namespace, key))

        self._changed(owner, version, follow)

    def nearest(
        self,
        owner: str,
        model: str,
        vector: Sequence[float],
        *,
        namespaces: Sequence[str] | None = None,
        limit: int,
        now: float,
    ) -> _ScoredRecords:
        """The ``limit`` live rows of the owner whose vector from ``model`` is most similar
        to ``vector`` (cosine similarity, positive only), most similar first, ties by
        namespace and key. Rows without a vector from ``model`` are not compared: see
        ``unembedded``."""
        index = self._index(owner, model)
        with self._indexes_lock:
            found = index.nearest(vector, namespaces=_names(namespaces), limit=limit, now=now)
        rows = {(row[0], row[1]): row for row in self._get_rows(owner, [k for k, _ in found])}
        return [(self._record(owner, rows[key]), score) for key, score in found if key in rows]

    def purge_expired(self, *, now: float, owner: str | None = None) -> int:
        """Delete expired rows (of one owner, or all); returns how many."""
        return self._purge(owner, now)

    def _index(self, owner: str, model: str) -> VectorIndex:
        """The owner's vector index for ``model``, read again if anyone else wrote since."""
        version = self._version(owner)
        with self._indexes_lock:
            index = self._indexes.get((owner, model))
            if index is not None and index.version == version:
                self._indexes.move_to_end((owner, model))
                return index
        # the version is read before the rows: a write in between makes the index look
        # older than it is, and the next recall reads it again
        index = VectorIndex(version, self._vector_rows(owner, model))
        with self._indexes_lock:
            self._indexes[(owner, model)] = index
            while len(self._indexes) > self.INDEXED_OWNERS:
                self._indexes.popitem(last=False)
        return index

    def _changed(
        self, owner: str, version: int, follow: Callable[[str, VectorIndex], None]
    ) -> None:
        """A write of this backend moved the owner to ``version``: an index that was at the
        version before follows the write; one that missed another writer's is dropped."""
        with self._indexes_lock:
            for owner_model in [k for k in self._indexes if k[0] == owner]:
                index = self._indexes[owner_model]
                if index.version == version - 1:
                    follow(owner_model[1], index)
                    index.version = version
                else:
                    del self._indexes[owner_model]

    @abstractmethod
    def _version(self, owner: str) -> int:
        """How many writes the owner's rows have had (0 for none): every write verb
        increments it in the same transaction as the rows."""

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
    ) -> tuple[float, int]:
        """Insert or replace the row (vector cleared); returns its ``created_at``, kept from
        the row it replaces unless that one had expired, and the owner's new version."""

    @abstractmethod
    def _get_row(self, owner: str, namespace: str, key: str) -> MemoryRow | None: ...

    @abstractmethod
    def _get_rows(self, owner: str, keys: Sequence[tuple[str, str]]) -> _Rows:
        """The rows of (namespace, key) that exist, in any order."""

    @abstractmethod
    def _delete_row(self, owner: str, namespace: str, key: str) -> int | None:
        """Delete the row; the owner's new version, or None when there was no row."""

    @abstractmethod
    def _list_rows(
        self, owner: str, namespaces: Namespaces, prefix: str, limit: int | None
    ) -> _Rows:
        """The owner's rows, newest ``updated_at`` first, then by namespace and key."""

    @abstractmethod
    def _vector_rows(self, owner: str, model: str) -> _VectorRows:
        """Every row of the owner as (namespace, key, expires_at, vector if ``model`` made it)."""

    @abstractmethod
    def _set_vector_rows(self, owner: str, model: str, rows: _Blobs) -> int:
        """Store (namespace, key, vector) for rows of the owner that exist; returns the
        owner's new version."""

    @abstractmethod
    def _purge(self, owner: str | None, now: float) -> int:
        """Delete the expired rows (of one owner, or of all); returns how many. No new
        version: an index masks expired rows by their expiry."""

    def _search_rows(
        self, owner: str, words: Sequence[str], namespaces: Namespaces, limit: int
    ) -> _ScoredRows:
        """The owner's rows matching any of ``words``, best first: BM25 over the rows
        ``_list_rows`` gives (ties by namespace and key)."""
        rows = self._list_rows(owner, namespaces, "", None)
        scored = [
            (row, score)
            for row, score in zip(rows, bm25([row[3] for row in rows], words), strict=True)
            if score > 0
        ]
        scored.sort(key=lambda hit: (-hit[1], hit[0][0], hit[0][1]))
        return scored[:limit]

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


def _names(namespaces: Sequence[str] | None) -> Namespaces:
    if namespaces is None:
        return None
    return (namespaces,) if isinstance(namespaces, str) else tuple(namespaces)
