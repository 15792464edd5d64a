"""Bad input to the graph is typed and writes nothing; ids and names never cross users."""

from __future__ import annotations

from datetime import datetime

import pytest

from truemem_core import (
    EntitySpec,
    InvalidInputError,
    NotFoundError,
    ObservationSpec,
    RelationSpec,
    TrueMem,
)

NAIVE = datetime(2026, 1, 1)  # no time zone


@pytest.mark.parametrize("call", [
    lambda m: m.graph.add_entities("ana", {"name": "one mapping, not a list"}),
    lambda m: m.graph.add_entities("ana", [{"name": "a", "colour": "red"}]),
    lambda m: m.graph.add_entities("ana", [{"name": ""}]),
    lambda m: m.graph.add_entities("ana", [{"name": "a|b"}]),
    lambda m: m.graph.add_entities("ana", [{"name": "x" * 256}]),
    lambda m: m.graph.add_entities("ana", [EntitySpec("a", type="")]),
    lambda m: m.graph.add_observations("ana", [ObservationSpec("a", "  ")]),
    lambda m: m.graph.add_observations("ana", [ObservationSpec("a", "t", valid_from=NAIVE)]),
    lambda m: m.graph.add_relations(
        "ana", [RelationSpec("a", "uses", "b", confidence=float("nan"))]),
    lambda m: m.graph.add_relations("ana", [{"from": "a", "to": "b"}]),
    lambda m: m.graph.add_relations("ana", [RelationSpec("a", "uses", "b"), "a uses b"]),
    lambda m: m.graph.add_relations("", [RelationSpec("a", "uses", "b")]),
    lambda m: m.graph.causes("ana", "a", depth=True),
    lambda m: m.graph.path("ana", "a", "b", max_depth=11),
    lambda m: m.graph.get("ana", as_of=NAIVE),
    lambda m: m.graph.list_entities("ana", limit=0),
])
def test_bad_input_is_refused_and_writes_nothing(memory: TrueMem, call: object) -> None:
    memory.graph.add_relations("ana", [RelationSpec("a", "uses", "b")])
    before = memory.graph.get("ana").to_dict()
    with pytest.raises(InvalidInputError):
        call(memory)  # type: ignore[operator]
    assert memory.graph.get("ana").to_dict() == before


def test_another_users_entity_is_unknown(memory: TrueMem) -> None:
    [mine] = memory.graph.add_entities("ana", [EntitySpec("db-1", "server")])
    memory.graph.add_entities("bob", [EntitySpec("db-2", "server")])
    for handle in (mine.id, "db-1"):
        with pytest.raises(NotFoundError):
            memory.graph.get_entity("bob", handle)
        with pytest.raises(NotFoundError):
            memory.graph.neighbours("bob", handle)
    assert memory.graph.delete_entities("bob", ["db-1"]) == 0
    assert memory.graph.get_entity("ana", mine.id) == mine


def test_queries_and_retractions(memory: TrueMem) -> None:
    memory.graph.add_entities("ana", [
        {"name": "db-1", "entityType": "server",
         "observations": ["Runs PostgreSQL 16", "Lives in Frankfurt"]},
        {"name": "Atlas", "entityType": "project"}])
    assert [e.name for e in memory.graph.list_entities("ana", query="frankfurt")] == ["db-1"]
    assert [e.name for e in memory.graph.list_entities("ana", type="project")] == ["Atlas"]
    assert memory.graph.delete_observations("ana", "DB-1", ["runs postgresql 16"]) == 1
    assert [o.text for o in memory.graph.list_observations("ana", "db-1")] == ["Lives in Frankfurt"]
    assert memory.graph.delete_observations("ana", "nobody", ["x"]) == 0
    assert memory.graph.delete_entities("ana", ["db-1", "db-1", "ghost"]) == 1
    assert [e.name for e in memory.graph.list_entities("ana")] == ["Atlas"]
