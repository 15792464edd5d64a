"""``export_user`` / ``import_user``: what a round trip keeps, and what an import refuses.

An import restores a user's data under new ids; what cites a message or a memory
(a memory's source message, a relation's evidence, a superseded memory's reason)
cites the new ones. A refused document writes nothing: checked by counting every
table's rows on a connection of the test's own.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from typing import Any

import db_access
import pytest

from truemem_core import InvalidInputError, TrueMem

_TABLES = ("memories", "memory_events", "sessions", "messages", "store_items",
           "graph_entities", "graph_observations", "graph_relations")


def row_counts(database_url: str) -> dict[str, int]:
    return db_access.row_counts(database_url, _TABLES)


@pytest.fixture
def exported(memory: TrueMem) -> dict[str, Any]:
    """ana's export: extracted memories citing their messages, a graph citing both, a
    superseded memory, a deleted one's history, a store item."""
    memory.record("ana", "s1", "I live in Lisbon.", "ok")
    memory.record("ana", "s1", "I work at SkyAir as a pilot.", "nice")
    memory.drain()
    memory.add_memory("ana", "Lives in Porto")  # supersedes "Lives in Lisbon"
    gone = memory.add_memory("ana", "Has a cat named Miso")
    memory.delete_memory("ana", gone.id)
    memory.items.put("ana", ("prefs",), "tone", {"content": "Short answers"})
    return json.loads(json.dumps(memory.export_user("ana")))


def _said(memory: TrueMem, user: str) -> dict[int, str]:
    """The user's messages' contents by id."""
    return {m["id"]: m["content"] for session in memory.export_user(user)["sessions"]
            for m in session["messages"]}


def test_a_round_trip_cites_the_new_messages_and_memories(
    memory: TrueMem, exported: dict[str, Any]
) -> None:
    memory.import_user("ben", exported)
    again = memory.export_user("ben")
    said_then, said_now = _said(memory, "ana"), _said(memory, "ben")
    assert sorted(said_now.values()) == sorted(said_then.values())
    assert not set(said_now) & set(said_then)  # new ids

    then = {m["text"]: m for m in exported["memories"]}
    now = {m["text"]: m for m in again["memories"]}
    sources = {text: m["source_message_id"] for text, m in then.items()}
    assert {t for t, s in sources.items() if s is not None} == {
        "Lives in Lisbon", "Works at SkyAir as a pilot"}
    for text, source in sources.items():
        cited = now[text]["source_message_id"]
        assert (cited is None) == (source is None)
        if source is not None:
            assert said_now[cited] == said_then[source]

    relations = {r["type"]: r for r in again["graph"]["relations"]}
    old_relations = {r["type"]: r for r in exported["graph"]["relations"]}
    for kind, relation in old_relations.items():
        assert relation["evidence_message_ids"]
        assert [said_now[i] for i in relations[kind]["evidence_message_ids"]] == [
            said_then[i] for i in relation["evidence_message_ids"]]
        assert relations[kind]["evidence_memory_ids"] == [
            now[then_text]["id"] for then_text in (
                next(t for t, m in then.items() if m["id"] == i)
                for i in relation["evidence_memory_ids"])]

    superseded = now["Lives in Lisbon"]["history"][-2]  # before "imported"
    assert superseded["action"] == "superseded"
    assert superseded["reason"].endswith(f"(by {now['Lives in Porto']['id']})")
    assert [d["history"] for d in again["deleted"]] == [
        [{**event, "memory_id": again["deleted"][0]["memory_id"]} for event in d["history"]]
        for d in exported["deleted"]]
    assert again["deleted"][0]["memory_id"] != exported["deleted"][0]["memory_id"]


def test_a_session_the_user_has_is_refused_not_replaced(
    memory: TrueMem, exported: dict[str, Any]
) -> None:
    memory.record("bob", "s1", "Bob's own words", "noted")
    memory.drain()
    before = row_counts(memory.admin.database_url)
    with pytest.raises(InvalidInputError, match="already has session 's1'"):
        memory.import_user("bob", exported)
    assert [m.content for m in memory.sessions.get("bob", "s1").recent] == [
        "Bob's own words", "noted"]
    assert row_counts(memory.admin.database_url) == before


def _bad(change: Callable[[dict[str, Any]], None]) -> Callable[[dict[str, Any]], dict[str, Any]]:
    def made(document: dict[str, Any]) -> dict[str, Any]:
        bad = copy.deepcopy(document)
        change(bad)
        return bad
    return made


def _memory(field: str, value: Any) -> Callable[[dict[str, Any]], None]:
    return lambda d: d["memories"][0].__setitem__(field, value)


def _event(field: str, value: Any) -> Callable[[dict[str, Any]], None]:
    return lambda d: d["memories"][0]["history"][0].__setitem__(field, value)


def _bad_order(part: str) -> Callable[[dict[str, Any]], None]:
    """The first record of ``part`` updated a day before it was created."""
    return lambda d: d[part][0].update(created_at="2026-01-02T00:00:00+00:00",
                                       updated_at="2026-01-01T00:00:00+00:00")


@pytest.mark.parametrize(("change", "message"), [
    (_memory("reinforcements", -1), "reinforcements must be an int"),
    (_memory("reinforcements", 1e30), "reinforcements must be an int"),
    (_memory("reinforcements", float("inf")), "reinforcements must be an int"),
    (_memory("reinforcements", 2**40), "reinforcements must be an int"),
    (_memory("reinforcements", True), "reinforcements must be an int"),
    (_memory("created_at", 1700000000), "created_at must be an ISO 8601 text"),
    (_memory("updated_at", "9999-12-31T23:59:59-14:00"), "out of range"),
    (_memory("source_message_id", "1"), "source_message_id must be an int"),
    (_memory("created_at", "9999-12-31T00:00:00+00:00"),
     r"memories\[0\]: created_at is in the future: 9999-12-31"),
    (_bad_order("memories"), r"memories\[0\]: created_at 2026-01-02T00:00:00\+00:00 is after "
                             r"updated_at 2026-01-01"),
    (_event("created_at", "9999-12-31T00:00:00"), "a history time is in the future"),
    (lambda d: d["sessions"][0]["messages"][0].__setitem__("created_at", "9999-01-01T00:00"),
     "a message's created_at is in the future"),
    (_bad_order("store_items"), r"'store_items'\[0\]: created_at .* is after updated_at"),
    (lambda d: d["graph"]["relations"][0].__setitem__("recorded_at", "9999-01-01T00:00"),
     "recorded_at is in the future"),
    (_event("action", "bogus"), "history action must be one of"),
    (_event("action", None), "history action must be one of"),
    (_event("new_importance", "high"), "importance must be"),
    (_event("new_text", 5), "history new_text must be a str"),
    (_event("new_text", "bad \ud800"), "unpaired surrogate"),
    (_event("reason", {"a": 1}), "history reason must be a str"),
    (_event("old_text", "nul \x00 here"), "NUL"),
    (lambda d: d["memories"].append(copy.deepcopy(d["memories"][0])), "same id"),
    (lambda d: d["deleted"][0]["history"][0].__setitem__("action", "x"), r"deleted\[0\]"),
    (lambda d: d.__setitem__("deleted", {}), "'deleted' must be a list"),
    (lambda d: d["sessions"].append(copy.deepcopy(d["sessions"][0])), "there twice"),
    (lambda d: d["sessions"][0]["messages"][0].__setitem__("id", "1"), "id must be an int"),
    (lambda d: d["store_items"].append(copy.deepcopy(d["store_items"][0])), "twice"),
    (lambda d: d["graph"]["relations"][0].__setitem__("evidence_message_ids", 7),
     "evidence_message_ids must be a list"),
])
def test_a_malformed_document_is_refused_and_writes_nothing(
    memory: TrueMem, exported: dict[str, Any],
    change: Callable[[dict[str, Any]], None], message: str,
) -> None:
    before = row_counts(memory.admin.database_url)
    with pytest.raises(InvalidInputError, match=message):
        memory.import_user("ben", _bad(change)(exported))
    assert row_counts(memory.admin.database_url) == before
