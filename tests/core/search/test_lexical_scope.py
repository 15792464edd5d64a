"""The lexical channels read only the searching user's rows (issue #5).

SQLite: the full-text rows are numbered by user (migration 0005) and every MATCH
carries the user's rowid range. PostgreSQL: both lexical channels scan the user's
rows, never a GIN index (whose scan walks every user's matches); migration 0006
drops the ones 0002 made.
"""

from __future__ import annotations

import asyncio
import contextlib
import sqlite3
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from migration_steps import current, head, migrate
from sqlalchemy import create_engine, event
from sqlalchemy import text as sql_text
from sqlalchemy.ext.asyncio import create_async_engine

from truemem_core import TrueMem, default_embedder
from truemem_core.embeddings import normalize
from truemem_core.search.channels import channels_for_dialect, memories_of, past_turns_of
from truemem_core.search.channels import sqlite as sqlite_backend
from truemem_core.search.filters import CheckedFilters
from truemem_core.search.scoring import bm25_rank
from truemem_core.storage.database import Database, resolve_url
from truemem_core.storage.schema import memories

# Migration 0002's GIN indexes, dropped by 0006.
_GIN_INDEXES = {"ix_memories_search_vector": "gin (search_vector)",
                "ix_memories_text_trgm": "gin (text gin_trgm_ops)"}

# Each indexed memory: its owner, the slot its FTS rowid lies in, and the owner's slot.
_LAYOUT = """
    SELECT m.user_id, i.rowid >> 32, u.slot FROM memories_fts_ids i
    JOIN memories m ON m.id = i.memory_id LEFT JOIN memories_fts_users u ON u.user_id = m.user_id
"""


def _sql(path: Path, statement: str, *params: Any) -> list[tuple[Any, ...]]:
    with contextlib.closing(sqlite3.connect(path)) as conn, conn:
        return conn.execute(statement, params).fetchall()


def _layout(path: Path) -> set[str]:
    """Check every memory is indexed once, in its user's range; the users holding a slot."""
    rows = _sql(path, _LAYOUT)
    assert all(high == slot for _, high, slot in rows), rows
    assert len(rows) == _sql(path, "SELECT count(*) FROM memories")[0][0]
    for table in ("memories_fts", "memories_trgm"):
        assert _sql(path, f"SELECT count(*) FROM {table}_docsize")[0][0] == len(rows)
    return {user for (user,) in _sql(path, "SELECT user_id FROM memories_fts_users")}


def test_triggers_keep_each_user_in_their_range(tmp_path: Path) -> None:
    path = tmp_path / "t.db"
    with TrueMem(path) as memory:
        lisbon, cello = (memory.add_memory("ana", t) for t in ("Lives in Lisbon", "Plays cello"))
        memory.add_memory("bob", "Lives in Porto")
        carla = memory.add_memory("carla", "Grows tomatoes on the balcony")
        memory.update_memory("ana", lisbon.id, text="Moved to Porto last spring")
        memory.delete_memory("ana", cello.id)
        assert _layout(path) == {"ana", "bob", "carla"}
        # no API changes a memory's owner, but the trigger follows one
        _sql(path, "UPDATE memories SET user_id = 'bob' WHERE id = ?", carla.id)
        assert _layout(path) == {"ana", "bob"}  # carla's last memory: her slot is released
        assert memory.erase_user("bob") == 2
        assert _layout(path) == {"ana"}
        assert [h.memory.text for h in memory.search("ana", "Porto", mode="keyword")] == [
            "Moved to Porto last spring"]
        assert memory.search("bob", "Porto", mode="trigram") == []


# All hold "lis", so all are trigram candidates for "Lisbn"; the first matches best.
LIS = ["Lives in Lisbon", "Keeps a shopping list", "Listens to jazz", "Is a tax specialist",
       "Polishes old furniture", "Visits Lisieux", "Calls Alisa on Fridays", "Reads English",
       "Has a stylish bike", "Is a realist painter", "Collects lists of birds",
       "Owns a Lister engine", "Studied journalism"]


def _note(text: str) -> dict[str, Any]:
    when = datetime(2024, 3, 1, tzinfo=UTC).isoformat()
    return {"text": text, "importance": 3, "created_at": when, "updated_at": when}


def test_trigram_takes_the_best_candidates_when_there_are_too_many(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    scored: list[str] = []

    class Counting(sqlite_backend.TrigramMatcher):
        def scores(self, text: str, at_least: float = 0.0) -> list[float]:
            scored.append(text)
            return super().scores(text, at_least)

    monkeypatch.setattr(sqlite_backend, "TrigramMatcher", Counting)
    with TrueMem(tmp_path / "t.db") as memory:
        memory.import_user("ana", {"format": "truemem.user/1",
                                   "memories": [_note(t) for t in LIS]})
        every = memory.search("ana", "Lisbn", k=1, mode="trigram")
        assert [h.memory.text for h in every] == [LIS[0]] and len(scored) == len(LIS)
        scored.clear()
        monkeypatch.setattr(sqlite_backend, "_CANDIDATES", 0)  # k=1: 10 of the 13
        best = memory.search("ana", "Lisbn", k=1, mode="trigram")  # by FTS5's overlap rank
        assert [h.memory.id for h in best] == [h.memory.id for h in every]
        assert len(scored) == 10


def _insert_at_0004(path: Path, user: str, text: str) -> None:
    """A memory written by 0004's code (indexed by 0002's triggers)."""
    now = datetime.now(UTC)
    engine = create_engine(f"sqlite:///{path}")
    try:
        with engine.begin() as conn:
            conn.execute(memories.insert().values(
                id=str(uuid.uuid4()), user_id=user, text=text, importance=3, kind="semantic",
                source="manual", state="active", reinforcements=0,
                embedding=normalize(default_embedder().embed([text]))[0],
                embedding_model=default_embedder().model_name, created_at=now, updated_at=now))
    finally:
        engine.dispose()


async def test_migration_0005_up_again_and_down(tmp_path: Path) -> None:
    path, reference = tmp_path / "t.db", tmp_path / "reference.db"
    url = f"sqlite:///{path}"
    await migrate(url, "upgrade", "0004")
    await migrate(f"sqlite:///{reference}", "upgrade", "0004")
    for user, text in (("ana", "Lives in Lisbon"), ("bob", "Lives in Porto"),
                       ("ana", "Plays the cello")):
        _insert_at_0004(path, user, text)

    async def search(user: str, query: str) -> list[str]:
        async with TrueMem(url) as memory:  # opening upgrades to head
            return [h.memory.text for h in await memory.asearch(user, query, mode="trigram")]

    assert await search("ana", "Lisbn") == ["Lives in Lisbon"]
    assert await current(url) == head() and _layout(path) == {"ana", "bob"}
    await migrate(url, "stamp", "0004")  # 0005's upgrade once more, on its own layout
    assert await search("bob", "Porto") == ["Lives in Porto"]
    assert _layout(path) == {"ana", "bob"}

    await migrate(url, "downgrade", "0004")
    schema = "SELECT type, name, sql FROM sqlite_master WHERE name LIKE 'memories%' ORDER BY 2"
    assert _sql(path, schema) == _sql(reference, schema)  # 0002's tables and triggers
    _insert_at_0004(path, "carla", "Grows tomatoes")
    assert await search("carla", "tomatos") == ["Grows tomatoes"]
    assert _layout(path) == {"ana", "bob", "carla"}


async def _lexical_plans(url: str, channel: str, user: str, terms: list[str]) -> list[str]:
    """EXPLAIN of each SELECT of a lexical channel, in a plan space where any condition a
    GIN index can serve is served by it: 0002's GIN indexes back (as an operator may add
    them, or a store downgraded below 0006 has), no user_id index, no sequential scan
    unless nothing else is possible; with custom and with generic (prepared) plans.
    Rolled back afterwards."""
    db = Database(resolve_url(url), embedder=None)
    issued: list[tuple[str, Any]] = []

    def capture(_conn: Any, _cursor: Any, statement: str, parameters: Any, *_: Any) -> None:
        if statement.lstrip().upper().startswith(("SELECT", "WITH")):
            issued.append((statement, parameters))

    search = getattr(channels_for_dialect(db.dialect), channel)
    options: dict[str, Any] = {"threshold": 0.3} if channel == "trigram" else {}
    plans: list[str] = []
    try:
        async with db.engine.connect() as conn, conn.begin() as transaction:
            await conn.exec_driver_sql("DROP INDEX ix_memories_user_created")
            for name, method in _GIN_INDEXES.items():
                await conn.exec_driver_sql(f"CREATE INDEX {name} ON memories USING {method}")
            await conn.exec_driver_sql("SET LOCAL enable_seqscan = off")
            event.listen(db.engine.sync_engine, "before_cursor_execute", capture)
            hits = await search(conn, memories_of(user, CheckedFilters()), terms, 10, **options)
            event.remove(db.engine.sync_engine, "before_cursor_execute", capture)
            for mode in ("force_custom_plan", "force_generic_plan"):
                await conn.exec_driver_sql(f"SET LOCAL plan_cache_mode = {mode}")
                plans += ["\n".join(row[0] for row in await conn.exec_driver_sql(
                    "EXPLAIN " + statement, parameters)) for statement, parameters in issued]
            await transaction.rollback()
    finally:
        await db.close()
    assert hits
    return plans


@pytest.mark.parametrize("backend", ["postgres"])
@pytest.mark.parametrize(("channel", "terms"), [("keyword", ["Lisbon", "jazz"]),
                                                ("trigram", ["Lisbn", "jazz"])])
def test_postgres_lexical_channels_never_scan_every_users_matches(
    tmp_url: str, channel: str, terms: list[str]
) -> None:
    with TrueMem(tmp_url) as memory:
        for user in ("ana", "bob"):
            memory.import_user(user, {"format": "truemem.user/1",
                                      "memories": [_note(t) for t in LIS]})
    plans = asyncio.run(_lexical_plans(tmp_url, channel, "ana", terms))
    assert plans and all(name not in plan for plan in plans for name in _GIN_INDEXES), plans


async def _pg_indexes(url: str) -> set[str]:
    engine = create_async_engine(resolve_url(url))
    try:
        async with engine.connect() as conn:
            return set((await conn.exec_driver_sql(
                "SELECT indexname FROM pg_indexes WHERE tablename = 'memories'")).scalars())
    finally:
        await engine.dispose()


@pytest.mark.parametrize("backend", ["postgres"])
async def test_migration_0006_drops_the_unused_gin_indexes(tmp_url: str) -> None:
    await migrate(tmp_url, "upgrade", "0005")
    assert set(_GIN_INDEXES) <= await _pg_indexes(tmp_url)
    async with TrueMem(tmp_url) as memory:  # opening upgrades to head
        await memory.aadd_memory("ana", "Lives in Lisbon")
        assert not set(_GIN_INDEXES) & await _pg_indexes(tmp_url)
        for mode, query in (("trigram", "Lisbn"), ("keyword", "Lisbon")):
            hits = await memory.asearch("ana", query, mode=mode)
            assert [h.memory.text for h in hits] == ["Lives in Lisbon"]
    await migrate(tmp_url, "downgrade", "0005")
    assert set(_GIN_INDEXES) <= await _pg_indexes(tmp_url)
    await migrate(tmp_url, "upgrade", "head")
    assert not set(_GIN_INDEXES) & await _pg_indexes(tmp_url)
    assert await current(tmp_url) == head()


_TURNS = [
    "My sister's wedding is in June, in Lisbon",
    "The wedding band plays jazz; my sister chose them",
    "Mi hermana vive en Lisboa y toca la guitarra",
    "We went to the beach and the weather was lovely",
    "Jazz on Sundays, guitar on Mondays",
    "Nothing about that, just the usual",
    "the the the",
]
# "a" is a stop word in both languages: it parses to no query at all
_QUERIES = [["sister's wedding", "jazz", "the"], ["guitarra", "Lisbon", "beach"],
            ["a", "jazz"], ["nothing", "usual", "Sundays", "Mondays", "weather"],
            ["absent"], ["a"]]

# Which past message matches which keyword, one term at a time: the definition the
# statement's shortcut (one test of each row against all the terms OR-ed) must agree with.
_PER_TERM = """
    SELECT m.id, t.n - 1 AS term, m.tokens
    FROM messages m, unnest(CAST(:terms AS text[])) WITH ORDINALITY AS t(term, n)
    WHERE m.user_id = :user AND ts_match_vq(m.search_vector,
        phraseto_tsquery('english', t.term) || phraseto_tsquery('spanish', t.term))
"""


@pytest.mark.parametrize("backend", ["postgres"])
async def test_postgres_recall_keyword_matches_equal_testing_each_term_alone(
    tmp_url: str,
) -> None:
    async with TrueMem(tmp_url) as memory:
        for user in ("ana", "bob"):
            await memory.arecord_messages(user, "old", [("user", turn) for turn in _TURNS])
            await memory.arecord_messages(user, "now", [("user", "hello")])
    db = Database(resolve_url(tmp_url), embedder=None)
    channels = channels_for_dialect("postgresql")
    corpus = past_turns_of("ana", "now", 1)  # every message of "old" is a past turn
    try:
        async with db.autocommit() as conn:
            count, average = (await conn.execute(sql_text(
                "SELECT count(*), avg(tokens) FROM messages WHERE user_id = 'ana'"
                " AND session_id = 'old'"))).one()
            for terms in _QUERIES:
                matches = (await conn.execute(
                    sql_text(_PER_TERM), {"terms": terms, "user": "ana"})).all()
                expected = bm25_rank(sorted((row.id, row.term, row.tokens) for row in matches),
                                     documents=count, average_length=average, limit=10)
                found = await channels.keyword(conn, corpus, terms, 10)
                assert found == expected, terms
                assert bool(found) == (terms not in (["absent"], ["a"])), terms
    finally:
        await db.close()
