"""SQLite's full-text indexes merged a step at a time (``storage.text_indexes``).

Every transaction that writes memories or messages adds a b-tree to each of their
FTS5 indexes; the merge steps the worker runs after each exchange's maintenance fold
them together again, and searches find exactly what they found before. Migration
0015 lets a step merge any two b-trees of a level (FTS5's ``usermerge``).
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
from migration_steps import migrate
from sqlalchemy.ext.asyncio import AsyncConnection, create_async_engine

from truemem_core import Settings, TrueMem
from truemem_core.storage import text_indexes
from truemem_core.storage.database import Database, resolve_url

SQLITE = pytest.mark.parametrize("backend", ["sqlite"])

FACTS = [f"{who} {what}" for who in ("Ana", "Bruno", "Chen", "Dana", "Emil", "Farah")
         for what in ("plays the cello on Sundays", "moved to Lisbon last spring",
                      "is allergic to penicillin", "works as a nurse at Siemens",
                      "prefers tea over coffee")]
QUERIES = ["cello", "Lisbn", "penicilin allergy", "nurse at Siemens", "tea or coffee"]


def _path(url: str) -> Path:
    return Path(url.removeprefix("sqlite:///"))


def _usermerge(url: str) -> dict[str, object]:
    """Each index's option, of those the store's revision has (passages_fts: 0020,
    syntheses_fts: 0021)."""
    with sqlite3.connect(_path(url)) as db:
        present = {row[0] for row in db.execute("SELECT name FROM sqlite_master")}
        return {table: dict(db.execute(f"SELECT k, v FROM {table}_config").fetchall())
                .get("usermerge") for table in text_indexes.TABLES if table in present}


@asynccontextmanager
async def _transaction(url: str) -> AsyncIterator[AsyncConnection]:
    engine = create_async_engine(resolve_url(url))
    try:
        async with engine.begin() as conn:
            yield conn
    finally:
        await engine.dispose()


async def _btrees(url: str) -> dict[str, int]:
    async with _transaction(url) as conn:
        return await text_indexes.btrees(conn)


async def _merge_until_done(url: str) -> int:
    """Merge steps, each in its own transaction, until one merges nothing; how many merged."""
    db = Database(resolve_url(url), embedder=None)
    try:
        return await text_indexes.merge_some(db, steps=1000)
    finally:
        await db.close()


async def _searches(memory: TrueMem) -> list[list[tuple[str, float]]]:
    return [[(hit.memory.text, round(hit.score, 9))
             for hit in await memory.asearch("ana", query, k=10, mode=mode)]
            for query in QUERIES for mode in ("hybrid", "keyword", "trigram")]


@SQLITE
async def test_merging_leaves_fewer_btrees_and_the_same_results(tmp_url: str) -> None:
    async with TrueMem(tmp_url) as memory:
        for fact in FACTS:  # one transaction each, as a live store is written (no jobs)
            await memory.aadd_memory("ana", fact)
        split = await _btrees(tmp_url)
        before = await _searches(memory)
        assert await _merge_until_done(tmp_url) > 0
        merged = await _btrees(tmp_url)
        for table in ("memories_fts", "memories_trgm"):
            assert split[table] >= 8 and merged[table] <= 3, (split, merged)
        assert await _searches(memory) == before
        # every channel found something (the comparison would prove little otherwise)
        assert all(any(before[n::3]) for n in range(3)), before


@SQLITE
async def test_an_extraction_job_runs_a_merge_step(tmp_url: str) -> None:
    async with TrueMem(tmp_url) as memory:
        for fact in FACTS:  # one b-tree per memory, no job yet
            await memory.aadd_memory("ana", fact)
        split = (await _btrees(tmp_url))["memories_trgm"]
        for n in range(6):
            await memory.arecord("ana", "s1", f"Question {n} about the cello?", f"Answer {n}.")
        await memory.adrain()  # each exchange's extraction job merges a step
        merged = await _btrees(tmp_url)
        assert merged["memories_trgm"] < split, (split, merged)
        assert merged["memories_trgm"] <= 3 and merged["messages_fts"] <= 3, merged


@SQLITE
async def test_the_workers_sweep_merges_what_no_exchange_wrote(tmp_url: str) -> None:
    async with TrueMem(tmp_url, settings=Settings(sweep_interval_s=0.05)) as memory:
        for fact in FACTS:  # add_memory queues no job: only the sweep can merge these
            await memory.aadd_memory("ana", fact)
        split = await _btrees(tmp_url)
        await memory.adrain()  # starts the in-process worker, and with it the sweep
        for _ in range(200):
            merged = await _btrees(tmp_url)
            if merged["memories_fts"] <= 3 and merged["memories_trgm"] <= 3:
                break
            await asyncio.sleep(0.05)
        assert split["memories_trgm"] >= 8, split
        assert merged["memories_fts"] <= 3 and merged["memories_trgm"] <= 3, (split, merged)


@SQLITE
async def test_a_step_must_write_some_pages(tmp_url: str) -> None:
    async with TrueMem(tmp_url) as memory:
        await memory.aadd_memory("ana", "Plays the cello")
    async with _transaction(tmp_url) as conn:
        for pages in (0, -50):  # FTS5 would take a negative count as a merge of it all
            with pytest.raises(ValueError, match="positive"):
                await text_indexes.merge(conn, pages=pages)


@SQLITE
async def test_usermerge_is_two_after_the_upgrade_and_four_after_the_downgrade(
    tmp_url: str,
) -> None:
    async with TrueMem(tmp_url) as memory:  # opening upgrades to the head
        await memory.aadd_memory("ana", "Plays the cello")
    assert set(_usermerge(tmp_url).values()) == {2}
    await migrate(tmp_url, "downgrade", "0014")
    assert set(_usermerge(tmp_url).values()) == {4}
    await migrate(tmp_url, "upgrade", "head")
    assert set(_usermerge(tmp_url).values()) == {2}
    async with TrueMem(tmp_url) as memory:
        assert [hit.memory.text for hit in await memory.asearch("ana", "cello")] == [
            "Plays the cello"]


@pytest.mark.parametrize("backend", ["postgres"])
async def test_nothing_to_merge_on_postgres(tmp_url: str) -> None:
    async with TrueMem(tmp_url) as memory:
        await memory.aadd_memory("ana", "Plays the cello")
    async with _transaction(tmp_url) as conn:
        assert await text_indexes.merge(conn) is False
        assert await text_indexes.btrees(conn) == {}
    db = Database(resolve_url(tmp_url), embedder=None)
    try:
        assert await text_indexes.merge_some(db) == 0
    finally:
        await db.close()
