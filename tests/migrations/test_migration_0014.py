"""Migration 0014: an index on a user's memories by state and importance.

It exists after the upgrade on both backends and is gone after the downgrade, the
memories untouched either way; on SQLite the reads it is for (the critical
memories, the count of a user's current memories that the lexical channels weigh
terms by) go through it instead of reading every memory of the user.
"""

from __future__ import annotations

from typing import Any

import pytest
from migration_steps import index_comes_and_goes, indexes, migrate, sqlite_plans
from sqlalchemy import select

from truemem_core import TrueMem
from truemem_core.memory import reads
from truemem_core.search.channels import memories_of
from truemem_core.search.channels.sqlite import _documents
from truemem_core.search.filters import CheckedFilters

INDEX = "ix_memories_user_state_importance"


async def test_the_index_comes_and_goes_and_the_memories_stay(tmp_url: str) -> None:
    await migrate(tmp_url, "upgrade", "0013")
    assert INDEX not in await indexes(tmp_url, "memories")
    async with TrueMem(tmp_url) as memory:  # opening upgrades to the head
        await memory.aadd_memory("ana", "Allergic to penicillin", importance=5)
        await memory.aadd_memory("ana", "Lives in Lisbon")
    await index_comes_and_goes(tmp_url, "memories", INDEX, before="0013")
    async with TrueMem(tmp_url) as memory:
        context = await memory.aget_context("ana", "s1", "what about Lisbon?")
        assert [m.text for m in context.critical] == ["Allergic to penicillin"]
        assert {m.text for m in await memory.alist_memories("ana")} == {
            "Allergic to penicillin", "Lives in Lisbon"}


async def _plan(url: str, statement: Any, params: dict[str, Any]) -> str:
    """SQLite's plan for ``statement`` with ``params``."""
    return (await sqlite_plans(url, lambda conn: conn.execute(statement, params)))[-1]


@pytest.mark.parametrize("backend", ["sqlite"])
async def test_sqlite_reads_a_users_memories_by_state_through_the_index(tmp_url: str) -> None:
    async with TrueMem(tmp_url) as memory:
        await memory.aadd_memory("ana", "Allergic to penicillin", importance=5)
    critical = await _plan(tmp_url, reads._CRITICAL, {"user": "ana", "limit": 10})
    assert f"USING INDEX {INDEX} (user_id=?" in critical, critical
    for corpus in (memories_of("ana"), memories_of("ana", CheckedFilters())):  # as search has it
        plan = await _plan(tmp_url, select(_documents(corpus)), dict(corpus.params))
        assert f"USING COVERING INDEX {INDEX} (user_id=?" in plan, plan
