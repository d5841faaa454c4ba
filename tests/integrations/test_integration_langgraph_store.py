"""``WeftStore``: LangGraph's ``BaseStore`` over weft's long-term memory, on a real SQLite
file: the store contract (get, put, search, delete, list_namespaces and their async forms,
batches of ops), owner isolation, and a compiled StateGraph whose nodes use the store."""

from __future__ import annotations

import doctest
import re
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypedDict

import pytest
from langgraph.graph import START, StateGraph
from langgraph.runtime import Runtime
from langgraph.store.base import (
    GetOp,
    Item,
    ListNamespacesOp,
    MatchCondition,
    PutOp,
    SearchItem,
    SearchOp,
)

import weft.integrations.langgraph
from weft.errors import IntegrationError
from weft.integrations.langgraph import WeftStore
from weft.memory import (
    HashingEmbedder,
    LongTermMemory,
    Owner,
    SemanticWorkingMemoryEntry,
    SQLiteMemoryBackend,
)


class Clock:
    """A clock the test moves by hand."""

    def __init__(self) -> None:
        self.now = 1_700_000_000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def rows(tmp_path: Path) -> Iterator[SQLiteMemoryBackend]:
    with SQLiteMemoryBackend(tmp_path / "weft.db") as backend:
        yield backend


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def memory(rows: SQLiteMemoryBackend, clock: Clock) -> LongTermMemory:
    return LongTermMemory(rows, owner=Owner(user_id="ada"), clock=clock)


@pytest.fixture
def store(memory: LongTermMemory) -> WeftStore:
    return WeftStore(memory)


def test_put_then_get_gives_the_item_with_its_times(store: WeftStore, clock: Clock) -> None:
    store.put(("prefs", "ui"), "theme", {"mode": "dark", "size": 3})
    clock.now += 10
    store.put(("prefs", "ui"), "theme", {"mode": "light", "size": 3})

    item = store.get(("prefs", "ui"), "theme")

    assert isinstance(item, Item)
    assert (item.namespace, item.key, item.value) == (
        ("prefs", "ui"),
        "theme",
        {"mode": "light", "size": 3},
    )
    assert item.created_at == datetime.fromtimestamp(1_700_000_000.0, tz=UTC)
    assert item.updated_at == datetime.fromtimestamp(1_700_000_010.0, tz=UTC)
    assert store.get(("prefs", "ui"), "absent") is None
    assert store.get(("prefs",), "theme") is None  # a namespace is exact for get


def test_items_are_weft_entries_in_the_joined_namespace(
    store: WeftStore, memory: LongTermMemory
) -> None:
    store.put(("notes", "2026"), "n1", {"text": "hello"})
    memory.put("prefs", "tone", {"style": "brief"})
    memory.remember(
        SemanticWorkingMemoryEntry(
            category="fact", subject="User", predicate="LIVES_IN", object="Lyon"
        )
    )

    assert memory.get_value("notes.2026", "n1") == {"text": "hello"}
    tone = store.get(("prefs",), "tone")
    assert tone is not None and tone.value == {"style": "brief"}
    (fact,) = store.search(("semantic",))
    assert fact.value["object"] == "Lyon"  # a weft model reads back as its JSON


def test_a_value_weft_wrote_that_is_not_a_dict_reads_back_wrapped(
    store: WeftStore, memory: LongTermMemory
) -> None:
    memory.put("facts", "answer", 42)
    item = store.get(("facts",), "answer")
    assert item is not None and item.value == {"value": 42}


def test_put_none_and_delete_remove_the_item(store: WeftStore, memory: LongTermMemory) -> None:
    store.put(("a",), "k1", {"v": 1})
    store.put(("a",), "k2", {"v": 2})

    store.delete(("a",), "k1")
    store.batch([PutOp(("a",), "k2", None)])

    assert store.get(("a",), "k1") is None and store.get(("a",), "k2") is None
    assert memory.list() == []


def test_search_without_a_query_lists_the_prefix_newest_first_and_pages(
    store: WeftStore, clock: Clock
) -> None:
    for i in range(5):
        clock.now += 1
        store.put(("docs", "user-1"), f"d{i}", {"i": i, "kind": "even" if i % 2 == 0 else "odd"})
    clock.now += 1
    store.put(("docs", "user-1", "drafts"), "x", {"i": 99, "kind": "even"})
    clock.now += 1
    store.put(("docsx",), "y", {"i": 100})

    everything = store.search(("docs",), limit=10)
    page = store.search(("docs", "user-1"), limit=2, offset=1)
    evens = store.search(("docs",), filter={"kind": "even"}, limit=10)
    big = store.search(("docs",), filter={"i": {"$gte": 3, "$lt": 99}})

    assert [i.key for i in everything] == ["x", "d4", "d3", "d2", "d1", "d0"]
    assert all(isinstance(i, SearchItem) and i.score is None for i in everything)
    assert [i.key for i in page] == ["d4", "d3"]
    assert [i.key for i in evens] == ["x", "d4", "d2", "d0"]
    assert [i.key for i in big] == ["d4", "d3"]
    assert [i.key for i in store.search((), filter={"i": {"$ne": 0}}, limit=1)] == ["y"]


def test_search_with_a_query_is_weft_recall_scored(store: WeftStore) -> None:
    store.put(("memories",), "m1", {"text": "Ada likes pizza with olives"})
    store.put(("memories",), "m2", {"text": "Ada plays the cello"})
    store.put(("memories",), "m3", {"text": "pizza night is on Friday", "who": "team"})
    store.put(("other",), "m4", {"text": "pizza everywhere"})

    found = store.search(("memories",), query="pizza")
    only_team = store.search(("memories",), query="pizza", filter={"who": "team"})
    none = store.search(("memories",), query="volcano")

    assert {i.key for i in found} == {"m1", "m3"}
    assert all(isinstance(i.score, float) and i.score > 0 for i in found)
    assert [i.key for i in only_team] == ["m3"]
    assert none == []


def test_a_query_with_an_embedder_runs_hybrid_recall(rows: SQLiteMemoryBackend) -> None:
    memory = LongTermMemory(rows, owner=Owner(user_id="ada"), embedder=HashingEmbedder())
    store = WeftStore(memory)
    store.put(("m",), "cats", {"text": "kittens and cats purr"})
    store.put(("m",), "cars", {"text": "engines and gearboxes"})

    (best, *_) = store.search(("m",), query="a cat purring")

    assert best.key == "cats"
    assert memory.recall("a cat purring").path == "hybrid_rrf"


def test_index_says_which_fields_recall_searches(store: WeftStore, clock: Clock) -> None:
    store.put(("m",), "a", {"title": "volcano", "body": "lava"}, index=["title"])
    clock.now += 1
    store.put(("m",), "b", {"title": "glacier", "body": "volcano"}, index=False)

    assert [i.key for i in store.search(("m",), query="volcano")] == ["a"]
    assert store.search(("m",), query="lava") == []
    assert [i.key for i in store.search(("m",))] == ["b", "a"]  # still listed, and gettable


def test_a_filter_past_the_first_recall_hits_still_fills_the_page(store: WeftStore) -> None:
    for i in range(30):
        store.put(("m",), f"k{i:02d}", {"text": "apple " * (30 - i), "keep": i >= 25})

    kept = store.search(("m",), query="apple", filter={"keep": True}, limit=3)

    assert len(kept) == 3 and all(i.value["keep"] for i in kept)


def test_ttl_is_in_minutes_and_expired_items_are_gone(store: WeftStore, clock: Clock) -> None:
    store.put(("s",), "short", {"v": 1}, ttl=1)
    store.put(("s",), "long", {"v": 2})

    clock.now += 59
    assert store.get(("s",), "short") is not None
    clock.now += 2
    assert store.get(("s",), "short") is None
    assert [i.key for i in store.search(("s",))] == ["long"]


def test_list_namespaces_matches_prefix_suffix_wildcards_and_depth(store: WeftStore) -> None:
    for namespace in [("a", "b", "c"), ("a", "b", "d"), ("a", "x"), ("z", "b", "c")]:
        store.put(namespace, "k", {"v": 1})

    assert store.list_namespaces() == [
        ("a", "b", "c"),
        ("a", "b", "d"),
        ("a", "x"),
        ("z", "b", "c"),
    ]
    assert store.list_namespaces(prefix=("a",)) == [("a", "b", "c"), ("a", "b", "d"), ("a", "x")]
    assert store.list_namespaces(suffix=("c",)) == [("a", "b", "c"), ("z", "b", "c")]
    assert store.list_namespaces(prefix=("*", "b")) == [
        ("a", "b", "c"),
        ("a", "b", "d"),
        ("z", "b", "c"),
    ]
    assert store.list_namespaces(max_depth=2) == [("a", "b"), ("a", "x"), ("z", "b")]
    assert store.list_namespaces(limit=2, offset=1) == [("a", "b", "d"), ("a", "x")]


def test_a_batch_runs_its_ops_in_order(store: WeftStore) -> None:
    results = store.batch(
        [
            PutOp(("n",), "k", {"v": 1}),
            GetOp(("n",), "k"),
            SearchOp(("n",)),
            ListNamespacesOp(match_conditions=(MatchCondition("prefix", ("n",)),)),
            PutOp(("n",), "k", None),
            GetOp(("n",), "k"),
        ]
    )

    put, got, searched, namespaces, deleted, gone = results
    assert put is None and deleted is None and gone is None
    assert isinstance(got, Item) and got.value == {"v": 1}
    assert isinstance(searched, list) and [i.key for i in searched] == ["k"]
    assert namespaces == [("n",)]


async def test_the_async_forms_do_the_same(store: WeftStore) -> None:
    await store.aput(("u", "1"), "k", {"v": "x"})

    got = await store.aget(("u", "1"), "k")
    found = await store.asearch(("u",), query="x")
    namespaces = await store.alist_namespaces(prefix=("u",))
    await store.adelete(("u", "1"), "k")

    assert got is not None and got.value == {"v": "x"}
    assert [i.key for i in found] == ["k"]
    assert namespaces == [("u", "1")]
    assert await store.aget(("u", "1"), "k") is None


def test_an_owner_sees_only_its_own_items(rows: SQLiteMemoryBackend) -> None:
    ada = WeftStore(LongTermMemory(rows, owner=Owner(user_id="ada")))
    bob = WeftStore(LongTermMemory(rows, owner=Owner(user_id="bob")))
    ada.put(("memories",), "secret", {"text": "ada's pin is 1234"})

    assert bob.get(("memories",), "secret") is None
    assert bob.search(("memories",)) == []
    assert bob.search(("memories",), query="pin") == []
    assert bob.list_namespaces() == []
    bob.delete(("memories",), "secret")
    item = ada.get(("memories",), "secret")
    assert item is not None and item.value == {"text": "ada's pin is 1234"}


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda s: s.put(("a",), "k", "not a dict"), "a LangGraph store keeps dicts"),
        (lambda s: s.put(("a",), "", {"v": 1}), "key=''"),
        (lambda s: s.put(("a",), "k", {"v": 1}, ttl=-1), "a ttl is a positive number"),
        # LangGraph's own get checks labels; a batch of ops goes straight to the store
        (lambda s: s.batch([GetOp(("a", "b.c"), "k")]), "without '.'"),
        (lambda s: s.get(("a", "b\n"), "k"), "printable"),
        (lambda s: s.batch([PutOp(("a.b",), "k", {"v": 1})]), "without '.'"),
        (lambda s: s.search(("a",), filter={"v": {"$regex": "x"}}), "unknown operator '$regex'"),
        (lambda s: s.search(("a",), limit=-1), "limit=-1"),
        (lambda s: s.list_namespaces(max_depth=0), "max_depth=0"),
        (lambda s: s.batch(["get everything"]), "GetOp, PutOp, SearchOp"),
        (lambda s: s.put(("a",), "k", {"v": 1}, ttl=float("inf")), "a ttl is a positive"),
        (lambda s: s.search(("a",), query=5), "a search query is text"),
        # every op is checked before the first runs: the good put is not made either
        (
            lambda s: s.batch([PutOp(("a",), "k", {"v": 1}), PutOp(("a",), "k2", [1])]),
            "a LangGraph store keeps dicts",
        ),
    ],
)
def test_bad_input_is_an_integration_error_and_writes_nothing(
    store: WeftStore, memory: LongTermMemory, call: Any, message: str
) -> None:
    with pytest.raises(IntegrationError, match=re.escape(message)):
        call(store)
    assert memory.list() == []


def test_the_store_needs_a_long_term_memory() -> None:
    with pytest.raises(IntegrationError, match=r"expected a weft\.memory\.LongTermMemory"):
        WeftStore("memory.db")  # type: ignore[arg-type]


class Turn(TypedDict):
    user: str
    message: str
    reply: str


def test_a_graph_node_remembers_and_recalls_through_the_runtime_store(
    memory: LongTermMemory,
) -> None:
    def respond(state: Turn, runtime: Runtime[None]) -> dict[str, Any]:
        assert runtime.store is not None
        namespace = ("memories", state["user"])
        if state["message"].startswith("remember "):
            fact = state["message"].removeprefix("remember ")
            runtime.store.put(namespace, f"fact-{len(fact)}", {"text": fact})
            return {"reply": "noted"}
        hits = runtime.store.search(namespace, query=state["message"], limit=1)
        return {"reply": hits[0].value["text"] if hits else "I do not know"}

    graph = StateGraph(Turn)
    graph.add_node("respond", respond)
    graph.add_edge(START, "respond")
    app = graph.compile(store=WeftStore(memory))

    app.invoke({"user": "ada", "message": "remember the cat is called Miso", "reply": ""})
    answer = app.invoke({"user": "ada", "message": "what is the cat called?", "reply": ""})

    assert answer["reply"] == "the cat is called Miso"
    (record,) = memory.list("memories.ada")
    assert record.value == {"text": "the cat is called Miso"}


async def test_an_async_graph_node_uses_the_async_store(memory: LongTermMemory) -> None:
    class Count(TypedDict):
        visits: int

    async def visit(state: Count, runtime: Runtime[None]) -> dict[str, Any]:
        assert runtime.store is not None
        seen = await runtime.store.aget(("counter",), "visits")
        visits = (seen.value["n"] if seen else 0) + 1
        await runtime.store.aput(("counter",), "visits", {"n": visits})
        return {"visits": visits}

    graph = StateGraph(Count)
    graph.add_node("visit", visit)
    graph.add_edge(START, "visit")
    app = graph.compile(store=WeftStore(memory))

    for _ in range(3):
        result = await app.ainvoke({"visits": 0})

    assert result["visits"] == 3
    assert memory.get_value("counter", "visits") == {"n": 3}


def test_docstring_examples_run() -> None:
    assert doctest.testmod(weft.integrations.langgraph).failed == 0


def test_a_query_over_the_empty_prefix_searches_every_namespace(store: WeftStore) -> None:
    store.put(("a",), "k1", {"text": "red apples"})
    store.put(("b", "c"), "k2", {"text": "green apples"})
    store.put(("b",), "k3", {"text": "pears"})

    found = store.search((), query="apples")

    assert {(i.namespace, i.key) for i in found} == {(("a",), "k1"), (("b", "c"), "k2")}
