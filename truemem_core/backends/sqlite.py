"""SQLite: exact cosine in NumPy over one user's vectors; FTS5 for the lexical channels.

Migration 0002 keeps two contentless FTS5 tables in step with ``memories``
(``memories_fts``: porter stemming; ``memories_trgm``: trigram tokenizer),
keyed by ``memories_fts_ids``. The indexes only find which memory matches
which query term; scoring is shared with PostgreSQL (``retrieval``): BM25 with
this user's statistics for keywords (FTS5's own ``bm25()`` would use every
user's), and pg_trgm's ``word_similarity`` per term (``textsearch``), weighted
by IDF, for trigrams. The trigram index proposes candidates by shared
fragments; the best ``max(200, 10 k)`` of them by FTS5's overlap rank are
scored exactly in Python (PostgreSQL scores every ``<%`` match).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from sqlalchemy import (
    CTE,
    Boolean,
    ColumnElement,
    CompoundSelect,
    Select,
    TableClause,
    event,
    func,
    literal,
    literal_column,
    select,
    table,
    union_all,
)
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine
from sqlalchemy.sql import column

from ..embeddings import Vector
from ..retrieval import SearchFilters, bm25_rank, idf_rank
from ..schema import memories, messages
from ..textsearch import TrigramMatcher, fts5_or_query, trigram_query
from . import _AVG_LENGTH, _LENGTH, scope

_IDS = table("memories_fts_ids", column("rowid"), column("memory_id"))
_FTS = table("memories_fts", column("rowid"))
_TRGM = table("memories_trgm", column("rowid"))
# Trigram candidates scored exactly, in order of FTS5's own fragment-overlap rank.
_CANDIDATES = 200


class SQLiteBackend:
    def configure(self, engine: AsyncEngine) -> None:
        @event.listens_for(engine.sync_engine, "connect")
        def _connect(dbapi_connection: Any, _record: Any) -> None:
            dbapi_connection.isolation_level = None  # we issue BEGIN ourselves
            cursor = dbapi_connection.cursor()
            cursor.execute("PRAGMA journal_mode=WAL")
            cursor.execute("PRAGMA busy_timeout=30000")
            cursor.execute("PRAGMA synchronous=NORMAL")
            cursor.close()

        @event.listens_for(engine.sync_engine, "begin")
        def _begin(conn: Any) -> None:
            # IMMEDIATE takes the write lock up front, so read-then-write
            # transactions queue instead of failing with "database is locked".
            readonly = conn.get_execution_options().get("truemem_readonly", False)
            conn.exec_driver_sql("BEGIN" if readonly else "BEGIN IMMEDIATE")

    async def lock_user(self, conn: AsyncConnection, user_id: str) -> None:
        return None  # BEGIN IMMEDIATE already serialises every writer

    async def nearest(
        self,
        conn: AsyncConnection,
        user_id: str,
        query: Vector,
        k: int,
        *,
        include_archived: bool = False,
        filters: SearchFilters | None = None,
    ) -> list[tuple[str, float]]:
        stmt = select(memories.c.id, memories.c.embedding).where(
            *scope(user_id, filters, include_archived=include_archived)
        )
        return _top_k((await conn.execute(stmt)).all(), query, k)

    async def nearest_turns(
        self, conn: AsyncConnection, user_id: str, session_id: str, query: Vector, k: int
    ) -> list[tuple[int, float]]:
        stmt = select(messages.c.id, messages.c.embedding).where(
            messages.c.user_id == user_id, messages.c.session_id != session_id,
            messages.c.embedding.is_not(None))
        return _top_k((await conn.execute(stmt)).all(), query, k)

    async def keyword(
        self,
        conn: AsyncConnection,
        user_id: str,
        terms: Sequence[str],
        k: int,
        *,
        filters: SearchFilters,
    ) -> list[tuple[str, float]]:
        if not terms:
            return []
        where = scope(user_id, filters)
        matched = _materialized(union_all(*(
            select(literal(i).label("term"), _FTS.c.rowid).where(_matches(_FTS, [term]))
            for i, term in enumerate(terms)
        )))
        stats = (await conn.execute(select(func.count(), _AVG_LENGTH).where(*where))).one()
        rows = await conn.execute(
            select(memories.c.id, matched.c.term, _LENGTH)
            .select_from(matched.join(_IDS, _IDS.c.rowid == matched.c.rowid)
                         .join(memories, memories.c.id == _IDS.c.memory_id))
            .where(*where)
        )
        return bm25_rank(rows, documents=stats[0], average_length=stats[1], limit=k)

    async def trigram(
        self,
        conn: AsyncConnection,
        user_id: str,
        terms: Sequence[str],
        k: int,
        *,
        filters: SearchFilters,
        threshold: float,
    ) -> list[tuple[str, float]]:
        if not trigram_query(terms):
            return []
        where = scope(user_id, filters)
        documents = (await conn.execute(select(func.count()).where(*where))).scalar_one()
        overlap: ColumnElement[float] = literal_column("bm25(memories_trgm)")
        matched = _materialized(
            select(_TRGM.c.rowid, overlap.label("overlap")).where(_matches(_TRGM, terms)))
        candidates = await conn.execute(
            select(memories.c.id, memories.c.text)
            .select_from(matched.join(_IDS, _IDS.c.rowid == matched.c.rowid)
                         .join(memories, memories.c.id == _IDS.c.memory_id))
            .where(*where)
            .order_by(matched.c.overlap)
            .limit(max(_CANDIDATES, 10 * k))
        )
        matcher = TrigramMatcher(terms)
        hits = [
            (row.id, i, similarity)
            for row in candidates
            for i, similarity in enumerate(matcher.scores(row.text, threshold))
            if similarity >= threshold
        ]
        return idf_rank(hits, documents=int(documents), limit=k)


def _matches(fts: TableClause, terms: Sequence[str]) -> ColumnElement[bool]:
    query = trigram_query(terms) if fts is _TRGM else fts5_or_query(terms)
    return literal_column(fts.name).op("MATCH", return_type=Boolean)(query)


def _materialized(query: Select[Any] | CompoundSelect[Any]) -> CTE:
    """The index lookup first: joined directly, SQLite would drive from the user's
    rows and re-run the MATCH once per row."""
    return query.cte("matched").prefix_with("MATERIALIZED")


def _top_k(rows: Sequence[Any], query: Vector, k: int) -> list[tuple[Any, float]]:
    """Exact cosine top-k over (id, normalised embedding) rows, best first."""
    if not rows:
        return []
    scores = np.stack([row.embedding for row in rows]) @ np.asarray(query, dtype=np.float32)
    return [(rows[i].id, float(scores[i])) for i in np.argsort(-scores, kind="stable")[:k]]
