"""Migration 0010: the graph's tables on both backends; it reverses, and runs again over
tables that are already there (a store stamped back to 0009)."""

from __future__ import annotations

from migration_steps import migrate
from sqlalchemy import inspect
from sqlalchemy.ext.asyncio import create_async_engine

from truemem_core import RelationSpec, TrueMem
from truemem_core.storage.database import resolve_url

GRAPH = {"graph_entities", "graph_observations", "graph_relations"}


async def _tables(url: str) -> set[str]:
    engine = create_async_engine(resolve_url(url))
    try:
        async with engine.connect() as conn:
            return set(await conn.run_sync(lambda sync: inspect(sync).get_table_names()))
    finally:
        await engine.dispose()


async def test_the_graph_tables_come_and_go(tmp_url: str) -> None:
    await migrate(tmp_url, "upgrade", "0009")
    assert not GRAPH & await _tables(tmp_url)
    async with TrueMem(tmp_url) as memory:  # opening the store upgrades it
        await memory.aadd_relations("ana", [RelationSpec("Atlas", "uses", "db-1")])
    assert await _tables(tmp_url) >= GRAPH
    await migrate(tmp_url, "stamp", "0009")
    await migrate(tmp_url, "upgrade", "head")  # 0010 again, over its own tables
    async with TrueMem(tmp_url) as memory:
        assert [r.target for r in await memory.alist_relations("ana")] == ["db-1"]
        # the partial unique index: a retracted entity's name can be used again
        await memory.adelete_entities("ana", ["Atlas"])
        await memory.aadd_entities("ana", [{"name": "Atlas"}])
        assert len(await memory.alist_entities("ana")) == 2
    await migrate(tmp_url, "downgrade", "0009")
    assert not GRAPH & await _tables(tmp_url)
    await migrate(tmp_url, "upgrade", "head")
    assert await _tables(tmp_url) >= GRAPH
