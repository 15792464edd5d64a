"""Conversation recall searches past messages and passages by meaning at a cost that
does not grow with the history (PostgreSQL: an HNSW index; SQLite: the user's vectors
kept in memory, checked against the file on every search), and finds on a small store
what the exact search (``exact_recall=True``) finds: the same turns, in the same order,
with the same scores, as the history grows and shrinks."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import db_access
import pytest
from sqlalchemy import event, text
from test_passages import essay

from truemem_core import Context, Settings, TrueMem, default_embedder
from truemem_core.search.channels import (
    channels_for_dialect,
    past_passages_of,
    past_turns_of,
    postgres,
)
from truemem_core.storage.database import Database, resolve_url

DAY = datetime(2024, 3, 1, 9, 0, tzinfo=UTC)
SAID = [
    "I adopted a grey cat called Pixel from the shelter.",
    "My sister Lena is getting married in Porto in June.",
    "The flat's boiler broke again, the plumber comes on Tuesday.",
    "I started learning the cello, my teacher is Mrs Okafor.",
    "We booked a cabin near Lake Bled for the autumn holidays.",
    "My manager wants the quarterly report by Friday noon.",
    "I ran my first half marathon in 1 hour 58 minutes.",
    "The dentist said I need a crown on the upper left molar.",
    "I'm allergic to hazelnuts, so no praline desserts for me.",
    "Our team is migrating the billing service from Java to Go.",
    "I bought a used Yamaha keyboard for my nephew's birthday.",
    "The garden tomatoes got blight, I had to pull them all out.",
]
QUERIES = ["what's my cat's name", "where is the wedding", "when does the plumber come",
           "what instrument am I learning", "holiday plans", "report deadline",
           "half marathon time", "dental work", "food allergies", "billing migration",
           "present for my nephew", "what happened to the tomatoes",
           "where is the staging database password kept"]
EXACT = Settings(exact_recall=True, context_token_budget=100_000)
DEFAULT = Settings(context_token_budget=100_000)


@pytest.fixture(autouse=True)
def _index_every_user(monkeypatch: pytest.MonkeyPatch) -> None:
    """PostgreSQL searches by the index from this many rows of a user's (a small store
    has a few)."""
    monkeypatch.setattr(postgres, "INDEXED_FROM", 1)


def _turns(context: Context) -> list[tuple[int, tuple[int, ...], float]]:
    return [(t.message_id, t.passages, round(t.score, 6)) for t in context.recalled]


def _same(store_url: str, user: str = "ana") -> Iterator[str]:
    """Each query's recalled turns by default and by the exact search, asserted equal;
    yields the queries that recalled something."""
    with TrueMem(store_url, settings=DEFAULT) as fast, \
            TrueMem(store_url, settings=EXACT) as exact:
        for query in QUERIES:
            found = _turns(fast.get_context(user, "today", query))
            assert found == _turns(exact.get_context(user, "today", query)), query
            if found:
                yield query


def _turns_said(start: int) -> list[tuple[str, str, datetime]]:
    turns = [(("user", "assistant")[n % 2], line, DAY + timedelta(minutes=n))
             for n, line in enumerate(SAID[start:], start=start)]
    return [*turns, ("assistant", essay(), DAY + timedelta(hours=2))]  # by passages


def _history(memory: TrueMem, user: str = "ana", start: int = 0) -> list[int]:
    ids = memory.record_messages(user, f"past-{start}", _turns_said(start))
    memory.record(user, "today", "Good morning!", "Morning! How can I help?")
    memory.drain()
    return ids


async def _arecorded(memory: TrueMem, start: int = 0) -> list[int]:
    ids = await memory.arecord_messages("ana", f"past-{start}", _turns_said(start))
    await memory.arecord("ana", "today", "Good morning!", "Morning! How can I help?")
    await memory.adrain()
    return ids


def test_approximate_recall_finds_what_exact_recall_finds(store_url: str) -> None:
    with TrueMem(store_url) as memory:
        _history(memory)
        memory.record_messages("bob", "his", [("user", "My cat is called Pixel too.", DAY)])
        memory.drain()
    assert len(list(_same(store_url))) == len(QUERIES)


async def test_the_vector_search_follows_the_history_as_it_grows_and_shrinks(
    store_url: str,
) -> None:
    """The vector channel over past messages and passages, by default and exactly, with
    one channels object across changes (SQLite keeps the user's vectors in it): messages
    recorded after a search are found, those deleted since are not."""
    async with TrueMem(store_url, settings=DEFAULT) as memory:
        embedder = default_embedder()
        db = Database(resolve_url(store_url), embedder=None)
        channels = channels_for_dialect(db.dialect)

        async def both(query: str) -> list[Any]:
            vector = embedder.embed([query])[0]
            found = []
            for corpus in (past_turns_of("ana", "today", 20),
                           past_passages_of("ana", "today", 20)):
                async with db.transaction(readonly=True) as conn:
                    fast = await channels.nearest(conn, corpus, vector, 20, approximate=True)
                    exact = await channels.nearest(conn, corpus, vector, 20)
                assert [i for i, _ in fast] == [i for i, _ in exact], query
                assert [s for _, s in fast] == pytest.approx([s for _, s in exact], abs=1e-5)
                found += [(corpus.table.name, i) for i, _ in fast]
            return found

        try:
            await _arecorded(memory, start=6)
            first = await both("what's my cat's name")
            ids = await _arecorded(memory)  # the first six lines, in another session
            grown = await both("what's my cat's name")
            cat = ("messages", ids[0])  # "I adopted a grey cat called Pixel..."
            assert cat in grown and cat not in first
            await memory.sessions.aclear("ana", "past-0")
            assert set(await both("what's my cat's name")) == set(first)
        finally:
            await db.close()


@pytest.mark.parametrize("backend", ["postgres"])  # SQLite keeps the vectors in memory
def test_the_indexes_come_with_the_stores_embedder(store_url: str) -> None:
    """PostgreSQL: the HNSW indexes are made when a store records its embedder, for its
    dimension."""
    with TrueMem(store_url) as memory:
        _history(memory)
    found = db_access.rows(store_url, text(
        "SELECT indexname, indexdef FROM pg_indexes WHERE indexname LIKE '%embedding_hnsw'"))
    assert {row[0] for row in found} == {"ix_messages_embedding_hnsw",
                                         "ix_passages_embedding_hnsw"}
    assert all("vector(384)" in row[1] and "hnsw" in row[1] for row in found)


@pytest.mark.parametrize("backend", ["postgres"])
async def test_the_search_by_default_reads_the_index(store_url: str) -> None:
    """The statement's order is the indexed expression, so PostgreSQL can read the HNSW
    index for it, planned once for any user (generic plans): a change of the cast, or
    of where the user's condition stands, would sort the user's rows instead."""
    async with TrueMem(store_url) as memory:
        await _arecorded(memory)
    db = Database(resolve_url(store_url), embedder=None)
    issued: list[tuple[str, Any]] = []

    def capture(_conn: Any, _cursor: Any, statement: str, parameters: Any, *_: Any) -> None:
        issued.append((statement, parameters))

    vector = default_embedder().embed(["what's my cat's name"])[0]
    try:
        async with db.engine.connect() as conn, conn.begin() as transaction:
            event.listen(db.engine.sync_engine, "before_cursor_execute", capture)
            await channels_for_dialect(db.dialect).nearest(
                conn, past_turns_of("ana", "today", 20), vector, 20, approximate=True)
            event.remove(db.engine.sync_engine, "before_cursor_execute", capture)
            await conn.exec_driver_sql("SET LOCAL plan_cache_mode = force_generic_plan")
            await conn.exec_driver_sql("SET LOCAL enable_seqscan = off")
            [(statement, parameters)] = [(s, p) for s, p in issued if "vector(384)" in s]
            plan = "\n".join(row[0] for row in await conn.exec_driver_sql(
                "EXPLAIN " + statement, parameters))
            await transaction.rollback()
    finally:
        await db.close()
    assert "Index Scan using ix_messages_embedding_hnsw" in plan, plan
