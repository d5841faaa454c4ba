"""Recall over one owner's long-term memory: token, embedding, and hybrid (RRF).

- Token recall is the backend's own full-text search (SQLite FTS5 + ``bm25()``,
  PostgreSQL ``ts_rank``, a Python BM25 in memory).
- Embedding recall, when an ``EmbeddingProvider`` is given, ranks the owner's entries
  by cosine similarity to the query. Vectors are computed on first recall and kept in
  the backend under the provider's ``name``, so a new model recomputes them; the backend
  keeps them in memory as one matrix per owner (``weft.memory.vector_index``), so a
  recall over 100,000 entries is one matrix product, not 100,000 comparisons in Python.
- Hybrid recall fuses the two rankings by reciprocal-rank fusion, ``score = sum of
  1 / (60 + rank)`` over the rankings an entry appears in.

The result says which path ran, in ``diagnostics.retrieval_path``:
``hybrid_rrf``, ``token_recall`` (no provider), or ``token_recall_after_embed_error``
(the provider failed: its error is in ``RecallResult.error``, and the token hits are
returned). Every query is scoped to the owner in the backend, so no path can return
another owner's entries.
"""

from __future__ import annotations

import hashlib
import logging
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Literal, Protocol, runtime_checkable

from weft.errors import ModelConfigError, RecallError
from weft.memory.backends.base import MemoryBackend, MemoryRecord
from weft.memory.backends.text import tokens

logger: Final = logging.getLogger("weft.memory")

RRF_K: Final = 60
"""The constant of reciprocal-rank fusion (Cormack et al.): ranks 1 and 2 differ little."""

RecallPath = Literal["hybrid_rrf", "token_recall", "token_recall_after_embed_error", "recent"]
"""Which path answered; ``recent`` is ``LongTermMemory.working_memory`` without a query."""


@runtime_checkable
class EmbeddingProvider(Protocol):
    """Turns texts into vectors. ``name`` identifies the model (vectors are kept per name)."""

    name: str

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """One vector per text, all of one length."""
        ...


@dataclass(frozen=True, slots=True, kw_only=True)
class RecallHit:
    """One recalled entry: its fused (or token) score and its rank in each ranking."""

    record: MemoryRecord
    score: float
    token_rank: int | None = None
    embedding_rank: int | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class RecallResult:
    """The hits, best first, and which path produced them."""

    path: RecallPath
    hits: list[RecallHit] = field(default_factory=list)
    error: str | None = None

    def values(self) -> list[Any]:
        """The recalled values, best first."""
        return [hit.record.value for hit in self.hits]


class HashingEmbedder:
    """A deterministic embedder for tests and demos: no model, no download.

    Each word and each of its 3-letter pieces is hashed (BLAKE2b, so the same in every
    process) to a signed dimension; the vector is L2-normalised. Texts that share words
    or word stems come out close, unrelated texts near orthogonal.
    """

    def __init__(self, dimensions: int = 256) -> None:
        self.dimensions = dimensions
        self.name = f"weft-hashing-{dimensions}"

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        return [self._one(text) for text in texts]

    def _one(self, text: str) -> list[float]:
        vector = [0.0] * self.dimensions
        for word in tokens(text):
            self._add(vector, word, 1.0)
            padded = f"<{word}>"
            for i in range(len(padded) - 2):
                self._add(vector, padded[i : i + 3], 0.35)
        norm = math.sqrt(sum(x * x for x in vector)) or 1.0
        return [x / norm for x in vector]

    def _add(self, vector: list[float], piece: str, weight: float) -> None:
        digest = hashlib.blake2b(piece.encode(), digest_size=8).digest()
        number = int.from_bytes(digest, "little")
        vector[number % self.dimensions] += weight if number >> 63 else -weight


class SentenceTransformerEmbedder:
    """Embeddings from a sentence-transformers model (``pip install 'weft[embeddings]'``).

    The package and the model load on the first ``embed`` call; vectors are normalised,
    so cosine similarity is their dot product.
    """

    def __init__(
        self,
        model: str = "sentence-transformers/all-MiniLM-L6-v2",
        *,
        device: str | None = None,
        batch_size: int = 32,
    ) -> None:
        self.model = model
        self.device = device
        self.batch_size = batch_size
        self.name = f"sentence-transformers:{model}"
        self._model: Any = None

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        if self._model is None:
            try:
                from sentence_transformers import (  # type: ignore[import-not-found,unused-ignore]
                    SentenceTransformer,
                )
            except ImportError as exc:
                raise ModelConfigError(
                    "SentenceTransformerEmbedder needs the sentence-transformers package: "
                    "pip install 'weft[embeddings]'"
                ) from exc
            self._model = SentenceTransformer(self.model, device=self.device)
        vectors = self._model.encode(
            list(texts),
            batch_size=self.batch_size,
            normalize_embeddings=True,
            show_progress_bar=False,
        )
        return [[float(x) for x in vector] for vector in vectors]


def rrf(
    rankings: Sequence[Sequence[tuple[str, str]]], k: int = RRF_K
) -> list[tuple[tuple[str, str], float]]:
    """Reciprocal-rank fusion of rankings of (namespace, key): fused scores, best first
    (ties broken by namespace and key, so the order never depends on dict order)."""
    scores: dict[tuple[str, str], float] = {}
    for ranking in rankings:
        for rank, item in enumerate(ranking, start=1):
            scores[item] = scores.get(item, 0.0) + 1.0 / (k + rank)
    return sorted(scores.items(), key=lambda pair: (-pair[1], pair[0]))


def recall(
    memory: MemoryBackend,
    owner: str,
    query: str,
    *,
    namespaces: Sequence[str] | None = None,
    k: int = 5,
    embedder: EmbeddingProvider | None = None,
    now: float,
) -> RecallResult:
    """The ``k`` entries of ``owner`` that best match ``query`` (see the module docstring)."""
    pool = max(4 * k, 20)
    token_hits = memory.search(owner, query, namespaces=namespaces, limit=pool, now=now)
    if embedder is None:
        return RecallResult(path="token_recall", hits=_token_only(token_hits, k))
    try:
        similar = _by_embedding(memory, owner, query, embedder, namespaces, pool, now)
    except Exception as exc:
        logger.warning(
            "embedding recall with %s failed, so token recall answered: %s: %s",
            getattr(embedder, "name", embedder),
            type(exc).__name__,
            exc,
        )
        return RecallResult(
            path="token_recall_after_embed_error",
            hits=_token_only(token_hits, k),
            error=f"{type(exc).__name__}: {exc}",
        )
    records = {(r.namespace, r.key): r for r, _ in [*token_hits, *similar]}
    token_order = [(r.namespace, r.key) for r, _ in token_hits]
    embed_order = [(r.namespace, r.key) for r, _ in similar]
    token_rank = {item: i for i, item in enumerate(token_order, start=1)}
    embed_rank = {item: i for i, item in enumerate(embed_order, start=1)}
    hits = [
        RecallHit(
            record=records[item],
            score=score,
            token_rank=token_rank.get(item),
            embedding_rank=embed_rank.get(item),
        )
        for item, score in rrf([token_order, embed_order])[:k]
    ]
    return RecallResult(path="hybrid_rrf", hits=hits)


def _token_only(found: list[tuple[MemoryRecord, float]], k: int) -> list[RecallHit]:
    return [
        RecallHit(record=record, score=score, token_rank=rank)
        for rank, (record, score) in enumerate(found[:k], start=1)
    ]


def _by_embedding(
    memory: MemoryBackend,
    owner: str,
    query: str,
    embedder: EmbeddingProvider,
    namespaces: Sequence[str] | None,
    limit: int,
    now: float,
) -> list[tuple[MemoryRecord, float]]:
    """The ``limit`` entries of the owner most similar to the query (positive similarity
    only), most similar first: entries without a vector from this embedder are embedded
    and stored first, then the backend's vector index ranks them all."""
    missing = memory.unembedded(owner, embedder.name, namespaces=namespaces, now=now)
    if missing:
        vectors = _checked(embedder.embed([r.text for r in missing]), len(missing), embedder)
        memory.set_vectors(
            owner,
            embedder.name,
            [(r.namespace, r.key, v) for r, v in zip(missing, vectors, strict=True)],
        )
    target = _checked(embedder.embed([query]), 1, embedder)[0]
    return memory.nearest(owner, embedder.name, target, namespaces=namespaces, limit=limit, now=now)


def _checked(vectors: Any, count: int, embedder: EmbeddingProvider) -> list[list[float]]:
    if not isinstance(vectors, list) or len(vectors) != count:
        raise RecallError(
            f"embedder {embedder.name!r} returned {type(vectors).__name__} of "
            f"{len(vectors) if hasattr(vectors, '__len__') else '?'} vectors for {count} texts"
        )
    try:
        checked = [[float(x) for x in vector] for vector in vectors]
    except (TypeError, ValueError) as exc:
        raise RecallError(
            f"embedder {embedder.name!r} returned something that is not a list of numbers: {exc}"
        ) from exc
    if not all(math.isfinite(x) for vector in checked for x in vector):
        raise RecallError(f"embedder {embedder.name!r} returned NaN or infinite numbers")
    return checked
