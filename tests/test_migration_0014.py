"""Migration 0014: an index on a user's memories by state and importance.

It exists after the upgrade on both backends and is gone after the downgrade, the
memories untouched either way; on SQLite the reads it is for (the critical
memories, the count of a user's current memories that the lexical channels weigh
terms by) go through it instead of reading every memory of the user.
"""

from __future__ import annotations

from typing import Any

import pytest
from migration_steps import current, head, migrate
from sqlalchemy import event, inspect, select
from sqlalchemy.ext.asyncio import create_async_engine

from truemem_core import TrueMem
from truemem_core.memory import reads
from truemem_core.search.channels import memories_of
from truemem_core.search.channels.sqlite import _documents
from truemem_core.search.filters import SearchFilters
from truemem_core.storage.database import resolve_url

INDEX = "ix_memories_user_state_importance"


async def _indexes(url: str) -> set[str]:
    engine = create_async_engine(resolve_url(url))
    try:
        async with engine.connect() as conn:
            return {index["name"] for index in await conn.run_sync(
                lambda sync: inspect(sync).get_indexes("memories"))}
    finally:
        await engine.dispose()


async def test_the_index_comes_and_goes_and_the_memories_stay(tmp_url: str) -> None:
    await migrate(tmp_url, "upgrade", "0013")
    assert INDEX not in await _indexes(tmp_url)
    async with TrueMem(tmp_url) as memory:  # opening upgrades to the head
        await memory.aadd_memory("ana", "Allergic to penicillin", importance=5)
        await memory.aadd_memory("ana", "Lives in Lisbon")
    assert await current(tmp_url) == head()
    assert INDEX in await _indexes(tmp_url)
    await migrate(tmp_url, "downgrade", "0013")
    assert INDEX not in await _indexes(tmp_url)
    await migrate(tmp_url, "upgrade", "head")
    assert INDEX in await _indexes(tmp_url)
    async with TrueMem(tmp_url) as memory:
        context = await memory.aget_context("ana", "s1", "what about Lisbon?")
        assert [m.text for m in context.critical] == ["Allergic to penicillin"]
        assert {m.text for m in await memory.alist_memories("ana")} == {
            "Allergic to penicillin", "Lives in Lisbon"}


async def _plan(url: str, statement: Any, params: dict[str, Any]) -> str:
    """SQLite's plan for ``statement`` with ``params``: the SQL and parameters it runs
    with, explained."""
    engine = create_async_engine(resolve_url(url))
    issued: list[tuple[str, Any]] = []
    event.listen(engine.sync_engine, "before_cursor_execute",
                 lambda _conn, _cursor, sql, parameters, *_: issued.append((sql, parameters)))
    try:
        async with engine.connect() as conn:
            await conn.execute(statement, params)
            sql, parameters = issued[-1]
            rows = await conn.exec_driver_sql("EXPLAIN QUERY PLAN " + sql, parameters)
            return "\n".join(str(row[3]) for row in rows)
    finally:
        await engine.dispose()


@pytest.mark.parametrize("backend", ["sqlite"])
async def test_sqlite_reads_a_users_memories_by_state_through_the_index(tmp_url: str) -> None:
    async with TrueMem(tmp_url) as memory:
        await memory.aadd_memory("ana", "Allergic to penicillin", importance=5)
    critical = await _plan(tmp_url, reads._CRITICAL, {"user": "ana", "limit": 10})
    assert f"USING INDEX {INDEX} (user_id=?" in critical, critical
    for corpus in (memories_of("ana"), memories_of("ana", SearchFilters())):  # as search has it
        plan = await _plan(tmp_url, select(_documents(corpus)), dict(corpus.params))
        assert f"USING COVERING INDEX {INDEX} (user_id=?" in plan, plan
