"""Embedding recall through the backends' vector indexes: the exact ranking, kept current.

The reference below is recall by embedding as it was before the indexes: every vector
compared with the query in Python (cosine similarity, positive only, ties by namespace
and key). Every backend must give the same answers, through its own writes, the writes
of another backend object on the same database, expiry, namespaces and growth.
"""

from __future__ import annotations

import math
import random
import uuid
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest
import test_long_term
from test_long_term import PG, Clock

from weft.errors import RecallError
from weft.memory import (
    HashingEmbedder,
    InMemoryMemoryBackend,
    LongTermMemory,
    Owner,
    PostgresMemoryBackend,
    SQLiteMemoryBackend,
)
from weft.memory.backends.base import MemoryBackend
from weft.memory.recall import recall

backend = test_long_term.backend
clock = test_long_term.clock

OWNER = "user:ada"
MODEL = "m"
DIMENSIONS = 16


def reference(
    rows: dict[tuple[str, str], tuple[list[float], float | None]],
    query: Sequence[float],
    *,
    limit: int,
    now: float,
    namespaces: Sequence[str] | None = None,
) -> list[tuple[str, str]]:
    """The exact ranking, computed the way recall always has, in plain Python."""

    def cosine(a: Sequence[float], b: Sequence[float]) -> float:
        dot = sum(x * y for x, y in zip(a, b, strict=True))
        norm = math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b))
        return dot / norm if norm else 0.0

    scored = [
        (key, cosine(query, vector))
        for key, (vector, expires) in rows.items()
        if (expires is None or expires > now) and (namespaces is None or key[0] in namespaces)
    ]
    scored = [(key, s) for key, s in scored if s > 0]
    scored.sort(key=lambda pair: (-pair[1], pair[0]))
    return [key for key, _ in scored[:limit]]


def as_float32(vector: Sequence[float]) -> list[float]:
    """What a backend gives back: vectors are kept as float32."""
    import array

    return array.array("f", vector).tolist()


def fill(
    backend: MemoryBackend, count: int, seed: int
) -> dict[tuple[str, str], tuple[list[float], float | None]]:
    """``count`` rows in three namespaces, some expiring at 50, each with a vector."""
    rng = random.Random(seed)
    rows: dict[tuple[str, str], tuple[list[float], float | None]] = {}
    for i in range(count):
        key = (("notes", "facts", "prefs")[i % 3], f"k{i:05d}")
        expires = 50.0 if i % 7 == 0 else None
        backend.put(OWNER, *key, i, text=f"entry {i}", expires_at=expires, now=1.0)
        vector = [rng.gauss(0, 1) for _ in range(DIMENSIONS)]
        if i % 11 == 0:
            vector = list(rows[next(iter(rows))][0]) if rows else vector  # exact ties
        rows[key] = (as_float32(vector), expires)
    backend.set_vectors(OWNER, MODEL, [(*key, vector) for key, (vector, _) in rows.items()])
    return rows


def nearest_keys(
    backend: MemoryBackend, query: Sequence[float], **options: object
) -> list[tuple[str, str]]:
    found = backend.nearest(OWNER, MODEL, query, **options)  # type: ignore[arg-type]
    return [(record.namespace, record.key) for record, _ in found]


def test_the_index_ranks_exactly_as_comparing_every_vector_does(backend: MemoryBackend) -> None:
    rows = fill(backend, 600, seed=1)
    rng = random.Random(2)
    for _ in range(20):
        query = [rng.gauss(0, 1) for _ in range(DIMENSIONS)]
        for limit, now, namespaces in [(20, 10.0, None), (5, 60.0, None), (30, 60.0, ["facts"])]:
            expected = reference(rows, query, limit=limit, now=now, namespaces=namespaces)
            found = nearest_keys(backend, query, limit=limit, now=now, namespaces=namespaces)
            assert found == expected


def test_the_index_follows_this_backends_writes_without_reading_again(
    backend: MemoryBackend,
) -> None:
    rows = fill(backend, 100, seed=3)
    query = [1.0] * DIMENSIONS
    assert nearest_keys(backend, query, limit=10, now=10.0) == reference(
        rows, query, limit=10, now=10.0
    )
    index = backend._indexes[(OWNER, MODEL)]

    backend.put(OWNER, "notes", "new", "v", text="new", expires_at=None, now=2.0)
    assert [r.key for r in backend.unembedded(OWNER, MODEL, now=10.0)] == ["new"]
    backend.set_vectors(OWNER, MODEL, [("notes", "new", query)])
    rows[("notes", "new")] = (query, None)
    assert backend.delete(OWNER, "facts", "k00001")
    del rows[("facts", "k00001")]
    backend.put(OWNER, "prefs", "k00002", "v2", text="changed", expires_at=None, now=3.0)
    del rows[("prefs", "k00002")]  # a rewritten row has no vector until it is embedded again

    assert backend._indexes[(OWNER, MODEL)] is index
    found = nearest_keys(backend, query, limit=10, now=10.0)
    assert found[0] == ("notes", "new")
    assert found == reference(rows, query, limit=10, now=10.0)
    assert ("prefs", "k00002") in {
        (r.namespace, r.key) for r in backend.unembedded(OWNER, MODEL, now=10.0)
    }


def two_views(kind: str, tmp_path: Path) -> Iterator[tuple[MemoryBackend, MemoryBackend]]:
    if kind == "sqlite":
        with (
            SQLiteMemoryBackend(tmp_path / "weft.db") as first,
            SQLiteMemoryBackend(tmp_path / "weft.db") as second,
        ):
            yield first, second
        return
    schema = f"t_{uuid.uuid4().hex[:12]}"
    first = PostgresMemoryBackend(PG, schema=schema, timeout=5)
    second = PostgresMemoryBackend(PG, schema=schema, timeout=5)
    try:
        yield first, second
    finally:
        first.close()
        second.close()
        import psycopg

        with psycopg.connect(PG, autocommit=True) as conn:
            conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


@pytest.fixture(params=["sqlite", "postgres"])
def views(
    request: pytest.FixtureRequest, tmp_path: Path
) -> Iterator[tuple[MemoryBackend, MemoryBackend]]:
    yield from two_views(request.param, tmp_path)


def test_another_writer_on_the_same_database_is_seen_by_the_next_recall(
    views: tuple[MemoryBackend, MemoryBackend],
) -> None:
    reader, writer = views
    rows = fill(writer, 60, seed=4)
    query = [0.5] * DIMENSIONS
    assert nearest_keys(reader, query, limit=5, now=10.0) == reference(
        rows, query, limit=5, now=10.0
    )

    writer.put(OWNER, "notes", "theirs", "v", text="theirs", expires_at=None, now=2.0)
    writer.set_vectors(OWNER, MODEL, [("notes", "theirs", query)])
    assert nearest_keys(reader, query, limit=1, now=10.0) == [("notes", "theirs")]

    writer.delete(OWNER, "notes", "theirs")
    assert ("notes", "theirs") not in nearest_keys(reader, query, limit=60, now=10.0)

    # the reader's own write after the other's: its index is behind, so it reads again
    writer.put(OWNER, "facts", "later", "v", text="later", expires_at=None, now=3.0)
    writer.set_vectors(OWNER, MODEL, [("facts", "later", query)])
    reader.put(OWNER, "notes", "mine", "v", text="mine", expires_at=None, now=4.0)
    reader.set_vectors(OWNER, MODEL, [("notes", "mine", [-x for x in query])])
    assert nearest_keys(reader, query, limit=1, now=10.0) == [("facts", "later")]


def test_recall_gives_the_same_hits_as_before_at_a_larger_size(
    backend: MemoryBackend, clock: Clock
) -> None:
    embedder = HashingEmbedder(64)
    memory = LongTermMemory(backend, owner=Owner(user_id="ada"), embedder=embedder, clock=clock)
    words = ["tea", "boss", "dog", "walk", "rain", "train", "book", "garden", "tax", "piano"]
    rng = random.Random(5)
    texts = {f"k{i:04d}": " ".join(rng.sample(words, 3)) for i in range(400)}
    for key, text in texts.items():
        memory.put("notes", key, text, text=text)
    query = "boss walks the dog in the rain"
    result = memory.recall(query, k=8)
    assert result.path == "hybrid_rrf"

    # the same fusion over a ranking made by comparing every vector in Python
    vectors = dict(zip(texts, embedder.embed(list(texts.values())), strict=True))
    rows = {("notes", key): (as_float32(v), None) for key, v in vectors.items()}
    pool = max(4 * 8, 20)
    by_embedding = reference(rows, embedder.embed([query])[0], limit=pool, now=clock())
    tokens = backend.search(memory.owner, query, limit=pool, now=clock())
    from weft.memory.recall import rrf

    fused = rrf([[(r.namespace, r.key) for r, _ in tokens], by_embedding])[:8]
    assert [(h.record.namespace, h.record.key) for h in result.hits] == [k for k, _ in fused]


def test_the_index_grows_past_what_it_was_read_with() -> None:
    backend = InMemoryMemoryBackend()
    rows = fill(backend, 10, seed=6)
    query = [1.0] + [0.0] * (DIMENSIONS - 1)
    nearest_keys(backend, query, limit=1, now=10.0)  # the index is read with 10 rows
    rng = random.Random(7)
    for i in range(200):
        key = ("notes", f"more{i:03d}")
        vector = as_float32([rng.gauss(0, 1) for _ in range(DIMENSIONS)])
        backend.put(OWNER, *key, i, text="more", expires_at=None, now=2.0)
        backend.set_vectors(OWNER, MODEL, [(*key, vector)])
        rows[key] = (vector, None)
    assert nearest_keys(backend, query, limit=50, now=10.0) == reference(
        rows, query, limit=50, now=10.0
    )


def test_vectors_of_another_length_under_one_model_are_a_recall_error() -> None:
    backend = InMemoryMemoryBackend()
    fill(backend, 5, seed=8)
    with pytest.raises(RecallError, match=r"16 dimensions.*changing its name"):
        backend.nearest(OWNER, MODEL, [1.0, 2.0], limit=3, now=10.0)
    backend.put(OWNER, "notes", "odd", "v", text="odd", expires_at=None, now=2.0)
    with pytest.raises(RecallError, match="3 dimensions"):
        backend.set_vectors(OWNER, MODEL, [("notes", "odd", [1.0, 2.0, 3.0])])


@pytest.mark.parametrize(
    "vectors",
    [[[float("nan")] * 4], [["x", "y"]], [[math.inf, 1.0]], "not a list"],
    ids=["nan", "strings", "infinite", "text"],
)
def test_an_embedder_sending_non_numbers_falls_back_to_token_recall(vectors: object) -> None:
    class Hostile:
        name = "hostile"

        def embed(self, texts: Sequence[str]) -> object:
            return vectors if isinstance(vectors, str) else vectors * len(texts)

    backend = InMemoryMemoryBackend()
    backend.put(OWNER, "notes", "tea", "v", text="green tea", expires_at=None, now=1.0)
    result = recall(backend, OWNER, "tea", embedder=Hostile(), now=2.0)  # type: ignore[arg-type]
    assert result.path == "token_recall_after_embed_error"
    assert result.error is not None and "RecallError" in result.error
    assert [h.record.key for h in result.hits] == ["tea"]
    assert backend.unembedded(OWNER, "hostile", now=2.0)[0].key == "tea"  # nothing stored


def test_a_backend_keeps_a_bounded_number_of_indexes() -> None:
    backend = InMemoryMemoryBackend()
    backend.INDEXED_OWNERS = 3
    for i in range(5):
        owner = f"user:{i}"
        backend.put(owner, "notes", "k", "v", text="t", expires_at=None, now=1.0)
        backend.set_vectors(owner, MODEL, [("notes", "k", [1.0, 0.0])])
        assert [r.key for r, _ in backend.nearest(owner, MODEL, [1.0, 0.0], limit=1, now=2)] == [
            "k"
        ]
    assert sorted(backend._indexes) == [(f"user:{i}", MODEL) for i in (2, 3, 4)]
