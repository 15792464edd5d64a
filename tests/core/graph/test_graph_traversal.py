"""causes / effects / path on chains, diamonds and cycles, with depth limits and time travel."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from truemem_core import CAUSAL_TYPES, InvalidInputError, RelationSpec, TrueMem


def _add(memory: TrueMem, *edges: str, user: str = "ana") -> None:
    """Edges as "a caused b"."""
    memory.graph.add_relations(user, [RelationSpec(*edge.split(" ")) for edge in edges])


def _hops(memory: TrueMem, entity: str, **options: int) -> list[tuple[int, str]]:
    return [(h.depth, f"{h.relation.source} {h.relation.type} {h.relation.target}")
            for h in memory.graph.causes("ana", entity, **options)]


def test_a_chain_and_its_depth_limit(memory: TrueMem) -> None:
    _add(memory, "a caused b", "b triggered c", "c led_to d", "x uses a")
    assert _hops(memory, "d") == [(1, "c led_to d"), (2, "b triggered c"), (3, "a caused b")]
    assert _hops(memory, "d", depth=2) == [(1, "c led_to d"), (2, "b triggered c")]
    assert [(h.depth, h.relation.target) for h in memory.graph.effects("ana", "a", depth=1)] == [
        (1, "b")]
    assert [h.relation.target for h in memory.graph.effects("ana", "a")] == ["b", "c", "d"]
    assert memory.graph.causes("ana", "a") == []  # "uses" is not causal
    with pytest.raises(InvalidInputError):
        memory.graph.causes("ana", "d", depth=0)


def test_a_diamond_lists_each_relation_once_at_its_nearest(memory: TrueMem) -> None:
    _add(memory, "root enabled left", "root enabled right", "left caused end",
         "right caused end", "origin required root", "left caused right")
    assert _hops(memory, "end", depth=5) == [
        (1, "left caused end"), (1, "right caused end"), (2, "left caused right"),
        (2, "root enabled left"), (2, "root enabled right"), (3, "origin required root")]


def test_cycles_end(memory: TrueMem) -> None:
    _add(memory, "a caused b", "b caused c", "c caused a", "s caused s")
    assert _hops(memory, "a", depth=10) == [
        (1, "c caused a"), (2, "b caused c"), (3, "a caused b")]
    assert _hops(memory, "s", depth=10) == [(1, "s caused s")]
    assert [r.type for r in memory.graph.path("ana", "a", "c")] == ["caused"]  # c caused a


def test_path_is_the_shortest_chain_either_way(memory: TrueMem) -> None:
    _add(memory, "ana works_on atlas", "atlas uses db", "db runs postgres",
         "ana knows bob", "bob admins postgres", "island uses nothing")
    chain = memory.graph.path("ana", "ana", "postgres")
    assert [(r.source, r.target) for r in chain] == [("ana", "bob"), ("bob", "postgres")]
    assert [(r.source, r.target) for r in memory.graph.path("ana", "db", "bob")] == [
        ("db", "postgres"), ("bob", "postgres")]
    assert memory.graph.path("ana", "ana", "island") == []
    assert memory.graph.path("ana", "ana", "db", max_depth=1) == []
    assert len(memory.graph.path("ana", "ana", "db", max_depth=2)) == 2


def test_traversal_travels_in_time(memory: TrueMem) -> None:
    _add(memory, "load caused outage")
    before = datetime.now(UTC)
    _add(memory, "bug caused outage")
    memory.graph.delete_relations("ana", [RelationSpec("load", "caused", "outage")])
    assert [h.relation.source for h in memory.graph.causes("ana", "outage")] == ["bug"]
    earlier = memory.graph.causes("ana", "outage", as_of=before)
    assert [h.relation.source for h in earlier] == ["load"]
    assert memory.graph.path("ana", "load", "outage") == []
    assert len(memory.graph.path("ana", "load", "outage", as_of=before)) == 1


def test_every_causal_type_is_followed(memory: TrueMem) -> None:
    _add(memory, *(f"c{i} {kind} c{i + 1}" for i, kind in enumerate(CAUSAL_TYPES)))
    assert len(memory.graph.causes("ana", f"c{len(CAUSAL_TYPES)}", depth=10)) == len(CAUSAL_TYPES)
