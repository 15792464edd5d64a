"""The long-term memory API on both backends, with the real local embedder."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta
from typing import Any

import pytest
from db_access import execute, rows
from sqlalchemy import Engine, event, select, update

from truemem_core import InvalidInputError, NotFoundError, Settings, TrueMem
from truemem_core.memory.maintenance import SCORE_STEP
from truemem_core.storage.schema import memories, utcnow

FACTS = [
    ("Works as a data engineer at Acme", 4),
    ("Has a golden retriever named Max", 3),
    ("Lives in Lisbon", 4),
    ("Enjoys climbing on weekends", 3),
    ("Is learning Japanese", 2),
    ("Drinks coffee without sugar", 1),
    ("Is allergic to peanuts", 5),
    ("Plays the piano badly", 1),
    ("Is building a home weather station", 2),
    ("Supports Benfica", 3),
    ("Reads science fiction", 3),
    ("Has two children", 4),
]


def test_add_get_list(memory: TrueMem) -> None:
    added = memory.add_memory("ana", "Prefers bullet points", importance=5, kind="semantic")
    assert (added.user_id, added.text, added.importance) == ("ana", "Prefers bullet points", 5)
    assert (added.kind, added.source, added.state) == ("semantic", "manual", "active")
    assert added.created_at.tzinfo is not None and added.source_message_id is None
    assert memory.get_memory("ana", added.id) == added
    assert memory.list_memories("ana") == [added]
    assert memory.list_memories("nobody") == []


def test_default_importance_and_kind(memory: TrueMem) -> None:
    added = memory.add_memory("ana", "Reads science fiction")
    assert (added.importance, added.kind) == (Settings().default_importance, "semantic")


def test_update_reembeds_and_records_history(memory: TrueMem) -> None:
    added = memory.add_memory("ana", "Drives a red Fiat", importance=4)
    for text, _ in FACTS:
        memory.add_memory("ana", text)
    updated = memory.update_memory("ana", added.id, text="Drives an electric Tesla", importance=3)
    assert (updated.text, updated.importance) == ("Drives an electric Tesla", 3)
    assert updated.updated_at > added.updated_at
    top = memory.search("ana", "Which electric car do I drive?", k=1)[0]
    assert top.memory.id == added.id
    actions = [(e.action, e.old_text, e.new_text) for e in memory.history("ana", added.id)]
    assert actions == [
        ("added", None, "Drives a red Fiat"),
        ("updated", "Drives a red Fiat", "Drives an electric Tesla"),
    ]


def test_delete_erases_text_from_history(memory: TrueMem) -> None:
    added = memory.add_memory("ana", "Is pregnant")
    memory.update_memory("ana", added.id, text="Is pregnant with twins")
    memory.delete_memory("ana", added.id)
    with pytest.raises(NotFoundError):
        memory.get_memory("ana", added.id)
    events = memory.history("ana", added.id)
    assert [e.action for e in events] == ["added", "updated", "deleted"]
    assert all(e.old_text is None and e.new_text is None for e in events)
    assert "pregnant" not in json.dumps(memory.export_user("ana"))


def test_near_duplicate_merges_into_the_more_complete_text(memory: TrueMem) -> None:
    first = memory.add_memory("ana", "Lives in Lisbon", importance=3)
    second = memory.add_memory("ana", "Lives in Lisbon, Portugal", importance=2)
    assert second.id == first.id
    assert second.text == "Lives in Lisbon, Portugal"
    assert second.reinforcements == 1
    assert second.importance == 4  # max(3, 2), raised once by the restatement
    assert len(memory.list_memories("ana")) == 1
    merged = memory.history("ana", first.id)[-1]
    assert (merged.action, merged.old_text, merged.new_text) == (
        "merged", "Lives in Lisbon", "Lives in Lisbon, Portugal")


def test_reinforcement_is_capped_and_never_lowers(memory: TrueMem) -> None:
    memory.add_memory("ana", "Works as a data engineer at Acme", importance=1)
    for _ in range(6):
        latest = memory.add_memory("ana", "Works as a data engineer at Acme", importance=1)
    assert latest.importance == Settings().reinforcement_cap
    assert latest.reinforcements == 6
    explicit = memory.add_memory("ana", "Is allergic to peanuts", importance=5)
    again = memory.add_memory("ana", "Is allergic to peanuts.", importance=2)
    assert (again.id, again.importance) == (explicit.id, 5)


def test_distinct_facts_are_not_merged(memory: TrueMem) -> None:
    memory.add_memory("ana", "Likes Python")
    memory.add_memory("ana", "Likes hiking")
    assert len(memory.list_memories("ana")) == 2


def test_search_ranks_by_meaning(memory: TrueMem) -> None:
    for text, importance in FACTS:
        memory.add_memory("ana", text, importance=importance)
    hits = memory.search("ana", "What is my dog called?", k=3)
    assert len(hits) == 3
    assert hits[0].memory.text == "Has a golden retriever named Max"
    assert hits[0].score >= hits[1].score >= hits[2].score
    assert len(memory.search("ana", "anything")) == 10  # default k


def test_small_users_get_everything(memory: TrueMem) -> None:
    for text, _ in FACTS[:4]:
        memory.add_memory("ana", text)
    hits = memory.search("ana", "quantum chromodynamics")
    assert sorted(h.memory.text for h in hits) == sorted(t for t, _ in FACTS[:4])


def test_isolation_between_users(memory: TrueMem) -> None:
    secret = memory.add_memory("ana", "Has a golden retriever named Max")
    memory.add_memory("bob", "Owns a cat")
    for attempt in (
        lambda: memory.get_memory("bob", secret.id),
        lambda: memory.update_memory("bob", secret.id, text="hijacked"),
        lambda: memory.delete_memory("bob", secret.id),
        lambda: memory.history("bob", secret.id),
    ):
        with pytest.raises(NotFoundError) as caught:
            attempt()
        with pytest.raises(NotFoundError) as unknown:
            memory.get_memory("bob", "00000000-0000-0000-0000-000000000000")
        assert type(caught.value) is type(unknown.value)
    assert [h.memory.user_id for h in memory.search("bob", "dog named Max")] == ["bob"]
    assert memory.get_memory("ana", secret.id).text == "Has a golden retriever named Max"
    # the same text for another user is that user's own memory, never a merge
    mine = memory.add_memory("bob", "Has a golden retriever named Max")
    assert mine.id != secret.id and mine.user_id == "bob"


def test_prune_archives_lowest_importance_oldest_first(store_url: str) -> None:
    settings = Settings(memory_limit=5)
    with TrueMem(store_url, settings=settings) as memory:
        added = [memory.add_memory("ana", text, importance=imp) for text, imp in FACTS[:7]]
        # FACTS[:7] importances: 4 3 4 3 2 1 5 -> at 6 the 1 goes, at 7 the 2 goes
        live = {m.text for m in memory.list_memories("ana")}
        assert live == {m.text for m in added} - {FACTS[4][0], FACTS[5][0]}
        archived = {m.text: m for m in memory.list_memories("ana", include_archived=True)}
        assert archived[FACTS[5][0]].state == "archived"
        assert memory.history("ana", archived[FACTS[5][0]].id)[-1].action == "pruned"
        assert memory.admin.prune("ana") == []
        # equal importance: the oldest goes first
        memory.add_memory("ana", "Collects vinyl records", importance=3)
        assert FACTS[1][0] not in {m.text for m in memory.list_memories("ana")}


def test_maintain_leaves_what_pruning_archived_as_it_is(store_url: str) -> None:
    """A memory pruned past the soft limit scores like a new one: maintenance must not
    raise it and prune it again on every exchange, each time with two history events."""
    with TrueMem(store_url, settings=Settings(memory_limit=5)) as memory:
        added = [memory.add_memory("ana", text, importance=imp) for text, imp in FACTS[:7]]
        pruned = {m.id for m in memory.list_memories("ana", include_archived=True)
                  if m.state == "archived"}
        assert len(pruned) == 2
        events = {m.id: len(memory.history("ana", m.id)) for m in added}
        for _ in range(2):
            assert memory.admin.maintain("ana") == {}
        after = memory.list_memories("ana", include_archived=True)
        assert {m.id for m in after if m.state == "archived"} == pruned
        assert {m.id: len(memory.history("ana", m.id)) for m in added} == events
        # a memory pruned by maintenance itself gets its "pruned" event, and only that
        with TrueMem(store_url, settings=Settings(memory_limit=4)) as smaller:
            changed = smaller.admin.maintain("ana")
            [gone] = changed
            assert changed == {gone: "archived"}
            assert [e.action for e in smaller.history("ana", gone)][-1:] == ["pruned"]
            assert len(smaller.history("ana", gone)) == events[gone] + 1
            assert smaller.admin.maintain("ana") == {}


def test_prune_never_touches_important_memories(store_url: str) -> None:
    with TrueMem(store_url, settings=Settings(memory_limit=3)) as memory:
        for text, _ in FACTS[:6]:
            memory.add_memory("ana", text, importance=4)
        assert len(memory.list_memories("ana")) == 6
        assert memory.admin.prune("ana") == []


def test_restated_archived_memory_comes_back(store_url: str) -> None:
    with TrueMem(store_url, settings=Settings(memory_limit=2)) as memory:
        old = memory.add_memory("ana", "Plays the piano badly", importance=1)
        memory.add_memory("ana", "Lives in Lisbon", importance=4)
        memory.add_memory("ana", "Has two children", importance=4)
        assert memory.get_memory("ana", old.id).state == "archived"
        again = memory.add_memory("ana", "Plays the piano badly", importance=1)
        assert (again.id, again.state) == (old.id, "active")


def test_erase_user_removes_every_row(memory: TrueMem) -> None:
    gone = memory.add_memory("ana", "Lives in Lisbon")
    kept = memory.add_memory("bob", "Lives in Porto")
    assert memory.erase_user("ana") == 1
    assert memory.list_memories("ana", include_archived=True) == []
    with pytest.raises(NotFoundError):
        memory.history("ana", gone.id)
    assert memory.export_user("ana")["memories"] == []
    assert memory.list_memories("bob") == [kept]


def test_export_import_round_trip(memory: TrueMem) -> None:
    original = memory.add_memory("ana", "Lives in Lisbon", importance=4, kind="semantic")
    memory.update_memory("ana", original.id, importance=5)
    memory.add_memory("ana", "Went to Tokyo last spring", importance=2, kind="episodic")
    exported = json.loads(json.dumps(memory.export_user("ana")))
    restored = memory.import_user("carla", exported)
    assert len(restored) == 2
    again = json.loads(json.dumps(memory.export_user("carla")))

    def essence(doc: dict[str, object]) -> list[tuple[object, ...]]:
        return sorted(
            (m["text"], m["importance"], m["kind"], m["source"], m["created_at"],
             tuple(e["action"] for e in m["history"]))
            for m in doc["memories"]  # type: ignore[attr-defined]
        )

    assert [e[:5] for e in essence(again)] == [e[:5] for e in essence(exported)]
    assert all(actions[-1] == "imported" for *_, actions in essence(again))
    assert memory.search("carla", "Where do I live?", k=1)[0].memory.text == "Lives in Lisbon"


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda m: m.add_memory("ana", ""), "empty"),
        (lambda m: m.add_memory("ana", "   \n"), "empty"),
        (lambda m: m.add_memory("ana", "x" * 5000), "limit"),
        (lambda m: m.add_memory("ana", "fact", importance=0), "importance"),
        (lambda m: m.add_memory("ana", "fact", importance=6), "importance"),
        (lambda m: m.add_memory("ana", "fact", importance="5"), "importance"),
        (lambda m: m.add_memory("ana", "fact", importance=True), "importance"),
        (lambda m: m.add_memory("ana", "fact", kind="procedural"), "kind"),
        (lambda m: m.add_memory("ana", "fact", source="rumour"), "source"),
        (lambda m: m.add_memory(42, "fact"), "user_id"),
        (lambda m: m.add_memory("", "fact"), "user_id"),
        (lambda m: m.add_memory("ana", None), "text"),
        (lambda m: m.get_memory("ana", 7), "memory_id"),
        (lambda m: m.update_memory("ana", "x"), "nothing to update"),
        (lambda m: m.search("ana", "q", k=0), "k"),
        (lambda m: m.import_user("ana", {"format": "other"}), "export"),
        (lambda m: m.import_user("ana", {"format": "truemem.user/1", "memories": [
            {"text": "ok", "importance": 3, "created_at": "2024-01-01T00:00:00+00:00",
             "updated_at": "2024-01-01T00:00:00+00:00"},
            {"text": "bad", "importance": 9, "created_at": "2024-01-01T00:00:00+00:00",
             "updated_at": "2024-01-01T00:00:00+00:00"}]}), "importance must be"),
    ],
)
def test_bad_input_is_rejected_and_writes_nothing(memory: TrueMem, call, message) -> None:  # type: ignore[no-untyped-def]
    memory.add_memory("ana", "Lives in Lisbon")
    before = memory.export_user("ana")["memories"]
    with pytest.raises(InvalidInputError, match=message):
        call(memory)
    assert memory.export_user("ana")["memories"] == before
    assert memory.list_memories("ana", include_archived=True)[0].text == "Lives in Lisbon"


def test_unknown_ids_raise_not_found(memory: TrueMem) -> None:
    for call in (memory.get_memory, memory.delete_memory, memory.history):
        with pytest.raises(NotFoundError, match="no memory"):
            call("ana", "nope")


async def test_async_api_from_another_loop(memory: TrueMem) -> None:
    added = await memory.aadd_memory("ana", "Lives in Lisbon", importance=4)
    assert await memory.aget_memory("ana", added.id) == added
    assert [m.id for m in await memory.alist_memories("ana")] == [added.id]
    hits = await memory.asearch("ana", "home town")
    assert hits[0].memory.id == added.id
    await memory.aupdate_memory("ana", added.id, importance=5)
    assert [e.action for e in await memory.ahistory("ana", added.id)] == ["added", "updated"]
    assert await memory.admin.aprune("ana") == []
    exported = await memory.aexport_user("ana")
    assert len(await memory.aimport_user("ben", exported)) == 1
    await memory.adelete_memory("ana", added.id)
    assert await memory.aerase_user("ben") == 1


def test_a_new_value_supersedes_the_old_fact(memory: TrueMem) -> None:
    old = memory.add_memory("ana", "Lives in Madrid", importance=4)
    new = memory.add_memory("ana", "Lives in Berlin", importance=4)
    assert [m.text for m in memory.list_memories("ana")] == ["Lives in Berlin"]
    closed = memory.get_memory("ana", old.id)
    assert closed.state == "archived"
    event = memory.history("ana", old.id)[-1]
    assert event.action == "superseded" and new.id in (event.reason or "")
    assert memory.search("ana", "Where do I live?")[0].memory.id == new.id
    # additive facts both stay current
    memory.add_memory("ana", "Likes tea")
    memory.add_memory("ana", "Likes coffee")
    assert {"Likes tea", "Likes coffee"} <= {m.text for m in memory.list_memories("ana")}


def test_a_restated_old_value_is_current_again(memory: TrueMem) -> None:
    madrid = memory.add_memory("ana", "Lives in Madrid", importance=4)
    berlin = memory.add_memory("ana", "Lives in Berlin", importance=4)
    assert memory.get_memory("ana", madrid.id).superseded_by == berlin.id
    again = memory.add_memory("ana", "Lives in Madrid", importance=4)  # moved back
    assert again.id == madrid.id
    assert (again.state, again.valid_to, again.superseded_by) == ("active", None, None)
    assert [m.text for m in memory.list_memories("ana")] == ["Lives in Madrid"]
    closed = memory.get_memory("ana", berlin.id)
    assert (closed.state, closed.superseded_by) == ("archived", madrid.id)
    assert closed.valid_to is not None
    assert "current again" in (memory.history("ana", madrid.id)[-1].reason or "")
    assert memory.history("ana", berlin.id)[-1].action == "superseded"


def test_deleting_the_new_fact_leaves_no_trace_of_it_in_the_old_ones_history(
    memory: TrueMem,
) -> None:
    madrid = memory.add_memory("ana", "Lives in Madrid", importance=4)
    berlin = memory.add_memory("ana", "Lives in Berlin", importance=4)
    assert "berlin" in (memory.history("ana", madrid.id)[-1].reason or "")
    memory.delete_memory("ana", berlin.id)
    closed = memory.get_memory("ana", madrid.id)
    assert (closed.state, closed.superseded_by) == ("archived", None)
    assert not any("erlin" in (event.reason or "") + (event.new_text or "")
                   for event in memory.history("ana", madrid.id))


def test_closed_facts_stay_closed_through_export_and_import(memory: TrueMem) -> None:
    memory.add_memory("ana", "Lives in Madrid", importance=4)
    memory.add_memory("ana", "Lives in Berlin", importance=4)
    memory.import_user("ben", memory.export_user("ana"))
    restored = {m.text: m for m in memory.list_memories("ben", include_archived=True)}
    assert [m.text for m in memory.list_memories("ben")] == ["Lives in Berlin"]
    assert restored["Lives in Madrid"].superseded_by == restored["Lives in Berlin"].id
    assert restored["Lives in Madrid"].valid_to is not None
    bad = memory.export_user("ana")
    bad["memories"][0]["superseded_by"] = ["not", "an", "id"]
    with pytest.raises(InvalidInputError, match="malformed"):
        memory.import_user("cid", bad)
    assert memory.list_memories("cid", include_archived=True) == []


def test_kind_is_classified_when_not_given(memory: TrueMem) -> None:
    event = memory.add_memory("ana", "Yesterday the SSL certificate expired and broke login")
    fact = memory.add_memory("ana", "Prefers Python")
    assert (event.kind, fact.kind) == ("episodic", "semantic")


def test_feedback_and_lifecycle(store_url: str) -> None:
    with TrueMem(store_url) as memory:
        minor = memory.add_memory("ana", "Drinks coffee without sugar", importance=1)
        key = memory.add_memory("ana", "Works as a data engineer at Acme", importance=4)
        wrong = memory.add_memory("ana", "Has three cats", importance=2)
        for _ in range(2):
            assert memory.feedback("ana", wrong.id, "irrelevant").id == wrong.id
            memory.feedback("ana", key.id, "irrelevant")
        assert memory.history("ana", wrong.id)[-1].action == "feedback"
        with pytest.raises(InvalidInputError, match="verdict"):
            memory.feedback("ana", minor.id, "meh")  # type: ignore[arg-type]
        # fresh memories stay active, but one the user called irrelevant twice is
        # down-ranked, unless it is protected (importance >= 4)
        assert memory.admin.maintain("ana") == {wrong.id: "ephemeral"}

        # half a year without use
        assert execute(memory, update(memories).values(
            created_at=utcnow() - timedelta(days=180))) == 3
        assert memory.admin.maintain("ana") == {minor.id: "archived", wrong.id: "archived"}
        assert memory.get_memory("ana", key.id).state == "active"  # importance 4 is protected
        assert [m.id for m in memory.list_memories("ana")] == [key.id]
        # stating it again brings it back
        again = memory.add_memory("ana", "Drinks coffee without sugar", importance=1)
        assert (again.id, again.state) == (minor.id, "active")


@contextmanager
def memory_rows_scored() -> Iterator[list[str]]:
    """The ids of the memory rows whose dynamic score is written meanwhile."""
    written: list[str] = []

    def seen(conn: Any, cursor: Any, statement: str, parameters: Any, context: Any,
             many: bool) -> None:
        if statement.startswith("UPDATE memories") and "dynamic_score" in statement:
            for row in parameters if many else [parameters]:  # SQLite's: tuples, id last
                written.append(row["row_id"] if isinstance(row, dict) else row[-1])

    event.listen(Engine, "before_cursor_execute", seen)
    try:
        yield written
    finally:
        event.remove(Engine, "before_cursor_execute", seen)


def test_maintain_rewrites_only_the_scores_that_moved(memory: TrueMem) -> None:
    added = [memory.add_memory("ana", text, importance=importance)
             for text, importance in FACTS[:4]]
    with memory_rows_scored() as written:
        assert memory.admin.maintain("ana") == {}
    assert sorted(written) == sorted(m.id for m in added)  # never scored before
    first = dict(rows(memory, select(memories.c.id, memories.c.dynamic_score)))
    # a moment later every score is within SCORE_STEP of the stored one: no row rewritten
    with memory_rows_scored() as written:
        assert memory.admin.maintain("ana") == {}
    assert written == []
    # one memory unused for 40 days: only its row is rewritten, with its lower score
    stale = added[1].id
    execute(memory, update(memories).where(memories.c.id == stale).values(
        created_at=utcnow() - timedelta(days=40)))
    with memory_rows_scored() as written:
        assert memory.admin.maintain("ana") == {}
    assert written == [stale]
    now = dict(rows(memory, select(memories.c.id, memories.c.dynamic_score)))
    assert now[stale] < first[stale] - SCORE_STEP
    assert {k: v for k, v in now.items() if k != stale} == {
        k: v for k, v in first.items() if k != stale}


def test_retrieval_is_counted(memory: TrueMem) -> None:
    added = memory.add_memory("ana", "Lives in Lisbon")
    memory.get_context("ana", "s", "Where do I live?")
    memory.drain()

    [row] = rows(memory, select(memories.c.retrievals, memories.c.last_accessed_at)
                 .where(memories.c.id == added.id))
    assert row.retrievals == 1 and row.last_accessed_at is not None


def _twice_irrelevant(memory: TrueMem, memory_id: str) -> None:
    for _ in range(2):
        memory.feedback("ana", memory_id, "irrelevant")


def test_a_fact_called_wrong_is_closed_whatever_its_importance(memory: TrueMem) -> None:
    """"wrong" says the fact is false: it is served no more, not even as a critical
    memory, maintenance does not raise it again, its history keeps it, and restating
    it reopens it. "irrelevant" only lowers a score."""
    allergy = memory.add_memory("ana", "Is allergic to peanuts", importance=5)
    cats = memory.add_memory("ana", "Has three cats", importance=2)
    closed = memory.feedback("ana", allergy.id, "wrong")
    assert (closed.state, closed.valid_to is not None) == ("archived", True)
    assert [e.action for e in memory.history("ana", allergy.id)][-2:] == [
        "feedback", "lifecycle"]
    context = memory.get_context("ana", "s", "Which food can't I eat? Peanuts?")
    served = {m.id for m in context.facts}
    assert allergy.id not in served and "peanuts" not in context.to_system_prompt()
    assert [m.id for m in memory.list_memories("ana")] == [cats.id]
    assert memory.admin.maintain("ana") == {}  # not raised again by its importance
    assert memory.get_memory("ana", allergy.id).state == "archived"
    again = memory.add_memory("ana", "Is allergic to peanuts", importance=5)
    assert (again.id, again.state, again.valid_to) == (allergy.id, "active", None)
    assert memory.history("ana", allergy.id)[-1].reason == (
        "restated after it was closed: current again")
    assert allergy.id in {m.id for m in memory.get_context("ana", "s", "Peanuts?").critical}
    # "wrong" again: a closed fact keeps the instant it was closed
    until = memory.feedback("ana", cats.id, "wrong").valid_to
    assert until is not None and memory.feedback("ana", cats.id, "wrong").valid_to == until
    assert [e.action for e in memory.history("ana", cats.id)][-3:] == [
        "feedback", "lifecycle", "feedback"]


@pytest.mark.parametrize("how", ["add_memory", "add_memories", "update_memory"])
def test_a_fact_called_wrong_then_restated_or_corrected_is_current_and_stays(
    memory: TrueMem, how: str
) -> None:
    """The verdict was on the fact as it stood: restated or corrected, it is current
    again and its "wrong" no longer counts (maintenance would demote it at once)."""
    coffee = memory.add_memory("ana", "Drinks coffee without sugar", importance=1)
    memory.feedback("ana", coffee.id, "wrong")
    if how == "add_memory":
        memory.add_memory("ana", "Drinks coffee without sugar", importance=1)
    elif how == "add_memories":
        memory.add_memories("ana", ["Plays tennis on Sundays", "Drinks coffee without sugar"])
    else:
        memory.update_memory("ana", coffee.id, text="Drinks coffee with one sugar")
    now = memory.get_memory("ana", coffee.id)
    assert (now.state, now.valid_to) == ("active", None)
    assert memory.admin.maintain("ana") == {}
    assert coffee.id in {h.memory.id for h in memory.search("ana", "coffee sugar")}


def test_editing_a_superseded_fact_leaves_it_closed(memory: TrueMem) -> None:
    madrid = memory.add_memory("ana", "Lives in Madrid")
    memory.add_memory("ana", "Lives in Berlin")
    edited = memory.update_memory("ana", madrid.id, text="Lived in Madrid until 2024")
    assert (edited.state, edited.valid_to is not None) == ("archived", True)
    assert edited.superseded_by is not None


def test_ephemeral_memories_are_down_ranked(memory: TrueMem) -> None:
    dog = memory.add_memory("ana", "Has a golden retriever named Max", importance=2)
    memory.add_memory("ana", "Walks the dog every morning", importance=2)
    before = memory.search("ana", "my dog Max", k=2, mode="vector")
    assert before[0].memory.id == dog.id
    _twice_irrelevant(memory, dog.id)
    assert memory.admin.maintain("ana") == {dog.id: "ephemeral"}
    after = memory.search("ana", "my dog Max", k=2, mode="vector")
    assert [h.memory.id for h in after][-1] == dog.id  # still found, ranked lower
    assert after[-1].score < before[0].score


def test_a_retrieved_memory_is_active_again(memory: TrueMem) -> None:
    dog = memory.add_memory("ana", "Has a golden retriever named Max", importance=2)
    _twice_irrelevant(memory, dog.id)
    assert memory.admin.maintain("ana") == {dog.id: "ephemeral"}
    context = memory.get_context("ana", "s", "Tell me about my dog Max")
    assert dog.id in {hit.memory.id for hit in context.memories}
    memory.drain()
    assert memory.get_memory("ana", dog.id).state == "active"
