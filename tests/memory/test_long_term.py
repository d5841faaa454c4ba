"""Long-term memory: owners, namespaces, put/get/delete/list, TTL, working-memory entries.

The same tests run on the in-memory, SQLite and PostgreSQL memory backends (the
PostgreSQL server on 127.0.0.1 must be up: a test fails, never skips, when it is not).
"""

from __future__ import annotations

import doctest
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

import weft.memory.long_term
import weft.memory.working
from weft.errors import OwnerError, PersistError, StorageError
from weft.memory import (
    EpisodicWorkingMemoryEntry,
    InMemoryMemoryBackend,
    LongTermMemory,
    MemoryBackend,
    Owner,
    PostgresMemoryBackend,
    SemanticWorkingMemoryEntry,
    SQLiteMemoryBackend,
    format_working_memory_entries,
    format_working_memory_entry,
)
from weft.persist import DurableRun, SQLiteBackend, load_store

PG = "postgresql://postgres@127.0.0.1:5432/weft_test"


class Clock:
    """A clock the test moves by hand (no test waits for real time)."""

    def __init__(self) -> None:
        self.now = 1_700_000_000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture(params=["memory", "sqlite", "postgres"])
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[MemoryBackend]:
    kind = request.param
    if kind == "memory":
        yield InMemoryMemoryBackend()
        return
    if kind == "sqlite":
        with SQLiteMemoryBackend(tmp_path / "weft.db") as opened:
            yield opened
        return
    schema = f"t_{uuid.uuid4().hex[:12]}"
    try:
        pg = PostgresMemoryBackend(PG, schema=schema, timeout=5)
    except StorageError as exc:
        pytest.fail(
            "long-term memory tests need PostgreSQL on 127.0.0.1:5432 with a database "
            f"weft_test (.ci/run starts it; locally `pg_ctlcluster 15 main start`): {exc}"
        )
    try:
        yield pg
    finally:
        pg.close()
        import psycopg

        with psycopg.connect(PG, autocommit=True) as conn:
            conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


@pytest.fixture
def clock() -> Clock:
    return Clock()


def memory_of(backend: MemoryBackend, clock: Clock, **owner: str) -> LongTermMemory:
    return LongTermMemory(backend, owner=Owner(**owner), clock=clock)


# ------------------------------------------------------------------------ owners


def test_the_owner_is_the_user_else_the_session() -> None:
    assert Owner(user_id="alice", session_id="s1").key == "user:alice"
    assert Owner(session_id="s1").key == "session:s1"
    assert Owner(user_id="x").key != Owner(session_id="x").key


def test_neither_user_nor_session_is_an_owner_error() -> None:
    with pytest.raises(OwnerError, match="neither a user id nor a session id"):
        LongTermMemory(InMemoryMemoryBackend(), owner=Owner())
    with pytest.raises(OwnerError, match="expected an Owner"):
        LongTermMemory(InMemoryMemoryBackend(), owner="alice")  # type: ignore[arg-type]


def test_an_owner_never_sees_another_owners_entries(backend: MemoryBackend, clock: Clock) -> None:
    alice = memory_of(backend, clock, user_id="alice")
    mallory = memory_of(backend, clock, user_id="mallory")
    same_name_session = memory_of(backend, clock, session_id="alice")
    alice.put("prefs", "secret", "alice's diary: my boss is terrible")
    alice.remember(SemanticWorkingMemoryEntry(
        category="relationship", subject="User", predicate="WORRIES_ABOUT", object="boss",
        evidence_quote="my boss is terrible",
    ))  # fmt: skip
    for other in (mallory, same_name_session):
        assert other.get("prefs", "secret") is None
        assert other.get_value("prefs", "secret", "none") == "none"
        assert other.list() == []
        assert other.recall("boss terrible diary").hits == []
        assert other.working_memory("my boss").hits == []
        assert other.working_memory().hits == []
        assert other.delete("prefs", "secret") is False
    assert alice.get_value("prefs", "secret") == "alice's diary: my boss is terrible"
    assert len(alice.list()) == 2


# -------------------------------------------------------------------------- CRUD


def test_put_get_delete_in_namespaces(backend: MemoryBackend, clock: Clock) -> None:
    memory = memory_of(backend, clock, user_id="u")
    first = memory.put("prefs", "tone", {"style": "brief", "emoji": False})
    assert first.value == {"style": "brief", "emoji": False}
    memory.put("facts", "tone", "a different entry under the same key")
    assert memory.get_value("prefs", "tone") == {"style": "brief", "emoji": False}
    assert memory.get_value("facts", "tone") == "a different entry under the same key"
    assert memory.delete("prefs", "tone") is True
    assert memory.get("prefs", "tone") is None
    assert memory.get_value("facts", "tone") is not None


def test_rewriting_keeps_created_at_and_updates_updated_at(
    backend: MemoryBackend, clock: Clock
) -> None:
    memory = memory_of(backend, clock, user_id="u")
    first = memory.put("prefs", "tone", "brief")
    clock.now += 10
    second = memory.put("prefs", "tone", "warm")
    assert second.created_at == first.created_at
    assert second.updated_at == first.updated_at + 10
    assert memory.get("prefs", "tone") == second


def test_list_is_newest_first_by_namespace_and_prefix(backend: MemoryBackend, clock: Clock) -> None:
    memory = memory_of(backend, clock, user_id="u")
    for i, key in enumerate(["task-1", "task-2", "note-1"]):
        clock.now += 1
        memory.put("work", key, i)
    memory.put("other", "task-9", 9)
    assert [r.key for r in memory.list("work")] == ["note-1", "task-2", "task-1"]
    assert [r.key for r in memory.list("work", prefix="task-")] == ["task-2", "task-1"]
    assert [r.key for r in memory.list(limit=2)] == ["task-9", "note-1"]
    assert len(memory.list()) == 4


def test_names_are_checked(backend: MemoryBackend, clock: Clock) -> None:
    memory = memory_of(backend, clock, user_id="u")
    with pytest.raises(PersistError, match="namespace=''"):
        memory.put("", "k", 1)
    with pytest.raises(PersistError, match="key='a\\\\nb'"):
        memory.put("ns", "a\nb", 1)
    with pytest.raises(PersistError, match="ttl=0"):
        memory.put("ns", "k", 1, ttl=0)


def test_values_keep_their_types(backend: MemoryBackend, clock: Clock) -> None:
    memory = memory_of(backend, clock, user_id="u")
    episode = EpisodicWorkingMemoryEntry(
        summary="talked about loss after my dog died.", primary_themes=["grief"],
        approach_used="grief_support",
    )  # fmt: skip
    memory.put("episodic", "e1", episode)
    assert memory.get_value("episodic", "e1") == episode


# --------------------------------------------------------------------------- TTL


def test_expired_entries_are_invisible_then_purged(backend: MemoryBackend, clock: Clock) -> None:
    memory = memory_of(backend, clock, user_id="u")
    memory.put("session", "mood", "tired", ttl=60)
    memory.put("session", "name", "Sam")
    clock.now += 59
    assert memory.get_value("session", "mood") == "tired"
    clock.now += 2
    assert memory.get("session", "mood") is None
    assert [r.key for r in memory.list()] == ["name"]
    assert memory.recall("tired").hits == []
    rows = backend.purge_expired(now=clock.now + 1e9)  # only the unexpiring entry is left
    assert rows == 0
    memory.put("session", "mood", "rested")  # the key is free again, with a new created_at
    assert memory.get("session", "mood").created_at == clock.now  # type: ignore[union-attr]


def test_default_ttl_applies_when_put_gives_none(backend: MemoryBackend, clock: Clock) -> None:
    memory = LongTermMemory(backend, owner=Owner(session_id="s"), default_ttl=5, clock=clock)
    memory.put("scratch", "x", 1)
    memory.put("scratch", "y", 1, ttl=100)
    clock.now += 6
    assert [r.key for r in memory.list()] == ["y"]


def test_purge_removes_expired_rows_of_every_owner(backend: MemoryBackend, clock: Clock) -> None:
    for user in ("a", "b"):
        memory_of(backend, clock, user_id=user).put("n", "k", 1, ttl=1)
    assert backend.purge_expired(now=clock.now + 2) == 2


# ------------------------------------------------------------- working memory


def test_the_seed_renderings() -> None:
    semantic = SemanticWorkingMemoryEntry(
        category="relationship", subject="User", predicate="WORRIES_ABOUT", object="work",
        evidence_quote="my boss is terrible",
    )  # fmt: skip
    episodic = EpisodicWorkingMemoryEntry(
        summary="talked about loss after my dog died.", primary_themes=["grief"]
    )
    assert semantic.render() == '[relationship] User WORRIES_ABOUT work — "my boss is terrible"'
    assert episodic.render() == "Last session (grief): talked about loss after my dog died."
    catch_up = EpisodicWorkingMemoryEntry(summary="checked in.", is_catch_up=True)
    assert catch_up.render() == "Catch-up session: checked in."
    assert format_working_memory_entries([semantic, "legacy line", episodic]).splitlines() == [
        semantic.render(), "legacy line", episodic.render(),
    ]  # fmt: skip


def test_dicts_of_either_shape_are_formatted_too() -> None:
    assert (
        format_working_memory_entry({"summary": "s.", "primary_themes": ["a", "b"], "extra": 1})
        == "Last session (a, b): s."
    )
    assert (
        format_working_memory_entry(
            {"category": "c", "subject": "User", "predicate": "LIKES", "object": "tea"}
        )
        == "[c] User LIKES tea"
    )
    with pytest.raises(ValueError, match=r"'predicate'.*'summary'"):
        format_working_memory_entry({"text": "?"})


def test_remembered_entries_load_per_turn(backend: MemoryBackend, clock: Clock) -> None:
    memory = memory_of(backend, clock, user_id="u")
    fact = SemanticWorkingMemoryEntry(
        category="relationship", subject="User", predicate="WORRIES_ABOUT", object="work",
        evidence_quote="my boss is terrible",
    )  # fmt: skip
    memory.remember(fact)
    memory.remember(fact)  # the same fact once
    clock.now += 1
    memory.remember(EpisodicWorkingMemoryEntry(
        summary="talked about loss after my dog died.", primary_themes=["grief"]
    ))  # fmt: skip
    assert len(memory.list()) == 2
    loaded = memory.working_memory("my boss again")
    assert loaded.path == "token_recall"
    assert loaded.values() == [fact]
    recent = memory.working_memory()
    assert recent.path == "recent"
    assert format_working_memory_entries(recent.values()).splitlines() == [
        "Last session (grief): talked about loss after my dog died.",
        '[relationship] User WORRIES_ABOUT work — "my boss is terrible"',
    ]


def test_working_memory_rides_in_a_durable_thread(tmp_path: Path, clock: Clock) -> None:
    """Entries are registered types: a turn's loaded working memory checkpoints as is."""
    with SQLiteBackend(tmp_path / "weft.db") as backend:
        memory = memory_of(backend, clock, user_id="u")
        memory.remember(EpisodicWorkingMemoryEntry(summary="s.", primary_themes=["t"]))
        with DurableRun.open(backend, "chat") as run:
            run.store.write("state", "working_memory", memory.working_memory().values())
        restored = load_store(backend, "chat").value("state", "working_memory")
    assert restored == [EpisodicWorkingMemoryEntry(summary="s.", primary_themes=["t"])]


def test_the_docstring_examples_run() -> None:
    for module in (weft.memory.long_term, weft.memory.working):
        assert doctest.testmod(module).failed == 0
