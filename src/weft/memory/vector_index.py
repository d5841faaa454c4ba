"""The vectors of one owner from one embedding model, as one contiguous matrix.

Recall by embedding compares a query with every vector an owner has. Read row by row
from the database and compared in Python, that costs seconds at 100,000 entries; here the
vectors are read once into a float32 matrix (numpy), and a query is one matrix-vector
product followed by an exact re-ranking of the best candidates, in float64 with the
formula recall has always used, so the ranking is the exact one.

A backend keeps one index per (owner, model), stamped with the owner's *version*: a
counter every write to the owner's rows increments in the same transaction (in every
process). A recall first reads the version: unchanged, the index answers; moved by this
process's own writes only, the index has already followed them; moved by anyone else,
the index is read again. Expired rows stay in the matrix and are masked by their expiry
at query time, so purging them needs no new version.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Final

from weft.errors import RecallError

if TYPE_CHECKING:
    import numpy as np

    Matrix = np.ndarray[Any, Any]

Key = tuple[str, str]
"""(namespace, key) of a row."""

VectorRow = tuple[str, str, float | None, bytes | None]
"""(namespace, key, expires_at, vector) as a backend reads it; no vector from this model: None."""

MARGIN: Final = 64
"""Candidates taken beyond ``limit`` by the float32 product before the exact re-ranking, so
that rounding in float32 cannot push a row out of the exact top ``limit``."""


def _numpy() -> Any:
    import numpy

    return numpy


class VectorIndex:
    """One owner's vectors from one model (see the module docstring)."""

    def __init__(self, version: int, rows: Sequence[VectorRow]) -> None:
        np = _numpy()
        self.version = version
        self._slot: dict[Key, int] = {}
        self._keys: list[Key] = []
        self.missing: dict[Key, float | None] = {}
        """Rows of the owner without a vector from this model, with their expiry."""
        self._namespaces: dict[str, int] = {}
        blobs: list[bytes] = []
        expires: list[float] = []
        codes: list[int] = []
        for namespace, key, expires_at, blob in rows:
            if blob is None:
                self.missing[(namespace, key)] = expires_at
                continue
            self._slot[(namespace, key)] = len(self._keys)
            self._keys.append((namespace, key))
            blobs.append(blob)
            expires.append(math.inf if expires_at is None else expires_at)
            codes.append(self._namespaces.setdefault(namespace, len(self._namespaces)))
        self.dimensions = len(blobs[0]) // 4 if blobs else 0
        if any(len(blob) != 4 * self.dimensions for blob in blobs):
            raise RecallError(
                "the vectors kept under one embedding model have different lengths; was "
                "the model changed without changing its name? Give the new model a new name"
            )
        size = len(blobs)
        capacity = max(16, size + size // 4)
        self._matrix: Matrix = np.zeros((capacity, max(self.dimensions, 1)), dtype=np.float32)
        if size:
            flat = np.frombuffer(b"".join(blobs), dtype="<f4")
            self._matrix[:size] = flat.reshape(size, self.dimensions)
        self._norms: Matrix = np.zeros(capacity, dtype=np.float64)
        for start in range(0, size, 8192):  # in float64, a block at a time
            block = self._exact(slice(start, min(start + 8192, size)))
            self._norms[start : start + len(block)] = np.sqrt(np.einsum("ij,ij->i", block, block))
        self._expires: Matrix = np.full(capacity, -math.inf, dtype=np.float64)
        self._expires[:size] = expires
        self._codes: Matrix = np.full(capacity, -1, dtype=np.int32)
        self._codes[:size] = codes
        self._size = size

    def __len__(self) -> int:
        return len(self._slot)

    def put(self, key: Key, expires_at: float | None) -> None:
        """The row was written: its vector is gone until it is embedded again."""
        self.delete(key)
        self.missing[key] = expires_at

    def delete(self, key: Key) -> None:
        """The row is gone."""
        self.missing.pop(key, None)
        slot = self._slot.pop(key, None)
        if slot is not None:
            self._expires[slot] = -math.inf  # never live again; the slot is not reused

    def forget(self, key: Key) -> None:
        """The row's vector from this model was replaced by another model's."""
        slot = self._slot.pop(key, None)
        if slot is not None:
            expires = float(self._expires[slot])
            self._expires[slot] = -math.inf
            self.missing[key] = None if expires == math.inf else expires

    def set(self, key: Key, blob: bytes) -> None:
        """The row has a vector from this model now."""
        if key not in self.missing and key not in self._slot:
            return  # a row that does not exist: the backend stored nothing either
        np = _numpy()
        if not self._slot and not self.dimensions:
            self.dimensions = len(blob) // 4
            self._matrix = np.zeros((self._matrix.shape[0], self.dimensions), dtype=np.float32)
        if len(blob) != 4 * self.dimensions:
            raise RecallError(
                f"a vector of {len(blob) // 4} dimensions given where this model's vectors "
                f"have {self.dimensions}; was the model changed without changing its name?"
            )
        expires_at = self.missing.pop(key, None)
        old = self._slot.pop(key, None)
        if old is not None:
            expires_at = None if self._expires[old] == math.inf else float(self._expires[old])
            self._expires[old] = -math.inf
        if self._size == self._matrix.shape[0]:
            self._grow(np)
        slot = self._size
        self._size += 1
        self._slot[key] = slot
        self._keys.append(key)
        self._matrix[slot] = np.frombuffer(blob, dtype="<f4")
        exact = self._exact(slice(slot, slot + 1))
        self._norms[slot] = math.sqrt(float(exact[0] @ exact[0]))
        self._expires[slot] = math.inf if expires_at is None else expires_at
        self._codes[slot] = self._namespaces.setdefault(key[0], len(self._namespaces))

    def nearest(
        self,
        target: Sequence[float],
        *,
        namespaces: Sequence[str] | None,
        limit: int,
        now: float,
    ) -> list[tuple[Key, float]]:
        """The ``limit`` live rows most similar to ``target`` with a positive cosine
        similarity, most similar first, ties by namespace and key."""
        if not self._slot or limit <= 0:
            return []
        np = _numpy()
        if len(target) != self.dimensions:
            raise RecallError(
                f"vectors of {len(target)} and {self.dimensions} dimensions cannot be "
                "compared; was the embedding model changed without changing its name?"
            )
        size = self._size
        query = np.asarray(target, dtype=np.float64)
        query_norm = math.sqrt(float(query @ query))
        if query_norm == 0:
            return []
        # one pass over the matrix (memory-bound: einsum streams it faster than BLAS's gemv
        # on a busy machine, measured in bench/bench_recall.py)
        scores = np.einsum("ij,j->i", self._matrix[:size], query.astype(np.float32))
        live = self._expires[:size] > now
        if namespaces is not None:
            wanted = [self._namespaces[n] for n in namespaces if n in self._namespaces]
            live &= np.isin(self._codes[:size], wanted)
        live &= self._norms[:size] > 0
        approx = np.where(live, scores / np.where(live, self._norms[:size], 1.0), -np.inf)
        count = int(live.sum())
        if count == 0:
            return []
        take = min(limit + MARGIN, count)
        if take < size:
            candidates = np.argpartition(-approx, take - 1)[:take]
        else:
            candidates = np.flatnonzero(live)
        candidates = candidates[live[candidates]]
        exact = (self._exact(candidates) @ query) / (self._norms[candidates] * query_norm)
        ranked = [
            (self._keys[int(slot)], float(similarity))
            for slot, similarity in zip(candidates, exact, strict=True)
            if similarity > 0
        ]
        ranked.sort(key=lambda pair: (-pair[1], pair[0]))
        return ranked[:limit]

    def _exact(self, rows: Any) -> Matrix:
        matrix: Matrix = self._matrix[rows].astype("float64")
        return matrix

    def _grow(self, np: Any) -> None:
        capacity = 2 * self._matrix.shape[0]
        for name, fill in (("_norms", 0.0), ("_expires", -math.inf), ("_codes", -1)):
            old = getattr(self, name)
            new = np.full(capacity, fill, dtype=old.dtype)
            new[: old.shape[0]] = old
            setattr(self, name, new)
        matrix = np.zeros((capacity, self._matrix.shape[1]), dtype=np.float32)
        matrix[: self._size] = self._matrix[: self._size]
        self._matrix = matrix
