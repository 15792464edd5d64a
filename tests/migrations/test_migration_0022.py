"""Migration 0022: indexes on a user's jobs by kind and date, and on a user's memories
by the memory that superseded them.

They exist after the upgrade on both backends and are gone after the downgrade, the
rows untouched either way; ``record``'s check for a recent maintenance, the extraction
job's look-ups of what a new fact superseded, and the current relations a new one may
replace go through an index probe each on SQLite, never through every row of the user.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from migration_steps import index_comes_and_goes, migrate, sqlite_plans
from sqlalchemy.ext.asyncio import AsyncConnection

from truemem_core import TrueMem
from truemem_core.conversation import recording
from truemem_core.graph import extraction, superseded
from truemem_core.graph.records import RelationSpec
from truemem_core.storage.schema import utcnow

JOBS = "ix_jobs_user_kind_created"
SUPERSEDED = "ix_memories_superseded_by"


async def test_the_indexes_come_and_go_and_the_rows_stay(tmp_url: str) -> None:
    await migrate(tmp_url, "upgrade", "0021")
    async with TrueMem(tmp_url) as memory:  # opening upgrades to the head
        await memory.aadd_memory("ana", "Lives in Lisbon")
        await memory.aadd_memory("ana", "Lives in Porto")
    await index_comes_and_goes(tmp_url, "jobs", JOBS, before="0021")
    await index_comes_and_goes(tmp_url, "memories", SUPERSEDED, before="0021")
    async with TrueMem(tmp_url) as memory:
        assert [m.text for m in await memory.alist_memories("ana")] == ["Lives in Porto"]


@pytest.mark.parametrize("backend", ["sqlite"])
async def test_the_extraction_paths_reads_probe_the_indexes(tmp_url: str) -> None:
    async with TrueMem(tmp_url) as memory:
        await memory.aadd_memory("ana", "Lives in Lisbon")
        porto = await memory.aadd_memory("ana", "Lives in Porto")
        await memory.arecord("ana", "s1", "I moved to Porto", "Nice!")
        await memory.adrain()

    async def reads(conn: AsyncConnection) -> None:
        await conn.execute(recording._OPEN_SQLITE, {
            "user_id": "ana", "session_id": "s1", "now": utcnow(), "threshold": 1})
        await conn.execute(recording._QUEUE_SQLITE, {
            "user_id": "ana", "session_id": "s1", "now": utcnow(), "threshold": 1,
            "waiting": 0, "first": 1000, "last": 1001,  # no such messages: no job
            "maintained_since": utcnow() - timedelta(seconds=600)})
        await extraction._superseded_by(conn, "ana", porto.id)
        await superseded.end_with_their_memories(conn, "ana", [porto.id], utcnow())
        await extraction._current(conn, "ana", [RelationSpec("user", "lives_in", "Porto")])

    plans: list[Any] = await sqlite_plans(tmp_url, reads)
    assert f"INDEX {JOBS} (user_id=? AND kind=? AND created_at>?)" in plans[1], plans[1]
    assert f"INDEX {SUPERSEDED} (superseded_by=?)" in plans[2], plans[2]
    assert f"INDEX {SUPERSEDED} (superseded_by=?)" in plans[3], plans[3]
    # the new relation's source by name, then its relations: not all the user's relations
    assert "ix_graph_relations_user_source (user_id=? AND source_id=?)" in plans[-1], plans[-1]
    assert "ix_graph_entities_user_norm (user_id=? AND norm=?)" in plans[-1], plans[-1]
