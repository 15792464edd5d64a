"""Migration 0024: the indexes of conversation recall's search by meaning.

PostgreSQL: HNSW indexes on ``embedding::vector(D)`` of messages and passages, D the
dimension of the store's embedder. A store with rows and a recorded embedder gets them
from the upgrade; a store whose embedder is not known yet (the migration runs before
the first open with an embedder records it) gets none from it, and gets them when it
records its embedder. SQLite: the indexes of which of a user's rows have a vector and
of which of a user's messages have passages. All go with the downgrade, the rows stay.
"""

from __future__ import annotations

import pytest
from migration_steps import index_comes_and_goes, indexes, migrate

from truemem_core import Settings, TrueMem

HNSW = {"messages": "ix_messages_embedding_hnsw", "passages": "ix_passages_embedding_hnsw"}
SQLITE = {"messages": ["ix_messages_user_embedded"],
          "passages": ["ix_passages_user_embedded", "ix_passages_user_message"]}
LONG = "\n\n".join(f"Step {n}: water the basil on the balcony and check the soil." for n in
                   range(60))


async def _history(memory: TrueMem) -> None:
    await memory.arecord_messages("ana", "garden", [
        ("user", "I planted basil and mint on the balcony."), ("assistant", LONG)])
    await memory.adrain()


async def _recalled(url: str) -> list[str]:
    async with TrueMem(url, settings=Settings(context_token_budget=100_000)) as memory:
        context = await memory.aget_context("ana", "today", "what did I plant?")
    return [turn.content for turn in context.recalled]


async def test_the_indexes_come_and_go_and_the_rows_stay(tmp_url: str, backend: str) -> None:
    await migrate(tmp_url, "upgrade", "0023")
    async with TrueMem(tmp_url) as memory:  # opening upgrades to the head
        await _history(memory)
    before = await _recalled(tmp_url)
    assert any("basil and mint" in content for content in before)
    names = ({table: [name] for table, name in HNSW.items()} if backend == "postgres"
             else SQLITE)
    for table, made in names.items():
        for name in made:
            await index_comes_and_goes(tmp_url, table, name, before="0023")
    assert await _recalled(tmp_url) == before


@pytest.mark.parametrize("backend", ["postgres"])
async def test_a_store_without_its_embedder_yet_gets_them_when_it_records_it(
    tmp_url: str,
) -> None:
    await migrate(tmp_url, "upgrade", "head")  # no embedder recorded: no dimension
    assert not set(HNSW.values()) & (await indexes(tmp_url, "messages")
                                     | await indexes(tmp_url, "passages"))
    async with TrueMem(tmp_url) as memory:
        await _history(memory)
    for table, name in HNSW.items():
        assert name in await indexes(tmp_url, table)
    assert any("basil and mint" in content for content in await _recalled(tmp_url))
