"""Recall: token (FTS5 / PostgreSQL full text / BM25), embedding, and hybrid RRF."""

from __future__ import annotations

import sys
import types
from collections.abc import Sequence
from typing import Any

import pytest
import test_long_term
from test_long_term import Clock

from weft.errors import ModelConfigError
from weft.memory import (
    HashingEmbedder,
    InMemoryMemoryBackend,
    LongTermMemory,
    MemoryBackend,
    Owner,
    RecallResult,
    SentenceTransformerEmbedder,
)
from weft.memory.recall import RRF_K, EmbeddingProvider, rrf

backend = test_long_term.backend  # the same fixtures: memory, SQLite and PostgreSQL
clock = test_long_term.clock

NOTES = {
    "n1": "my boss is terrible and work is stressful",
    "n2": "I love hiking in the mountains on weekends",
    "n3": "the boss asked for the quarterly report again",
    "n4": "green tea in the morning, never coffee",
}


class Counting:
    """Wraps an embedder and counts the texts it was asked to embed."""

    def __init__(self, inner: EmbeddingProvider, name: str | None = None) -> None:
        self.inner = inner
        self.name = name or inner.name
        self.texts: list[str] = []

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        self.texts += texts
        return self.inner.embed(texts)


class Broken:
    name = "broken-model"

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        raise ConnectionError("embedding service unreachable")


def filled(
    backend: MemoryBackend, clock: Clock, embedder: EmbeddingProvider | None = None, user: str = "u"
) -> LongTermMemory:
    memory = LongTermMemory(backend, owner=Owner(user_id=user), embedder=embedder, clock=clock)
    for key, text in NOTES.items():
        memory.put("notes", key, text)
    return memory


def keys(result: RecallResult) -> list[str]:
    return [hit.record.key for hit in result.hits]


def test_token_recall_ranks_matching_entries_best_first(
    backend: MemoryBackend, clock: Clock
) -> None:
    result = filled(backend, clock).recall("boss report", k=3)
    assert result.path == "token_recall"
    assert keys(result) == ["n3", "n1"]  # n3 has both words
    assert result.hits[0].score > result.hits[1].score > 0
    assert [h.token_rank for h in result.hits] == [1, 2]


def test_token_recall_needs_a_word_that_is_not_a_stopword(
    backend: MemoryBackend, clock: Clock
) -> None:
    memory = filled(backend, clock)
    assert memory.recall("").hits == []
    assert memory.recall("is the my and").hits == []
    # query syntax of FTS5 or tsquery is only text here: it can neither fail nor inject
    assert set(keys(memory.recall('"boss" OR (tea) -- NEAR/3 * AND NOT:x', k=10))) == {
        "n1",
        "n3",
        "n4",
    }


def test_recall_is_limited_to_namespaces(backend: MemoryBackend, clock: Clock) -> None:
    memory = filled(backend, clock)
    memory.put("diary", "d1", "my boss again")
    assert {h.record.namespace for h in memory.recall("boss", namespaces=["diary"]).hits} == {
        "diary"
    }
    assert len(memory.recall("boss", k=10).hits) == 3


def test_hybrid_recall_fuses_both_rankings(backend: MemoryBackend, clock: Clock) -> None:
    result = filled(backend, clock, HashingEmbedder()).recall("boss report", k=4)
    assert result.path == "hybrid_rrf"
    assert keys(result)[:2] == ["n3", "n1"]
    top = result.hits[0]
    assert top.token_rank == 1 and top.embedding_rank is not None
    assert top.score == pytest.approx(1 / (RRF_K + 1) + 1 / (RRF_K + top.embedding_rank))


def test_embeddings_find_what_tokens_miss(backend: MemoryBackend, clock: Clock) -> None:
    memory = filled(backend, clock, HashingEmbedder())
    result = memory.recall("bos", k=2)  # a typo: no token matches, its letters do
    assert result.path == "hybrid_rrf"
    assert set(keys(result)) == {"n1", "n3"}
    assert all(h.token_rank is None and h.embedding_rank for h in result.hits)


def test_a_failing_embedder_falls_back_to_token_recall(
    backend: MemoryBackend, clock: Clock
) -> None:
    result = filled(backend, clock, Broken()).recall("boss")
    assert result.path == "token_recall_after_embed_error"
    assert result.error == "ConnectionError: embedding service unreachable"
    assert set(keys(result)) == {"n1", "n3"}


def test_an_embedder_returning_the_wrong_count_is_an_embed_error(
    backend: MemoryBackend, clock: Clock
) -> None:
    class Short:
        name = "short"

        def embed(self, texts: Sequence[str]) -> list[list[float]]:
            return [[1.0]]

    result = filled(backend, clock, Short()).recall("boss")
    assert result.path == "token_recall_after_embed_error"
    assert "1 vectors for 4 texts" in (result.error or "")


def test_vectors_are_computed_once_and_again_when_text_or_model_change(
    backend: MemoryBackend, clock: Clock
) -> None:
    counting = Counting(HashingEmbedder())
    memory = filled(backend, clock, counting)
    memory.recall("boss")
    assert sorted(counting.texts) == sorted([*NOTES.values(), "boss"])
    counting.texts.clear()
    memory.recall("tea")
    assert counting.texts == ["tea"]  # stored vectors reused
    counting.texts.clear()
    memory.put("notes", "n4", "black coffee only")
    memory.recall("tea")
    assert counting.texts == ["black coffee only", "tea"]
    other = Counting(HashingEmbedder(), name="another-model")
    LongTermMemory(backend, owner=Owner(user_id="u"), embedder=other, clock=clock).recall("x")
    assert len(other.texts) == 5


def test_no_recall_path_reaches_another_owner(backend: MemoryBackend, clock: Clock) -> None:
    filled(backend, clock, HashingEmbedder(), user="alice")
    bob = LongTermMemory(
        backend, owner=Owner(user_id="bob"), embedder=HashingEmbedder(), clock=clock
    )
    bob.put("notes", "b1", "nothing relevant here")
    for query in ("boss", "bos", "tea hiking report"):
        for hit in bob.recall(query, k=10).hits:
            assert hit.record.owner == "user:bob"
            assert hit.record.key == "b1"


def test_rrf_sums_reciprocal_ranks() -> None:
    fused = rrf([[("n", "a"), ("n", "b")], [("n", "b"), ("n", "c")]])
    assert [item for item, _ in fused] == [("n", "b"), ("n", "a"), ("n", "c")]
    assert fused[0][1] == pytest.approx(1 / 62 + 1 / 61)
    assert rrf([]) == []


def test_the_hashing_embedder_is_deterministic_and_normalised() -> None:
    one, two = HashingEmbedder(64).embed(["my boss", "my boss"])
    assert one == two and len(one) == 64
    assert sum(x * x for x in one) == pytest.approx(1.0)
    assert HashingEmbedder(64).embed([""]) == [[0.0] * 64]


def test_sentence_transformers_adapter_loads_the_model_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """No model weights can be downloaded here: a fake module stands in for the package."""
    made: list[tuple[str, Any]] = []

    class FakeModel:
        def __init__(self, name: str, device: Any = None) -> None:
            made.append((name, device))

        def encode(self, texts: list[str], **options: Any) -> list[list[float]]:
            assert options["normalize_embeddings"] is True
            return [[float(len(t)), 1.0] for t in texts]

    fake = types.ModuleType("sentence_transformers")
    fake.SentenceTransformer = FakeModel  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "sentence_transformers", fake)
    embedder = SentenceTransformerEmbedder("some/model", device="cpu")
    assert embedder.embed(["ab", "abc"]) == [[2.0, 1.0], [3.0, 1.0]]
    assert embedder.embed(["a"]) == [[1.0, 1.0]]
    assert made == [("some/model", "cpu")]
    assert embedder.name == "sentence-transformers:some/model"
    assert isinstance(embedder, EmbeddingProvider)


def test_a_missing_sentence_transformers_package_says_how_to_install(
    monkeypatch: pytest.MonkeyPatch, clock: Clock
) -> None:
    monkeypatch.setitem(sys.modules, "sentence_transformers", None)
    with pytest.raises(ModelConfigError, match=r"pip install 'weft\[embeddings\]'"):
        SentenceTransformerEmbedder().embed(["x"])
    result = filled(InMemoryMemoryBackend(), clock, SentenceTransformerEmbedder()).recall("boss")
    assert result.path == "token_recall_after_embed_error"
    assert "weft[embeddings]" in (result.error or "")
