"""SQLite: exact cosine in NumPy over one user's vectors; FTS5 for the lexical channels.

Migration 0002 keeps two contentless FTS5 tables in step with ``memories``
(``memories_fts``: porter stemming; ``memories_trgm``: trigram tokenizer),
keyed by ``memories_fts_ids``. Migration 0005 numbers those rows by user (a
user's rowids start at their ``memories_fts_users.slot << 32``) and every MATCH
here carries the user's rowid range: FTS5 seeks each term's doclist to that
user's rows instead of walking every user's, so a search costs what the user
has, not what the store has.

The indexes only find which memory matches which query term; scoring is shared
with PostgreSQL (``search.scoring``): BM25 with this user's statistics for keywords
(FTS5's own ``bm25()`` would use every user's), and pg_trgm's
``word_similarity`` per term (``search.query_text``), weighted by IDF, for trigrams.
The trigram index proposes candidates by shared fragments, all scored exactly
in Python as PostgreSQL scores every ``<%`` match, up to ``max(200, 10 k)`` of
them; beyond that, the best by FTS5's overlap rank.
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
    Integer,
    Join,
    Select,
    TableClause,
    func,
    literal,
    literal_column,
    select,
    table,
    union_all,
)
from sqlalchemy.ext.asyncio import AsyncConnection
from sqlalchemy.sql import column

from truemem_core.embeddings import Vector
from truemem_core.search.channels import AVG_LENGTH, LENGTH, scope
from truemem_core.search.filters import SearchFilters
from truemem_core.search.query_text import TrigramMatcher, fts5_or_query, trigram_query
from truemem_core.search.scoring import bm25_rank, idf_rank
from truemem_core.storage.schema import memories, messages

_IDS = table("memories_fts_ids", column("rowid"), column("memory_id"))
_FTS = table("memories_fts", column("rowid"))
_TRGM = table("memories_trgm", column("rowid"))
_USERS = table("memories_fts_users", column("slot"), column("user_id"))
_SLOT_BITS = 32  # a user's FTS rowids: slot << 32 onwards (migration 0005)
# Trigram candidates scored exactly: all, unless more than max(this, 10 k).
_CANDIDATES = 200


class SQLiteChannels:
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
            select(literal(i).label("term"), _FTS.c.rowid).where(*_matches(_FTS, [term], user_id))
            for i, term in enumerate(terms)
        )))
        stats = (await conn.execute(select(func.count(), AVG_LENGTH).where(*where))).one()
        rows = await conn.execute(
            select(memories.c.id, matched.c.term, LENGTH)
            .select_from(_joined(matched))
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
        limit = max(_CANDIDATES, 10 * k)
        matched = _materialized(select(_TRGM.c.rowid).where(*_matches(_TRGM, terms, user_id)))
        candidates = (await conn.execute(_texts(matched, where).limit(limit + 1))).all()
        if len(candidates) > limit:
            # Too many to score: the best by FTS5's fragment-overlap rank. bm25() counts
            # each fragment over every user's rows, so it is only paid here.
            overlap: ColumnElement[float] = literal_column("bm25(memories_trgm)")
            ranked = _materialized(select(_TRGM.c.rowid, overlap.label("overlap"))
                                   .where(*_matches(_TRGM, terms, user_id)))
            candidates = (await conn.execute(
                _texts(ranked, where).order_by(ranked.c.overlap).limit(limit))).all()
        matcher = TrigramMatcher(terms)
        hits = [
            (row.id, i, similarity)
            for row in candidates
            for i, similarity in enumerate(matcher.scores(row.text, threshold))
            if similarity >= threshold
        ]
        return idf_rank(hits, documents=int(documents), limit=k)


def _matches(fts: TableClause, terms: Sequence[str], user_id: str) -> list[ColumnElement[bool]]:
    """The MATCH, within the user's rowid range (migration 0005): FTS5 seeks every
    doclist to the range instead of walking all users' rows."""
    query = trigram_query(terms) if fts is _TRGM else fts5_or_query(terms)
    first = (select(_USERS.c.slot.op("<<", return_type=Integer)(_SLOT_BITS))
             .where(_USERS.c.user_id == user_id).scalar_subquery())
    return [literal_column(fts.name).op("MATCH", return_type=Boolean)(query),
            fts.c.rowid.between(first, first + (1 << _SLOT_BITS) - 1)]


def _joined(matched: CTE) -> Join:
    return (matched.join(_IDS, _IDS.c.rowid == matched.c.rowid)
            .join(memories, memories.c.id == _IDS.c.memory_id))


def _texts(matched: CTE, where: Sequence[ColumnElement[bool]]) -> Select[Any]:
    return select(memories.c.id, memories.c.text).select_from(_joined(matched)).where(*where)


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
