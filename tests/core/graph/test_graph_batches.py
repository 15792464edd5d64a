"""Graph batches up to the documented limit (``MAX_ITEMS``) go through on both backends.

SQLite refused them with "Expression tree is too large" (one LIKE per name, ORed) from
about a thousand names; PostgreSQL took time quadratic in the batch
(``benchmarks/graph_batches.py`` times the growth).
"""

from __future__ import annotations

import pytest

from truemem_core import InvalidInputError, TrueMem
from truemem_core.graph import erasure, superseded
from truemem_core.graph.names import MAX_ITEMS
from truemem_core.storage.schema import utcnow


def test_the_largest_entity_batches_are_written_and_retracted(memory: TrueMem) -> None:
    names = [f"entity {n}" for n in range(MAX_ITEMS)]
    added = memory.graph.add_entities("ana", [
        {"name": name, "type": "thing", "aliases": [f"alias {name}"]} for name in names])
    assert [x.name for x in added] == names
    again = memory.graph.add_entities("ana", [{"name": f"alias {name}"} for name in names])
    assert [x.id for x in again] == [x.id for x in added]  # found by alias, not created
    assert memory.graph.delete_entities("ana", names) == MAX_ITEMS
    assert memory.graph.list_entities("ana") == []


def test_the_largest_relation_batch_is_written_and_retracted(memory: TrueMem) -> None:
    batch = [{"source": f"person {n}", "type": "knows", "target": f"friend {n}"}
             for n in range(MAX_ITEMS)]
    added = memory.graph.add_relations("ana", batch)
    assert [(r.source, r.target) for r in added] == [
        (f"person {n}", f"friend {n}") for n in range(MAX_ITEMS)]
    assert memory.graph.delete_relations("ana", batch) == MAX_ITEMS
    assert memory.graph.list_relations("ana") == []


def test_erasure_and_closing_take_thousands_of_memories(memory: TrueMem) -> None:
    """What a bulk add closes, or a deletion forgets, is looked up a chunk at a time."""
    memory.graph.add_relations("ana", [{"source": "ana", "type": "knows", "target": "ben"}])
    ids = [f"memory-{n:05d}" for n in range(3000)]

    async def run() -> None:
        async with memory._core.db.transaction() as conn:
            await superseded.end_with(conn, "ana", ids, utcnow())
            await erasure.repoint_memories(conn, "ana", {i: "survivor" for i in ids})
            await erasure.forget_memories(conn, "ana", ids)

    memory._loop.run(run())
    assert [(r.source, r.target) for r in memory.graph.list_relations("ana")] == [("ana", "ben")]


def test_the_graph_comes_in_pages(memory: TrueMem) -> None:
    """``graph()`` answered 100,000 relations at once: ``limit`` pages it, ``next_offset``
    says where the next page starts."""
    memory.graph.add_relations("ana", [{"source": f"p{n}", "type": "knows", "target": f"q{n}"}
                                       for n in range(5)])
    memory.graph.add_observations("ana", [{"entity": f"p{n}", "text": f"Met in year {n}"}
                                          for n in range(5)])
    now = utcnow()
    whole = memory.graph.get("ana", as_of=now)
    pages, offset = [], 0
    while offset is not None:
        pages.append(memory.graph.get("ana", as_of=now, limit=3, offset=offset))
        offset = pages[-1].next_offset
    assert [page.next_offset for page in pages] == [3, 6, 9, None]  # 10 entities, 5 relations
    assert [x for page in pages for x in page.entities] == whole.entities
    assert [x for page in pages for x in page.relations] == whole.relations
    assert all({o.entity_id for o in page.observations} <= {e.id for e in page.entities}
               for page in pages)  # each page's entities come with their observations
    assert sorted(o.id for page in pages for o in page.observations) == sorted(
        o.id for o in whole.observations)
    assert whole.next_offset is None
    for bad in ({"limit": 0}, {"limit": True}, {"offset": -1}, {"offset": "3"}):
        with pytest.raises(InvalidInputError):
            memory.graph.get("ana", **bad)  # type: ignore[arg-type]
