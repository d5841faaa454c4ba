"""Long-term recall at scale: 10,000 and 100,000 entries of one owner, SQLite and PostgreSQL.

Run: .venv/bin/python bench/bench_recall.py [--quick] [--sizes 10000,100000]

Each entry has a 384-dimension vector (the size of all-MiniLM-L6-v2's) already stored,
so no column includes embedding the entries; the query's vector comes from a table
lookup, so no column includes a model either. Columns:

- *first recall*: a backend object that has never recalled for this owner: it reads the
  owner's vectors into its index, then answers (once per process and owner, and again
  after another process writes).
- *recall*: ``LongTermMemory.recall(query, k=5)`` on a warm index: the token search of the
  database (FTS5 / ``ts_rank``), the embedding ranking, their fusion, and reading the 20
  best rows.
- *after a write*: ``put`` of one entry, its vector stored, then a recall: the index
  follows this process's own writes without reading the owner's vectors again.
- *compare every row in Python*: what recall did before the index: every row and vector
  read from the database and compared with the query one by one (one sample).

The target is recall under 50 ms at 100,000 entries.
"""

from __future__ import annotations

import argparse
import math
import random
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from harness import block, machine, postgres_dsn, verdict

from weft.memory import LongTermMemory, Owner, PostgresMemoryBackend, SQLiteMemoryBackend
from weft.memory.backends.base import MemoryBackend, pack_vector, unpack_vector
from weft.persist.codec import encode_value
from weft.store import registry

DIMENSIONS = 384
MODEL = "bench-384"
TOPICS = [
    "tea",
    "boss",
    "dog",
    "walk",
    "rain",
    "train",
    "book",
    "garden",
    "tax",
    "piano",
    "river",
    "cake",
    "city",
    "paint",
]


class TableEmbedder:
    """Vectors looked up, not computed: the benchmark measures recall, not a model."""

    name = MODEL

    def __init__(self) -> None:
        self.known: dict[str, list[float]] = {}

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        return [self.known.setdefault(text, vector(random.Random(text))) for text in texts]


VOCABULARY = [f"{TOPICS[i % len(TOPICS)]}{i}" for i in range(5000)]
"""Content words (stopwords never reach a search); a text draws them by Zipf's law."""
WEIGHTS = [1.0 / rank for rank in range(1, len(VOCABULARY) + 1)]


def text_of(rng: random.Random) -> str:
    return " ".join(rng.choices(VOCABULARY, WEIGHTS, k=12))


def query_of(i: int) -> str:
    """Three words of the vocabulary past its 50 most common ones."""
    return " ".join(random.Random(i).sample(VOCABULARY[50:], 3))


def vector(rng: random.Random) -> list[float]:
    return [rng.gauss(0.0, 1.0) for _ in range(DIMENSIONS)]


def fill(backend: MemoryBackend, owner: str, count: int) -> None:
    """``count`` rows with vectors, written in large transactions (setup, not measured)."""
    rng = random.Random(count)
    insert = backend._sql(  # type: ignore[attr-defined]
        "INSERT INTO {memory} (owner, namespace, key, record, text, created_at, updated_at, "
        "expires_at, vector_model, vector) VALUES (?, ?, ?, ?, ?, ?, ?, NULL, ?, ?)"
    )
    bump = backend._sql(  # type: ignore[attr-defined]
        "INSERT INTO {memory_owners} AS o (owner, version) VALUES (?, 1) ON CONFLICT (owner) "
        "DO UPDATE SET version = o.version + 1"
    )
    for start in range(0, count, 5000):
        rows = []
        for i in range(start, min(count, start + 5000)):
            text = text_of(rng)
            record = encode_value(text, registry)
            rows.append((owner, "notes", f"k{i:06d}", record, text, 1.0, 1.0, MODEL))
        blobs = [pack_vector(vector(rng)) for _ in rows]
        with backend._db("bench fill", "write") as conn:  # type: ignore[attr-defined]
            cursor = conn.cursor()
            cursor.executemany(
                insert, [(*row, blob) for row, blob in zip(rows, blobs, strict=True)]
            )
            conn.execute(bump, (owner,))
    if isinstance(backend, PostgresMemoryBackend):
        # what autovacuum does after a bulk load, done now so that it does not run
        # during the measurements (planner statistics, GIN's pending list merged)
        import psycopg

        with psycopg.connect(postgres_dsn(), autocommit=True) as conn:
            conn.execute(f'VACUUM ANALYZE "{backend.schema}".memory')


def old_way(backend: MemoryBackend, owner: str, query: list[float], limit: int) -> list[str]:
    """Every row and vector read and compared in Python, as recall did before its index."""
    sql = backend._sql(  # type: ignore[attr-defined]
        "SELECT namespace, key, record, text, created_at, updated_at, expires_at, "
        "CASE WHEN vector_model = ? THEN vector END FROM {memory} WHERE owner = ? "
        "ORDER BY namespace, key"
    )
    with backend._db("bench old way") as conn:  # type: ignore[attr-defined]
        rows = conn.execute(sql, (MODEL, owner)).fetchall()
    scored = []
    for row in rows:
        record = backend._record(owner, tuple(row[:7]))  # type: ignore[arg-type]
        other = unpack_vector(bytes(row[7]))
        dot = sum(x * y for x, y in zip(query, other, strict=True))
        norm = math.sqrt(sum(x * x for x in query)) * math.sqrt(sum(y * y for y in other))
        if dot / norm > 0:
            scored.append((record, dot / norm))
    scored.sort(key=lambda pair: (-pair[1], pair[0].namespace, pair[0].key))
    return [record.key for record, _ in scored[:limit]]


@contextmanager
def sqlite(folder: Path) -> Iterator[Callable[[], MemoryBackend]]:
    path = folder / "recall.db"
    opened: list[MemoryBackend] = []

    def make() -> MemoryBackend:
        opened.append(SQLiteMemoryBackend(path))
        return opened[-1]

    try:
        yield make
    finally:
        for backend in opened:
            backend.close()


@contextmanager
def postgres() -> Iterator[Callable[[], MemoryBackend]]:
    schema = f"bench_{uuid.uuid4().hex[:10]}"
    opened: list[MemoryBackend] = []

    def make() -> MemoryBackend:
        opened.append(PostgresMemoryBackend(postgres_dsn(), schema=schema, timeout=10))
        return opened[-1]

    try:
        yield make
    finally:
        for backend in opened:
            backend.close()
        import psycopg

        with psycopg.connect(postgres_dsn(), autocommit=True) as conn:
            conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


def ms(seconds: float) -> str:
    return f"{seconds * 1000:,.1f} ms"


def measure(make: Callable[[], MemoryBackend], size: int, repeats: int) -> list[str]:
    owner = Owner(user_id=f"bench{size}")
    fill(make(), owner.key, size)
    embedder = TableEmbedder()
    queries = [query_of(i) for i in range(repeats)]

    fresh = LongTermMemory(make(), owner=owner, embedder=embedder)
    start = time.perf_counter()
    fresh.recall(queries[0], k=5)
    first = time.perf_counter() - start

    warm = []
    for query in queries:
        start = time.perf_counter()
        result = fresh.recall(query, k=5)
        warm.append(time.perf_counter() - start)
    assert result.path == "hybrid_rrf" and len(result.hits) == 5

    after = []
    for i in range(repeats):
        start = time.perf_counter()
        fresh.put("notes", f"new{i}", i, text=text_of(random.Random(-i)))
        fresh.recall(queries[i], k=5)
        after.append(time.perf_counter() - start)

    target = embedder.embed([queries[0]])[0]
    start = time.perf_counter()
    before = old_way(fresh.backend, owner.key, target, 20)
    old = time.perf_counter() - start
    index_top = fresh.backend.nearest(owner.key, MODEL, target, limit=20, now=time.time())
    assert [r.key for r, _ in index_top] == before, "the index must rank as before"
    recall = statistics.median(warm)
    return [
        f"{size:,}",
        ms(first),
        ms(recall),
        ms(statistics.median(after)),
        ms(old),
        f"{old / recall:,.0f}x",
        verdict(recall < 0.050) if size >= 100_000 else "",
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="10,000 entries, few repeats")
    parser.add_argument("--sizes", default="10000,100000")
    args = parser.parse_args()
    sizes = [10_000] if args.quick else [int(s) for s in args.sizes.split(",")]
    repeats = 5 if args.quick else 15
    lines = [
        "| backend | entries | first recall | recall | after a write | compare every row "
        "in Python | speed-up | under 50 ms |",
        "|---|---:|---:|---:|---:|---:|---:|---|",
    ]
    with tempfile.TemporaryDirectory() as folder:
        for name, opener in (("SQLite", lambda: sqlite(Path(folder))), ("PostgreSQL", postgres)):
            for size in sizes:
                try:
                    with opener() as make:
                        cells = measure(make, size, repeats)
                except Exception as exc:  # PostgreSQL down: say so, measure the rest
                    print(f"{name} at {size:,}: not measured ({exc})", file=sys.stderr)
                    continue
                lines.append(f"| {name} | " + " | ".join(cells) + " |")
    notes = (
        "\n\nOne owner, 384-dimension vectors already stored, k=5 (the 20 best of each ranking "
        "fused); on PostgreSQL the table is vacuumed and analysed after the bulk load, as "
        "autovacuum would. Medians of "
        f"{repeats} recalls. *first recall* reads the owner's vectors into the index; "
        "*after a write* is a `put` and a recall; the last columns compare with reading every "
        "row and comparing its vector in Python, which the index replaced (and which gives the "
        f"same 20 best rows, checked). {machine()}"
    )
    block("recall", "\n".join(lines) + notes)


if __name__ == "__main__":
    main()
