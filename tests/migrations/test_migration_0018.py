"""Migration 0018: each message's vector names the model that made it.

The column comes with the upgrade and goes with the downgrade on both backends, the
messages untouched either way. A message embedded before it names no model, so the
next ``reembed`` recomputes its vector once; a run after that has nothing to do.
Every table that stores vectors names their model (``reembed`` covers them all).
"""

from __future__ import annotations

import warnings

import db_access
from migration_steps import current, head, migrate
from sqlalchemy import inspect, select

from truemem_core import TrueMem
from truemem_core.memory.reembedding import TEXTS
from truemem_core.storage.schema import messages, metadata


def _columns(url: str) -> set[str]:
    with db_access.connect(url) as conn, warnings.catch_warnings():
        warnings.simplefilter("ignore")  # SQLAlchemy knows no pgvector type: said, not needed
        return {column["name"] for column in inspect(conn).get_columns("messages")}


async def test_the_column_comes_and_goes_and_old_vectors_are_reembedded_once(
    tmp_url: str,
) -> None:
    async with TrueMem(tmp_url) as memory:
        await memory.arecord("ana", "s1", "I moved to Lisbon", "Nice!")
        await memory.adrain(60)
    assert await current(tmp_url) == head()
    assert "embedding_model" in _columns(tmp_url)
    await migrate(tmp_url, "downgrade", "0016")
    assert "embedding_model" not in _columns(tmp_url)
    await migrate(tmp_url, "upgrade", "head")
    assert db_access.rows(tmp_url, select(messages.c.content, messages.c.embedding_model)
                          .order_by(messages.c.id)) == [
        ("I moved to Lisbon", None), ("Nice!", None)]  # kept, their model unknown
    async with TrueMem(tmp_url) as memory:
        assert await memory.admin.areembed() == 2
        assert await memory.admin.areembed() == 0
    models = db_access.rows(tmp_url, select(messages.c.embedding_model))
    assert models == [("all-MiniLM-L6-v2",)] * 2


def test_reembed_knows_every_table_that_stores_vectors() -> None:
    assert set(TEXTS) == {t for t in metadata.tables.values() if "embedding" in t.c}
    assert all("embedding_model" in table.c for table in TEXTS)
