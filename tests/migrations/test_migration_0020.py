"""Migration 0020: long messages' passages, and the index of their words.

The table (and on SQLite its full-text index and triggers) comes with the upgrade and
goes with the downgrade on both backends, the messages untouched either way. A long
message stored before the upgrade has no passages (they are derived data, made by the
job that embeds a message): it stays recalled whole, by its head, as before.
"""

from __future__ import annotations

import warnings

import db_access
from migration_steps import current, head, migrate
from sqlalchemy import inspect, select
from test_passages import SHORT_ESSAY

from truemem_core import TrueMem
from truemem_core.storage.schema import messages, passages

QUESTION = "Where is the staging database password kept?"


def _tables(url: str) -> set[str]:
    with db_access.connect(url) as conn, warnings.catch_warnings():
        warnings.simplefilter("ignore")  # SQLAlchemy knows no pgvector type: said, not needed
        return {name for name in inspect(conn).get_table_names() if name.startswith("passages")}


async def test_the_table_comes_and_goes_and_older_long_messages_stay_recalled_whole(
    tmp_url: str,
) -> None:
    async with TrueMem(tmp_url) as memory:
        await memory.arecord("ana", "ops", "Infra tips?", SHORT_ESSAY)
        await memory.adrain(120)
    assert await current(tmp_url) == head()
    sqlite = tmp_url.startswith("sqlite")
    assert _tables(tmp_url) >= ({"passages", "passages_fts", "passages_fts_ids",
                                 "passages_fts_users"} if sqlite else {"passages"})
    stored = db_access.rows(tmp_url, select(messages.c.id, messages.c.content))
    await migrate(tmp_url, "downgrade", "0019")
    assert _tables(tmp_url) == set()
    assert db_access.rows(tmp_url, select(messages.c.id, messages.c.content)) == stored
    await migrate(tmp_url, "upgrade", "head")
    assert db_access.rows(tmp_url, select(passages.c.id)) == []
    async with TrueMem(tmp_url) as memory:
        context = await memory.aget_context("ana", "now", QUESTION)
        assert [t.content[:20] for t in context.recalled if t.role == "assistant"] == [
            SHORT_ESSAY[:20]]  # whole, from its head
        assert all(not t.passages for t in context.recalled)
        await memory.arecord("ana", "ops2", "More tips?", SHORT_ESSAY)  # cut as it is embedded
        await memory.adrain(120)
        context = await memory.aget_context("ana", "now", QUESTION)
    assert db_access.rows(tmp_url, select(passages.c.message_id).distinct()) == [
        (stored[-1][0] + 2,)]
    assert any(t.passages and "secret/staging" in t.content for t in context.recalled)
