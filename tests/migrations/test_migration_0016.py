"""Migration 0016: an index on a user's messages by session, whether summarised, id
and tokens.

It exists after the upgrade on both backends and is gone after the downgrade, the
messages untouched either way; ``record`` (the unsummarised tokens that decide on a
summary) and the summary job (the messages to fold) find a session's unsummarised
tail through it instead of reading every message of the session, and on SQLite
conversation recall's statistics are read from it alone.
"""

from __future__ import annotations

from typing import Any

import pytest
from migration_steps import index_comes_and_goes, indexes, migrate, sqlite_plans
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncConnection

from truemem_core import TrueMem
from truemem_core.conversation import recording, sessions
from truemem_core.search.channels import past_turns_of
from truemem_core.search.channels.sqlite import _average_length, _documents

INDEX = "ix_messages_user_session_summarized"
BY_FLAG = f"INDEX {INDEX} (user_id=? AND session_id=? AND summarized=?"


async def test_the_index_comes_and_goes_and_the_messages_stay(tmp_url: str) -> None:
    await migrate(tmp_url, "upgrade", "0015")
    assert INDEX not in await indexes(tmp_url, "messages")
    async with TrueMem(tmp_url) as memory:  # opening upgrades to the head
        await memory.arecord("ana", "s1", "I moved to Lisbon", "Nice!")
    await index_comes_and_goes(tmp_url, "messages", INDEX, before="0015")
    async with TrueMem(tmp_url) as memory:
        state = await memory.sessions.aget("ana", "s1")
        assert [m.content for m in state.recent] == ["I moved to Lisbon", "Nice!"]


@pytest.mark.parametrize("backend", ["sqlite"])
async def test_record_and_the_summary_job_read_the_unsummarised_tail_through_it(
    tmp_url: str,
) -> None:
    async with TrueMem(tmp_url) as memory:
        await memory.arecord("ana", "s1", "I moved to Lisbon", "Nice!")
        await memory.arecord("ana", "s1", "And I play the cello", "Lovely.")
    # the first statement of record's write: the session upserted, its unsummarised tokens
    opened = await sqlite_plans(tmp_url, lambda conn: conn.execute(recording._OPEN_SQLITE, {
        "user_id": "ana", "session_id": "s1", "now": recording.utcnow(), "threshold": 1}))
    assert BY_FLAG in opened[0], opened

    folded: list[Any] = []

    async def to_fold(conn: AsyncConnection) -> None:
        folded.extend(await sessions.to_fold(conn, "ana", "s1", keep_recent=2))

    plans = await sqlite_plans(tmp_url, to_fold)
    assert [m.content for m in folded] == ["I moved to Lisbon", "Nice!"]
    assert BY_FLAG in plans[0], plans


@pytest.mark.parametrize("backend", ["sqlite"])
async def test_sqlite_reads_recalls_statistics_from_the_index_alone(tmp_url: str) -> None:
    async with TrueMem(tmp_url) as memory:
        await memory.arecord("ana", "s1", "I moved to Lisbon", "Nice!")
    corpus = past_turns_of("ana", "s1", recent=20)
    plans = await sqlite_plans(tmp_url, lambda conn: conn.execute(
        select(_documents(corpus), _average_length(corpus)), dict(corpus.params)))
    # the user's messages from the index, those left out (migration 0024) by their id
    reads = [line for line in plans[0].splitlines()
             if line.startswith(("SEARCH messages", "SCAN messages"))]
    assert all("COVERING INDEX" in line or "INTEGER PRIMARY KEY" in line for line in reads)
    assert f"COVERING INDEX {INDEX} (user_id=?)" in plans[0], plans
