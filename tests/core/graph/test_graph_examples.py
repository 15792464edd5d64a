"""The seed's examples end to end, on both backends: which servers a project uses, what was
known about a server on a date (``as_of`` / ``valid_at``), why a migration happened."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from truemem_core import (
    EntitySpec,
    InvalidInputError,
    NotFoundError,
    ObservationSpec,
    RelationSpec,
    TrueMem,
)

MARCH_1 = datetime(2026, 3, 1, tzinfo=UTC)
MARCH_15 = datetime(2026, 3, 15, tzinfo=UTC)
APRIL_1 = datetime(2026, 4, 1, tzinfo=UTC)


def test_which_servers_does_a_project_use(memory: TrueMem) -> None:
    memory.graph.add_entities("ana", [EntitySpec("Atlas", "project"),
                                      {"name": "db-1", "entityType": "server", "aliases": ["DB1"]},
                                      {"name": "web-1", "entityType": "server"}])
    memory.graph.add_relations("ana", [
        {"from": "Atlas", "relationType": "uses", "to": "db-1"},
        RelationSpec("atlas", "uses", "WEB-1"),
        RelationSpec("Atlas", "uses", "Grafana", target_type="tool")])
    used = memory.graph.list_relations("ana", "Atlas", type="uses")
    servers = {r.target for r in used
               if memory.graph.get_entity("ana", r.target_id).type == "server"}
    assert servers == {"db-1", "web-1"}
    assert memory.graph.get_entity("ana", "db1").name == "db-1"  # by alias, any case
    assert [(r.source, r.type, r.target) for r in memory.graph.neighbours("ana", "DB-1")] == [
        ("Atlas", "uses", "db-1")]


def test_the_same_facts_twice_write_nothing_new(memory: TrueMem) -> None:
    for _ in range(2):
        memory.graph.add_relations("ana", [RelationSpec("Atlas", "uses", "db-1")])
        memory.graph.add_observations("ana", [ObservationSpec("db-1", "Runs PostgreSQL 16")])
    graph = memory.graph.get("ana")
    assert [(e.name, e.type) for e in graph.entities] == [("Atlas", "thing"), ("db-1", "thing")]
    assert len(graph.relations) == 1 and len(graph.observations) == 1


def test_what_did_we_know_about_a_server_on_15_march(memory: TrueMem) -> None:
    memory.graph.add_observations("ana", [
        ObservationSpec("db-1", "Runs PostgreSQL 14", "server", valid_from=MARCH_1)])
    memory.graph.add_relations("ana", [RelationSpec("db-1", "runs", "PostgreSQL 14",
                                                    valid_from=MARCH_1)])
    known_then = datetime.now(UTC)
    memory.graph.add_relations("ana", [RelationSpec("db-1", "runs", "PostgreSQL 16",
                                                    valid_from=APRIL_1, replaces="PostgreSQL 14")])
    # what is true now: 16 only
    assert [r.target for r in memory.graph.list_relations("ana", "db-1")] == ["PostgreSQL 16"]
    # what was true on 15 March, as we know it now: 14, closed on 1 April
    [then] = memory.graph.list_relations("ana", "db-1", valid_at=MARCH_15)
    assert (then.target, then.valid_from, then.valid_to) == ("PostgreSQL 14", MARCH_1, APRIL_1)
    # what the system held before the migration was recorded: 14, still open
    [held] = memory.graph.list_relations("ana", "db-1", as_of=known_then, valid_at=MARCH_15)
    assert (held.target, held.valid_to) == ("PostgreSQL 14", None)
    assert [o.text for o in memory.graph.list_observations("ana", "db-1", valid_at=MARCH_15)] == [
        "Runs PostgreSQL 14"]
    # before anything was recorded, nothing: not even the server
    before = known_then - timedelta(hours=1)
    assert memory.graph.list_relations("ana", as_of=before) == []
    with pytest.raises(NotFoundError):
        memory.graph.list_relations("ana", "db-1", as_of=before)


def test_why_did_we_migrate(memory: TrueMem) -> None:
    memory.graph.add_relations("ana", [
        RelationSpec("slow queries", "caused", "outage", evidence="the 2 March post-mortem"),
        RelationSpec("outage", "led_to", "migration to PostgreSQL 16",
                     evidence="we decided after the outage"),
        RelationSpec("new hardware", "enabled", "migration to PostgreSQL 16"),
        RelationSpec("migration to PostgreSQL 16", "uses", "db-1"),  # not causal
    ])
    hops = memory.graph.causes("ana", "migration to PostgreSQL 16")
    assert [(h.depth, h.relation.source, h.relation.type) for h in hops] == [
        (1, "new hardware", "enabled"), (1, "outage", "led_to"), (2, "slow queries", "caused")]
    assert hops[1].relation.evidence == "we decided after the outage"
    assert [h.relation.target for h in memory.graph.effects("ana", "slow queries")] == [
        "outage", "migration to PostgreSQL 16"]
    chain = memory.graph.path("ana", "slow queries", "db-1")
    assert [(r.source, r.target) for r in chain] == [
        ("slow queries", "outage"), ("outage", "migration to PostgreSQL 16"),
        ("migration to PostgreSQL 16", "db-1")]


def test_bad_input_writes_nothing(memory: TrueMem) -> None:
    with pytest.raises(InvalidInputError):
        memory.graph.add_relations("ana", [RelationSpec("a", "uses", "b"), {"from": "a"}])
    with pytest.raises(InvalidInputError):
        memory.graph.add_observations("ana", [{"entity": "a", "text": "x", "confidence": 2}])
    memory.graph.add_entities(
        "ana", [EntitySpec("Mercury", "planet"), EntitySpec("Mercury", "element")])
    with pytest.raises(InvalidInputError, match="several types"):
        memory.graph.add_relations("ana", [RelationSpec("x", "orbits", "y"),
                                           RelationSpec("probe", "orbits", "mercury")])
    assert {e.name for e in memory.graph.list_entities("ana")} == {"Mercury"}
    with pytest.raises(NotFoundError):
        memory.graph.causes("ana", "nothing")
