"""The reads the search's graph channel may use: the entities a query names and their
current facts (current observations, current one-hop relations either way)."""

from __future__ import annotations

from truemem_core import ObservationSpec, RelationSpec, TrueMem
from truemem_core.graph.reads import current_facts, find_entities


def test_find_entities_and_current_facts(memory: TrueMem) -> None:
    memory.graph.add_observations("ana", [ObservationSpec("db-1", "Runs in Frankfurt"),
                                          ObservationSpec("db-1", "Was in Paris"),
                                          ObservationSpec("Atlas", "A billing service")])
    memory.graph.add_relations("ana", [RelationSpec("Atlas", "uses", "db-1"),
                                       RelationSpec("db-1", "runs", "PostgreSQL 14"),
                                       RelationSpec("db-1", "runs", "PostgreSQL 16",
                                              replaces="PostgreSQL 14"),
                                 RelationSpec("Atlas", "owned_by", "Ana")])
    memory.graph.delete_observations("ana", "db-1", ["Was in Paris"])
    memory.graph.add_relations("bob", [RelationSpec("db-1", "runs", "MySQL")])

    async def read() -> tuple[list[str], list[str], list[str]]:
        async with memory._core.db.transaction(readonly=True) as conn:
            found = await find_entities(conn, "ana", "which servers does db1 or db-1 use?",
                                        limit=3)
            facts, links = await current_facts(conn, "ana", [e.id for e in found])
        return ([e.name for e in found], [o.text for o in facts],
                sorted(f"{r.source} {r.type} {r.target}" for r in links))

    names, texts, links = memory._loop.run(read())
    assert names == ["db-1"]
    assert texts == ["Runs in Frankfurt"]
    assert links == ["Atlas uses db-1", "db-1 runs PostgreSQL 16"]
