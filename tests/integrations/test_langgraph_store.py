"""TrueMemStore: LangGraph's BaseStore on TrueMem, on both backends.

No LangGraph store conformance suite ships with the installed packages
(langchain-tests tests LangChain's key-value ``BaseStore``, another interface), so
these tests check the contract LangGraph documents for ``get``, ``put``, ``delete``,
``search``, ``list_namespaces`` and ``batch`` / ``abatch``.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import pytest
from fake_models import CapturingChatModel
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langchain.agents import create_agent
from langchain.tools import ToolRuntime, tool
from langchain_core.messages import AIMessage, HumanMessage
from langgraph.store.base import (
    GetOp,
    Item,
    ListNamespacesOp,
    MatchCondition,
    PutOp,
    SearchItem,
    SearchOp,
)

from truemem_core import InvalidInputError, TrueMem, TrueMemError
from truemem_integrations.langgraph import TrueMemStore, TTLNotSupportedError

FACTS = {
    "editor": "Prefers dark mode in every editor",
    "allergy": "Is allergic to peanuts and shellfish",
    "job": "Works as a pilot for SkyAir, flying Airbus A320s",
    "home": "Lives in Lisbon near the river",
    "pet": "Has a cat called Miso",
}


@pytest.fixture
def store(memory: TrueMem) -> TrueMemStore:
    return TrueMemStore(memory)


def put_facts(store: TrueMemStore, user: str = "ana") -> None:
    for key, text in FACTS.items():
        store.put(("memories", user), key, {"text": text, "topic": key}, index=["text"])


# ------------------------------------------------------------------- round trips


def test_put_get_round_trip_and_the_memory_behind_the_item(
        store: TrueMemStore, memory: TrueMem) -> None:
    value = {"text": "Prefers dark mode", "tags": ["ui", "editor"], "score": 4.5,
             "nested": {"ok": True, "none": None}}
    store.put(("memories", "ana"), "editor", value)
    item = store.get(("memories", "ana"), "editor")
    assert isinstance(item, Item)
    assert (item.namespace, item.key, item.value) == (("memories", "ana"), "editor", value)
    assert item.created_at == item.updated_at
    # the value's text field is the memory's text
    [stored] = memory.list_memories("ana")
    assert stored.text == "Prefers dark mode" and stored.source == "manual"
    # LangMem's value: its content; a value without a text field: every string, one a line
    store.put(("memories", "bob"), "a", {"kind": "Memory", "content": {"content": "Likes jazz"}})
    store.put(("memories", "bob"), "b", {"title": "Trip", "notes": ["Porto", "in May"]})
    store.put(("memories", "bob"), "c", {"n": 3})
    assert sorted(m.text for m in memory.list_memories("bob")) == [
        "Likes jazz", "Trip\nPorto\nin May", '{"n": 3}']
    assert store.get(("memories", "ana"), "other") is None
    assert store.get(("memories", "bob"), "editor") is None


def test_put_of_an_existing_key_updates_the_item_and_its_memory_with_history(
        store: TrueMemStore, memory: TrueMem) -> None:
    store.put(("memories", "ana"), "home", {"text": "Lives in Lisbon"})
    first = store.get(("memories", "ana"), "home")
    assert first is not None
    [before] = memory.list_memories("ana")
    time.sleep(0.01)
    store.put(("memories", "ana"), "home", {"text": "Lives in Porto"})
    second = store.get(("memories", "ana"), "home")
    assert second is not None and second.value == {"text": "Lives in Porto"}
    assert second.created_at == first.created_at and second.updated_at > first.updated_at
    [after] = memory.list_memories("ana")
    assert after.id == before.id and after.text == "Lives in Porto"
    events = memory.history("ana", after.id)
    assert [(e.action, e.old_text, e.new_text) for e in events] == [
        ("added", None, "Lives in Lisbon"), ("updated", "Lives in Lisbon", "Lives in Porto")]
    store.put(("memories", "ana"), "home", {"text": "Lives in Porto", "since": 2024})
    assert len(memory.history("ana", after.id)) == 2  # same text: the memory is unchanged


def test_index_chooses_the_embedded_fields_and_false_stores_no_memory(
        memory: TrueMem) -> None:
    store = TrueMemStore(memory, index=["content.text"])
    store.put(("memories", "ana"), "a", {"content": {"text": "Drinks oat milk"}, "kind": "Memory"})
    store.put(("memories", "ana"), "b", {"title": "T", "body": "Runs marathons"}, index=["body"])
    store.put(("memories", "ana"), "c", {"content": {"text": "Secret note"}}, index=False)
    assert sorted(m.text for m in memory.list_memories("ana")) == [
        "Drinks oat milk", "Runs marathons"]
    assert store.get(("memories", "ana"), "c") is not None  # found by get
    listed = store.search(("memories", "ana"))
    assert {i.key for i in listed} == {"a", "b", "c"}  # and by a search without query
    assert "c" not in {i.key for i in store.search(("memories", "ana"), query="secret note")}
    # indexed again, then not: the memory comes and goes with the index
    store.put(("memories", "ana"), "c", {"content": {"text": "Secret note"}})
    assert "Secret note" in {m.text for m in memory.list_memories("ana")}
    first = store.get(("memories", "ana"), "c")
    store.put(("memories", "ana"), "c", {"content": {"text": "Secret note"}}, index=False)
    assert "Secret note" not in {m.text for m in memory.list_memories("ana")}
    last = store.get(("memories", "ana"), "c")
    assert first is not None and last is not None and last.created_at == first.created_at


def test_delete_removes_the_item_its_memory_and_the_text_everywhere(
        store: TrueMemStore, memory: TrueMem) -> None:
    store.put(("memories", "ana"), "allergy", {"text": FACTS["allergy"]})
    [stored] = memory.list_memories("ana")
    store.delete(("memories", "ana"), "allergy")
    assert store.get(("memories", "ana"), "allergy") is None
    assert memory.list_memories("ana", include_archived=True) == []
    assert all(e.old_text is None and e.new_text is None
               for e in memory.history("ana", stored.id))
    store.delete(("memories", "ana"), "allergy")  # deleting again is no error


def test_deleting_the_memory_or_the_user_deletes_the_items(
        store: TrueMemStore, memory: TrueMem) -> None:
    put_facts(store)
    put_facts(store, "bob")
    stored = {m.text: m.id for m in memory.list_memories("ana")}
    memory.delete_memory("ana", stored[FACTS["pet"]])
    assert store.get(("memories", "ana"), "pet") is None
    assert store.get(("memories", "ana"), "home") is not None
    memory.erase_user("ana")
    assert store.search(("memories", "ana")) == []
    assert len(store.search(("memories", "bob"))) == len(FACTS)


# ------------------------------------------------------------------------- search


def test_search_with_a_query_ranks_as_truemem_search_does(
        store: TrueMemStore, memory: TrueMem) -> None:
    put_facts(store)
    for query in ["what can't she eat?", "Airbus", "which city", "dark theme"]:
        found = store.search(("memories", "ana"), query=query, limit=5)
        assert all(isinstance(i, SearchItem) for i in found)
        expected = memory.search("ana", query, k=5, include_archived=True)
        assert [(i.value["text"], i.score) for i in found] == [
            (hit.memory.text, hit.score) for hit in expected]
        assert [i.score for i in found] == sorted((i.score for i in found), reverse=True)
    assert store.search(("memories", "ana"), query="allergic to peanuts")[0].key == "allergy"


def test_search_pages_with_limit_and_offset(store: TrueMemStore) -> None:
    put_facts(store)
    ranked = [i.key for i in store.search(("memories", "ana"), query="Lisbon", limit=5)]
    assert [i.key for i in store.search(("memories", "ana"), query="Lisbon", limit=2,
                                        offset=1)] == ranked[1:3]
    newest_first = [i.key for i in store.search(("memories", "ana"), limit=10)]
    assert newest_first == list(FACTS)[::-1]
    assert [i.key for i in store.search(("memories", "ana"), limit=2, offset=2)] == \
        newest_first[2:4]
    assert all(i.score is None for i in store.search(("memories", "ana")))
    assert [i.key for i in store.search(("memories", "ana"), query="")] == newest_first


def test_search_filters_on_value_fields(store: TrueMemStore) -> None:
    for n, (key, text) in enumerate(FACTS.items()):
        store.put(("memories", "ana"), key, {"text": text, "n": n, "meta": {"k": key[0]}})
    assert {i.key for i in store.search(("memories", "ana"), filter={"n": {"$gte": 3}})} == {
        "home", "pet"}
    assert {i.key for i in store.search(("memories", "ana"), filter={"meta.k": "e"})} == {
        "editor"}
    assert {i.key for i in store.search(("memories", "ana"), filter={
        "n": {"$ne": 0, "$lt": 2}})} == {"allergy"}
    found = store.search(("memories", "ana"), query="peanuts", filter={"n": {"$gt": 1}})
    assert "allergy" not in {i.key for i in found} and found and all(
        i.value["n"] > 1 for i in found)
    with pytest.raises(InvalidInputError, match="unknown operator"):
        store.search(("memories", "ana"), filter={"n": {"$in": [1]}})


DOC = {"n": 3, "tags": ["a", "b"], "meta": {"k": "e", "deep": {"x": 1}}, "a.b": "dotted",
       "none": None}


@pytest.mark.parametrize(("conditions", "expected"), [
    ({"n": 3}, True), ({"n": {"$gte": 3, "$lt": 4}}, True), ({"n": {"$gt": 3}}, False),
    ({"meta": {"k": "e"}}, True),  # an object matches on the fields it names
    ({"meta": {"k": "e", "other": 1}}, False), ({"meta": {"deep": {"x": 1}}}, True),
    ({"meta.deep.x": 1}, True), ({"meta.k": {"$ne": "e"}}, False),  # dotted paths
    ({"a.b": "dotted"}, True),  # a key with a dot is first a key
    ({"tags": ["a", "b"]}, True), ({"tags": ["a"]}, False),
    ({"missing": {"$ne": 1}}, True), ({"missing": {"$gt": 1}}, False), ({"missing": 1}, False),
    ({"none": None}, True), ({"n": {"$gt": "x"}}, False),  # number against text: no match
])
def test_filters_read_value_fields_as_langgraph_stores_do(
        conditions: dict[str, Any], expected: bool) -> None:
    from truemem_core.memory.items import check_filter, matches
    assert matches(DOC, check_filter(conditions)) is expected


def test_namespace_prefixes_deeper_levels_and_searches_across_users(
        store: TrueMemStore) -> None:
    store.put(("memories", "ana"), "a", {"text": "Likes tea"})
    store.put(("memories", "ana", "work"), "b", {"text": "Uses PostgreSQL 16"})
    store.put(("memories", "bob"), "c", {"text": "Likes coffee"})
    store.put(("profiles", "ana"), "d", {"text": "Name: Ana"})
    assert {i.key for i in store.search(("memories", "ana"))} == {"a", "b"}
    assert {i.key for i in store.search(("memories", "ana", "work"))} == {"b"}
    assert {i.key for i in store.search(("memories",))} == {"a", "b", "c"}
    assert {i.key for i in store.search(())} == {"a", "b", "c", "d"}
    assert {i.key for i in store.search(("memories", "an"))} == set()  # labels, not text
    for pattern in [("memo%",), ("m_mories",), ("%",)]:  # LIKE's wildcards are plain text
        assert store.search(pattern) == []
    with pytest.raises(InvalidInputError, match=r"cannot contain '\.'"):  # ops from batch()
        store.batch([GetOp(("memories", "ana.work"), "b")])
    for value in ([1, 2], "text", None.__class__):
        with pytest.raises(InvalidInputError, match="is a dict"):
            store.put(("memories", "ana"), "e", value)  # type: ignore[arg-type]
    hits = store.search(("memories", "ana", "work"), query="database")
    assert [i.key for i in hits] == ["b"]
    with pytest.raises(InvalidInputError, match="down to the user"):
        store.search(("memories",), query="tea")
    with pytest.raises(InvalidInputError, match="no user label"):
        store.put(("memories",), "x", {"text": "no user"})


def test_list_namespaces(store: TrueMemStore) -> None:
    for ns in [("memories", "ana"), ("memories", "ana", "work"), ("memories", "bob"),
               ("profiles", "ana", "v1")]:
        store.put(ns, "k", {"text": "x"})
    assert store.list_namespaces() == [("memories", "ana"), ("memories", "ana", "work"),
                                       ("memories", "bob"), ("profiles", "ana", "v1")]
    assert store.list_namespaces(prefix=("memories",), max_depth=2) == [
        ("memories", "ana"), ("memories", "bob")]
    assert store.list_namespaces(suffix=("v1",)) == [("profiles", "ana", "v1")]
    assert store.list_namespaces(prefix=("*", "ana")) == [
        ("memories", "ana"), ("memories", "ana", "work"), ("profiles", "ana", "v1")]
    assert store.list_namespaces(max_depth=1) == [("memories",), ("profiles",)]
    assert store.list_namespaces(limit=2, offset=1) == [("memories", "ana", "work"),
                                                        ("memories", "bob")]


# ---------------------------------------------------------------- batch, TTL, errors


def test_batch_and_abatch_carry_out_every_op_in_order(store: TrueMemStore) -> None:
    ns = ("memories", "ana")
    results = store.batch([
        PutOp(ns, "a", {"text": "Likes tea"}), GetOp(ns, "a"), PutOp(ns, "a", None),
        GetOp(ns, "a"), PutOp(ns, "b", {"text": "Likes jazz"}),
        SearchOp(ns, query="music"),
        ListNamespacesOp(match_conditions=(MatchCondition("prefix", ("memories",)),))])
    assert results[0] is None and isinstance(results[1], Item) and results[3] is None
    assert [i.key for i in results[5]] == ["b"] and results[6] == [ns]


async def test_the_async_interface(store: TrueMemStore) -> None:
    ns = ("memories", "ana")
    await store.aput(ns, "a", {"text": "Plays the cello"})
    item = await store.aget(ns, "a")
    assert item is not None and item.value == {"text": "Plays the cello"}
    hits = await store.asearch(ns, query="music instrument")
    assert [i.key for i in hits] == ["a"] and hits[0].score is not None
    assert await store.alist_namespaces() == [ns]
    await store.adelete(ns, "a")
    assert await store.aget(ns, "a") is None


def test_ttl_is_refused_with_a_typed_error(store: TrueMemStore) -> None:
    assert store.supports_ttl is False
    with pytest.raises(TTLNotSupportedError, match="does not support ttl") as raised:
        store.put(("memories", "ana"), "a", {"text": "x"}, ttl=5)
    assert isinstance(raised.value, TrueMemError) and isinstance(
        raised.value, NotImplementedError)
    with pytest.raises(TTLNotSupportedError):
        store.batch([PutOp(("memories", "ana"), "a", {"text": "x"}, ttl=1.0)])
    store.put(("memories", "ana"), "a", {"text": "x"}, ttl=None)  # no TTL is fine
    assert store.get(("memories", "ana"), "a") is not None


def test_bad_input_is_refused_before_anything_is_written(
        store: TrueMemStore, memory: TrueMem) -> None:
    for bad in [{"text": float("nan")}, {"when": object()}, {1: "x"}]:
        with pytest.raises(InvalidInputError):
            store.put(("memories", "ana"), "k", bad)
    with pytest.raises(InvalidInputError):
        store.put(("memories", "ana"), "", {"text": "empty key"})
    with pytest.raises(InvalidInputError):
        TrueMemStore(memory, user_at=-1)
    with pytest.raises(InvalidInputError, match="needs a TrueMem"):
        TrueMemStore("memory.db")  # type: ignore[arg-type]
    assert store.search(("memories", "ana")) == [] and memory.list_memories("ana") == []


def nested(levels: int) -> dict[str, Any]:
    """A value whose objects are ``levels`` deep (``{"x": {"x": ... {}}}``)."""
    value: dict[str, Any] = {}
    for _ in range(levels - 1):
        value = {"x": value}
    return value


def test_a_value_is_at_most_1_mib_and_100_levels_deep(store: TrueMemStore) -> None:
    where = ("memories", "ana")
    store.put(where, "deep", nested(100), index=False)
    assert store.get(where, "deep").value == nested(100)  # type: ignore[union-attr]
    for levels in (101, 450, 4_999):  # 450: past what a recursive walk of it survived
        with pytest.raises(InvalidInputError, match="nested more than 100 levels deep"):
            store.put(where, "deeper", nested(levels), index=False)
    fits = {"blob": "x" * (2**20 - len('{"blob": ""}'))}
    store.put(where, "big", fits, index=False)
    with pytest.raises(InvalidInputError, match=r"^value is larger than 1,048,576 bytes as JSON"):
        store.put(where, "bigger", {"blob": "é" * 2**19}, index=False)  # 2 bytes in UTF-8
    assert {i.key for i in store.search(where)} == {"deep", "big"}


def test_user_at_picks_the_user_label(memory: TrueMem) -> None:
    store = TrueMemStore(memory, user_at=0)
    store.put(("ana", "memories"), "a", {"text": "Likes tea"})
    assert [m.text for m in memory.list_memories("ana")] == ["Likes tea"]


# ------------------------------------------------------------ isolation (property)


@dataclass(frozen=True)
class Put:
    user: str
    sub: tuple[str, ...]
    key: str
    text: str


PUTS = st.lists(st.builds(
    Put, user=st.sampled_from(["ana", "bob", "cy"]),
    sub=st.sampled_from([(), ("work",), ("work", "db")]),
    key=st.sampled_from(["a", "b", "c"]),
    text=st.sampled_from(list(FACTS.values()))), min_size=1, max_size=8)


@settings(max_examples=8, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(puts=PUTS, query=st.sampled_from(["pilot", "food", "where does she live", "cat"]))
def test_no_item_crosses_users(memory: TrueMem, puts: list[Put], query: str) -> None:
    run = f"r{time.monotonic_ns()}"  # one example's users, apart from the others'
    store = TrueMemStore(memory)
    for put in puts:
        store.put(("memories", run + put.user, *put.sub), put.key,
                  {"text": put.text, "owner": put.user})
    for user in ["ana", "bob", "cy"]:
        ns = ("memories", run + user)
        for found in [*store.search(ns, limit=50), *store.search(ns, query=query, limit=50)]:
            assert found.namespace[1] == run + user and found.value["owner"] == user
        for put in puts:
            item = store.get((*ns, *put.sub), put.key)
            assert item is None or item.value["owner"] == user
        expected = {(p.sub, p.key) for p in puts if p.user == user}
        assert {(i.namespace[2:], i.key) for i in store.search(ns, limit=50)} == expected
        assert all(m.user_id == run + user for m in memory.list_memories(run + user))


# ------------------------------------------------------------- an agent with the store


def test_create_agent_keeps_and_finds_memories_in_the_store(
        store: TrueMemStore, memory: TrueMem) -> None:
    @tool
    def remember(fact: str, runtime: ToolRuntime) -> str:
        """Save a fact about the user."""
        assert runtime.store is not None
        user = runtime.config["configurable"]["user_id"]
        runtime.store.put(("memories", user), f"fact-{len(fact)}", {"text": fact})
        return "saved"

    @tool
    def recall(query: str, runtime: ToolRuntime) -> str:
        """Find what is known about the user."""
        assert runtime.store is not None
        user = runtime.config["configurable"]["user_id"]
        return "\n".join(i.value["text"] for i in runtime.store.search(
            ("memories", user), query=query, limit=1))

    def call(name: str, args: dict[str, Any], n: int) -> AIMessage:
        return AIMessage("", tool_calls=[{"name": name, "args": args, "id": f"c{n}"}])

    model = CapturingChatModel(replies=[
        call("remember", {"fact": "Is allergic to peanuts"}, 1), "Saved.",
        call("recall", {"query": "food allergies"}, 2), "No peanuts for you."])
    agent = create_agent(model, tools=[remember, recall], store=store)
    config: Any = {"configurable": {"user_id": "ana"}}
    agent.invoke({"messages": [HumanMessage("I'm allergic to peanuts")]}, config)
    result = agent.invoke({"messages": [HumanMessage("What can't I eat?")]}, config)
    assert result["messages"][-1].text == "No peanuts for you."
    assert result["messages"][-2].content == "Is allergic to peanuts"  # the tool's answer
    assert [m.text for m in memory.list_memories("ana")] == ["Is allergic to peanuts"]
    context = memory.get_context("ana", "s", "Any food I should avoid?")
    assert "Is allergic to peanuts" in context.to_system_prompt()


# ------------------------------------------------------------------ export and import


def test_export_and_import_user_carry_the_items(store: TrueMemStore, memory: TrueMem) -> None:
    put_facts(store)
    store.put(("memories", "ana", "notes"), "plain", {"text": "not indexed"}, index=False)
    data = memory.export_user("ana")
    assert len(data["store_items"]) == len(FACTS) + 1
    memory.import_user("ben", data)  # the label that named ana names ben
    moved = store.get(("memories", "ben"), "allergy")
    assert moved is not None and moved.value == {"text": FACTS["allergy"], "topic": "allergy"}
    hits = store.search(("memories", "ben"), query="peanut allergy", limit=1)
    assert [i.key for i in hits] == ["allergy"]
    ben = {m.text: m.id for m in memory.list_memories("ben")}
    assert memory.items.get("ben", ("memories", "ben"), "allergy").memory_id == ben[  # type: ignore[union-attr]
        FACTS["allergy"]]
    assert store.get(("memories", "ben", "notes"), "plain") is not None
    assert store.get(("memories", "ana"), "allergy") is not None  # ana's are untouched


@pytest.mark.parametrize("bulk", [False, True], ids=["add_memory", "add_memories"])
def test_items_keep_their_index_when_a_new_fact_folds_their_memories_together(
        store: TrueMemStore, memory: TrueMem, bulk: bool) -> None:
    store.put(("memories", "ana"), "a", {"text": "Works as a data engineer at Acme"})
    store.put(("memories", "ana"), "b", {"text": "Works as a data engineer at Acme Corp"})
    assert len(memory.list_memories("ana")) == 2  # a put never merges two items
    if bulk:
        memory.add_memories("ana", ["Works as data engineer at Acme Corp"])
    else:
        memory.add_memory("ana", "Works as data engineer at Acme Corp")
    [merged] = memory.list_memories("ana")  # the new fact folded the two into one
    for key in ("a", "b"):  # both items now indexed by the memory that absorbed theirs
        assert memory.items.get("ana", ("memories", "ana"), key).memory_id == merged.id  # type: ignore[union-attr]
    assert {i.key for i in store.search(("memories", "ana"), query="job")} == {"a", "b"}
    store.delete(("memories", "ana"), "a")  # the memory stays: item b still needs it
    assert [m.id for m in memory.list_memories("ana")] == [merged.id]
    store.delete(("memories", "ana"), "b")
    assert memory.list_memories("ana") == []
