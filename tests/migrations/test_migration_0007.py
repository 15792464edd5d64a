"""Migration 0007: pending jobs of kind ``prune`` (an older version's name) become ``maintain``.

A store upgraded with work still queued keeps it: the renamed row is a job the
runner knows (a ``prune`` row would fail as an unknown kind). Downgrading gives
the old name back, for the older version that reads it.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from migration_steps import current, head, migrate
from sqlalchemy import select
from sqlalchemy.ext.asyncio import create_async_engine

from truemem_core import TrueMem
from truemem_core.storage.database import resolve_url
from truemem_core.storage.schema import jobs

# Written an hour ago by the older version: a pending maintenance job under its old
# name, one already done under that name, and a job of another kind.
_WRITTEN = datetime.now(UTC) - timedelta(hours=1)
_ROWS = [("legacy-prune", "prune", "pending"), ("legacy-prune-done", "prune", "done"),
         ("legacy-extract", "extract", "failed")]


async def _jobs(url: str) -> dict[str, tuple[str, str]]:
    """Each job's (kind, status), by key."""
    engine = create_async_engine(resolve_url(url))
    try:
        async with engine.connect() as conn:
            found = await conn.execute(select(jobs.c.key, jobs.c.kind, jobs.c.status))
            return {row.key: (row.kind, row.status) for row in found}
    finally:
        await engine.dispose()


async def _insert_old_jobs(url: str) -> None:
    rows: list[dict[str, Any]] = [
        {"key": key, "user_id": "ana", "kind": kind, "payload": {}, "status": status,
         "attempts": 0, "last_error": None, "created_at": _WRITTEN, "updated_at": _WRITTEN}
        for key, kind, status in _ROWS]
    engine = create_async_engine(resolve_url(url))
    try:
        async with engine.begin() as conn:
            await conn.execute(jobs.insert(), rows)
    finally:
        await engine.dispose()


async def test_prune_jobs_are_renamed_maintain_and_back(tmp_url: str) -> None:
    await migrate(tmp_url, "upgrade", "0006")
    await _insert_old_jobs(tmp_url)
    old_names = {key: (kind, status) for key, kind, status in _ROWS}
    assert await _jobs(tmp_url) == old_names

    await migrate(tmp_url, "upgrade", "head")
    assert await current(tmp_url) == head()
    assert await _jobs(tmp_url) == {
        "legacy-prune": ("maintain", "pending"), "legacy-prune-done": ("maintain", "done"),
        "legacy-extract": ("extract", "failed")}

    await migrate(tmp_url, "downgrade", "0006")
    assert await current(tmp_url) == "0006"
    assert await _jobs(tmp_url) == old_names


async def test_a_renamed_pending_job_runs_after_the_upgrade(tmp_url: str) -> None:
    await migrate(tmp_url, "upgrade", "0006")
    await _insert_old_jobs(tmp_url)
    async with TrueMem(tmp_url) as memory:  # opening upgrades to head
        await memory.aadd_memory("ana", "Lives in Lisbon")
        assert await current(tmp_url) == head()
        assert (await _jobs(tmp_url))["legacy-prune"] == ("maintain", "pending")
        # Deliver it as the broker would (no public API delivers one job by its key),
        # on TrueMem's loop. Under its old name it would fail as an unknown kind.
        await memory._loop.arun(memory._core.runner.run("legacy-prune"))
        assert (await _jobs(tmp_url))["legacy-prune"] == ("maintain", "done")
        assert [m.text for m in await memory.alist_memories("ana")] == ["Lives in Lisbon"]
