"""Migration 0021: the syntheses table, searchable by words on both backends (SQLite:
its FTS5 tables and triggers; PostgreSQL: a generated ``search_vector``), comes with
the upgrade and goes with the downgrade, the rest of the store untouched; after an
upgrade the next record builds its session's synthesis, found by its words."""

from __future__ import annotations

from migration_steps import current, head, migrate, tables

from truemem_core import TrueMem

SQLITE_SEARCH = {"syntheses_fts", "syntheses_fts_ids", "syntheses_fts_users"}


async def test_the_table_comes_and_goes_and_is_searchable_by_words(tmp_url: str) -> None:
    async with TrueMem(tmp_url) as memory:
        await memory.arecord_messages("ana", "boat", [
            ("user", "I bought a wooden sailing boat called Marlin."), ("assistant", "Ahoy!"),
            ("user", "I moor her at the marina in Vigo."),
            ("user", "She sails best in a northerly wind.")])
        await memory.adrain(60)
        assert [s.key for s in await memory.syntheses.alist("ana")] == ["boat"]
    assert await current(tmp_url) == head()
    sqlite = tmp_url.startswith("sqlite")
    assert "syntheses" in await tables(tmp_url)
    assert (await tables(tmp_url) >= SQLITE_SEARCH) == sqlite
    await migrate(tmp_url, "downgrade", "0020")
    assert not ({"syntheses"} | SQLITE_SEARCH) & await tables(tmp_url)
    await migrate(tmp_url, "upgrade", "head")
    assert {"syntheses"} | (SQLITE_SEARCH if sqlite else set()) <= await tables(tmp_url)
    async with TrueMem(tmp_url) as memory:
        state = await memory.sessions.aget("ana", "boat")
        assert state.recent[0].content.startswith("I bought")  # untouched
        assert await memory.syntheses.alist("ana") == []  # made again by the next record
        await memory.arecord("ana", "boat", "Marlin needs new sails this winter.", "Right.")
        await memory.adrain(60)
        context = await memory.aget_context("ana", "new", "Marlin sails")
        [hit] = context.syntheses
        assert "keyword" in hit.channels and "Marlin needs new sails" in hit.synthesis.text
