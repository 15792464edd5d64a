"""Migration 0010: the graph's tables on both backends; it reverses, and runs again over
tables that are already there (a store stamped back to 0009)."""

from __future__ import annotations

from migration_steps import migrate, tables

from truemem_core import RelationSpec, TrueMem

GRAPH = {"graph_entities", "graph_observations", "graph_relations"}


async def test_the_graph_tables_come_and_go(tmp_url: str) -> None:
    await migrate(tmp_url, "upgrade", "0009")
    assert not GRAPH & await tables(tmp_url)
    async with TrueMem(tmp_url) as memory:  # opening the store upgrades it
        await memory.graph.aadd_relations("ana", [RelationSpec("Atlas", "uses", "db-1")])
    assert await tables(tmp_url) >= GRAPH
    await migrate(tmp_url, "stamp", "0009")
    await migrate(tmp_url, "upgrade", "head")  # 0010 again, over its own tables
    async with TrueMem(tmp_url) as memory:
        assert [r.target for r in await memory.graph.alist_relations("ana")] == ["db-1"]
        # the partial unique index: a retracted entity's name can be used again
        await memory.graph.adelete_entities("ana", ["Atlas"])
        await memory.graph.aadd_entities("ana", [{"name": "Atlas"}])
        assert len(await memory.graph.alist_entities("ana")) == 2
    await migrate(tmp_url, "downgrade", "0009")
    assert not GRAPH & await tables(tmp_url)
    await migrate(tmp_url, "upgrade", "head")
    assert await tables(tmp_url) >= GRAPH
