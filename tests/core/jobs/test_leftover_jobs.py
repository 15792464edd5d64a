"""Jobs left pending before this instance started (a crash, an older version) run:
embedded, the first sweep re-sends them at once and ``drain()`` waits for them."""

from __future__ import annotations

from migration_steps import current, head, migrate
from test_migration_0007 import _insert_old_jobs, _jobs

from truemem_core import TrueMem


async def test_opening_and_draining_runs_a_job_left_pending_before_the_upgrade(
    tmp_url: str,
) -> None:
    await migrate(tmp_url, "upgrade", "0006")
    await _insert_old_jobs(tmp_url)
    async with TrueMem(tmp_url) as memory:
        await memory.alist_memories("ana")  # opens the store: upgrades to head
        assert await current(tmp_url) == head()
        await memory.adrain()
        assert (await _jobs(tmp_url))["legacy-prune"] == ("maintain", "done")
