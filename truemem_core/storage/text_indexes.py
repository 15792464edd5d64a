"""SQLite's full-text indexes kept merged, one bounded step at a time.

FTS5 writes each transaction's rows into an index as a b-tree of their own (a
segment) and merges segments lazily, so a store written to message by message holds
a dozen or more per index, and a MATCH looks each of its terms up in every one (the
trigram channel's terms: every 3-letter fragment of the query's words). ``merge``
runs one step of FTS5's own merging on each index: at most ``pages`` pages written,
and only b-trees that share a level (two are enough, migration 0015), so a step
holds the write lock for milliseconds, and merging into a large b-tree is spread
over many steps. The worker runs one at the end of each exchange's extraction
(``jobs.handlers``), and a few on each of its sweeps (``merge_some``) for what is
written with no exchange (``add_memory``, imports): a store at rest settles at one to
three b-trees per index, a store being written to at a few more (what it saves a
``get_context``: docs/benchmarks.md, ``--unmerged-text-indexes``).

PostgreSQL has no FTS5; ``merge`` does nothing there.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncConnection

if TYPE_CHECKING:
    from truemem_core.storage.database import Database

TABLES = ("memories_fts", "memories_trgm", "messages_fts", "passages_fts", "syntheses_fts")
PAGES = 50  # per index and step: at most ~200 KB written; 5-7 ms a step on the benchmark VM
SWEEP_STEPS = 20  # per sweep of the worker's: at most ~0.15 s of merging, in steps of its own

_CHANGES = text("SELECT total_changes()")


async def merge(conn: AsyncConnection, pages: int = PAGES) -> bool:
    """One merge step on each index, in the caller's transaction; whether any b-trees
    were merged (never on PostgreSQL)."""
    if pages <= 0:  # a negative count would start a merge of the whole index
        raise ValueError("pages must be positive")
    if conn.dialect.name != "sqlite":
        return False
    merged = False
    for table in TABLES:
        before = await conn.scalar(_CHANGES)
        await conn.execute(text(f"INSERT INTO {table}({table}, rank) VALUES ('merge', :pages)"),
                           {"pages": pages})
        # FTS5 counts two changes or more when the step merged something (its docs)
        merged |= await conn.scalar(_CHANGES) - before >= 2
    return merged


async def merge_some(db: Database, steps: int = SWEEP_STEPS) -> int:
    """Merge steps until one merges nothing, ``steps`` at most, each in a transaction of
    its own so that writers take the lock between them; how many merged. The worker's
    sweep runs it: a store written through ``add_memory`` or an import gets no
    maintenance job, and so no step after it."""
    if db.dialect != "sqlite":
        return 0
    for done in range(steps):
        async with db.transaction() as conn:
            if not await merge(conn):
                return done
    return steps


async def btrees(conn: AsyncConnection) -> dict[str, int]:
    """How many b-trees each index holds (none on PostgreSQL)."""
    if conn.dialect.name != "sqlite":
        return {}
    return {table: int(await conn.scalar(text(f"SELECT count(DISTINCT segid) FROM {table}_idx")))
            for table in TABLES}
