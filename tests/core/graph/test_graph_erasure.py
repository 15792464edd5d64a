"""Erasure leaves no graph row: ``delete_memory`` removes what the memory gave the graph,
``erase_user`` every graph row of the user (each graph table read directly); the graph
travels with ``export_user`` / ``import_user``."""

from __future__ import annotations

from datetime import UTC, datetime

from db_access import rows
from sqlalchemy import select

from truemem_core import GraphFacts, ObservationSpec, RelationSpec, TrueMem
from truemem_core.graph.write import apply_facts
from truemem_core.storage.schema import GRAPH_TABLES, graph_entities

FACTS = GraphFacts(
    observations=(ObservationSpec("db-1", "Runs PostgreSQL 16", "server"),),
    relations=(RelationSpec("Atlas", "uses", "db-1", source_type="project"),
               RelationSpec("outage", "led_to", "migration", evidence="Atlas was down")),
)


def derive(memory: TrueMem, user: str, memory_id: str, facts: GraphFacts = FACTS) -> None:
    """What extraction does: the facts of a memory, written with its id."""
    async def run() -> None:
        async with memory._core.db.transaction() as conn:
            await apply_facts(conn, user, facts, source_memory_id=memory_id,
                              source_message_id=None, now=datetime.now(UTC))
    memory._loop.run(run())


def graph_rows(memory: TrueMem, user: str) -> dict[str, int]:
    return {table.name: len(rows(memory, select(table).where(table.c.user_id == user)))
            for table in GRAPH_TABLES}


def test_delete_memory_removes_what_it_gave_the_graph(memory: TrueMem) -> None:
    first = memory.add_memory("ana", "Atlas runs on db-1 with PostgreSQL 16")
    second = memory.add_memory("ana", "Ana plays the violin")
    derive(memory, "ana", first.id)
    derive(memory, "ana", second.id, GraphFacts(
        relations=(RelationSpec("Ana", "plays", "violin"), RelationSpec("Ana", "knows", "db-1"))))
    memory.graph.add_relations("bob", [RelationSpec("Atlas", "uses", "db-1")])
    # retracted:
    memory.graph.delete_relations("ana", [RelationSpec("outage", "led_to", "migration")])
    memory.delete_memory("ana", first.id)
    left = rows(memory, select(graph_entities.c.name).where(graph_entities.c.user_id == "ana"))
    # db-1 stays: a relation of the second memory still uses it
    assert sorted(row.name for row in left) == ["Ana", "db-1", "violin"]
    assert graph_rows(memory, "ana") == {
        "graph_relations": 2, "graph_observations": 0, "graph_entities": 3}
    assert [(r.source, r.target) for r in memory.graph.list_relations("bob")] == [("Atlas", "db-1")]


def test_erase_user_leaves_no_graph_row(memory: TrueMem) -> None:
    kept = memory.add_memory("ana", "Atlas runs on db-1")
    derive(memory, "ana", kept.id)
    memory.graph.add_entities("ana", [{"name": "Lisbon", "entityType": "place"}])
    memory.graph.delete_entities("ana", ["Lisbon"])  # a retracted row is a row too
    memory.graph.add_relations("bob", [RelationSpec("Atlas", "uses", "db-1")])
    memory.erase_user("ana")
    assert graph_rows(memory, "ana") == dict.fromkeys(
        ("graph_relations", "graph_observations", "graph_entities"), 0)
    assert len(memory.graph.get("bob").relations) == 1


def test_the_graph_travels_with_export_and_import(memory: TrueMem) -> None:
    fact = memory.add_memory("ana", "Atlas runs on db-1")
    derive(memory, "ana", fact.id)
    memory.graph.add_relations("ana", [RelationSpec("Atlas", "uses", "db-2", replaces="db-1")])
    exported = memory.export_user("ana")
    [copy] = memory.import_user("eve", exported)
    mine, theirs = memory.graph.get("ana"), memory.graph.get("eve")
    assert [(r.source, r.type, r.target) for r in theirs.relations] == [
        (r.source, r.type, r.target) for r in mine.relations]
    assert [o.text for o in theirs.observations] == [o.text for o in mine.observations]
    assert [o.source_memory_id for o in theirs.observations] == [copy.id]
    assert graph_rows(memory, "eve") == graph_rows(memory, "ana")  # history too
    memory.import_user("eve", exported)  # again: the same entities, not a second copy
    assert len(memory.graph.list_entities("eve")) == len(mine.entities)


def test_a_folded_memory_hands_its_graph_rows_to_the_survivor(memory: TrueMem) -> None:
    from truemem_core.graph.erasure import repoint_memories

    absorbed = memory.add_memory("ana", "Atlas runs on db-1")
    survivor = memory.add_memory("ana", "Ana plays the violin")
    derive(memory, "ana", absorbed.id)

    async def fold() -> None:  # what a merge does in the memory's transaction
        async with memory._core.db.transaction() as conn:
            await repoint_memories(conn, "ana", {absorbed.id: survivor.id})
    memory._loop.run(fold())
    graph = memory.graph.get("ana")
    assert {o.source_memory_id for o in graph.observations} == {survivor.id}
    assert {r.evidence_memory_ids for r in graph.relations} == {(survivor.id,)}
    memory.delete_memory("ana", survivor.id)
    assert graph_rows(memory, "ana") == dict.fromkeys(
        ("graph_relations", "graph_observations", "graph_entities"), 0)
