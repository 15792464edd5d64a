"""PostgreSQL + pgvector + pg_trgm: exact per-user scans, one statement per channel.

A user has at most a few hundred memories, so the btree on ``user_id`` narrows
every scan: an exact ``ORDER BY embedding <=> q`` is sub-millisecond, and an
HNSW index would search globally and then filter by user, returning almost
nothing. The lexical channels test the user's rows the same way, in forms no
index can serve (``ts_match_vq`` rather than ``@@``, ``word_similarity`` rather
than ``<%``): a GIN index scan walks every user's matches for a term, which at
1.5 M rows took keyword searches to 124 ms. Migration 0006 drops the GIN
indexes of 0002 for that reason.

``ts_rank`` and ``word_similarity`` ignore how common a term is, so the
lexical channels fetch which memory matches which query term and rank them
with this user's statistics (``search.scoring``), exactly
as the SQLite backend does.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import (
    ColumnElement,
    Float,
    bindparam,
    func,
    literal_column,
    or_,
    select,
    text,
)
from sqlalchemy.ext.asyncio import AsyncConnection

from truemem_core.embeddings import Vector
from truemem_core.search.channels import AVG_LENGTH, LENGTH, scope
from truemem_core.search.filters import SearchFilters
from truemem_core.search.scoring import bm25_rank, idf_rank
from truemem_core.storage.schema import EmbeddingType, memories

_SEARCH_VECTOR: ColumnElement[Any] = literal_column("memories.search_vector")
_LANGUAGES = ("english", "spanish")  # as in the search_vector column (migration 0002)


def _tsquery(term: str) -> ColumnElement[Any]:
    """The term (a word or a phrase) parsed in every language of ``search_vector``, OR-ed."""
    parsed: list[ColumnElement[Any]] = [
        func.phraseto_tsquery(literal_column(f"'{lang}'::regconfig"), term)
        for lang in _LANGUAGES
    ]
    query = parsed[0]
    for other in parsed[1:]:
        query = query.op("||")(other)
    return query


_NEAREST_TURNS = """
SELECT id, 1 - (embedding <=> :query) AS score FROM messages
WHERE user_id = :user_id AND session_id <> :session_id AND embedding IS NOT NULL
ORDER BY embedding <=> :query LIMIT :k
"""


class PostgresChannels:
    async def nearest_turns(
        self, conn: AsyncConnection, user_id: str, session_id: str, query: Vector, k: int
    ) -> list[tuple[int, float]]:
        stmt = text(_NEAREST_TURNS).bindparams(bindparam("query", type_=EmbeddingType()))
        rows = await conn.execute(
            stmt, {"query": query, "user_id": user_id, "session_id": session_id, "k": k})
        return [(row.id, float(row.score)) for row in rows]

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
        vector = bindparam("query", query, type_=EmbeddingType())
        distance = memories.c.embedding.op("<=>", return_type=Float)(vector)
        stmt = (
            select(memories.c.id, (1 - distance).label("score"))
            .where(*scope(user_id, filters, include_archived=include_archived))
            .order_by(distance)
            .limit(k)
        )
        return [(row.id, float(row.score)) for row in await conn.execute(stmt)]

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
        stats = (await conn.execute(select(func.count(), AVG_LENGTH).where(*where))).one()
        if not stats[0]:
            return []
        # ts_match_vq is what `@@` calls; as a function the planner cannot answer it from
        # a GIN index (whose scan walks every user's matches), so the user_id index leads.
        matches = [func.ts_match_vq(_SEARCH_VECTOR, _tsquery(t)) for t in terms]
        rows = await conn.execute(
            select(memories.c.id, LENGTH, *(m.label(f"t{i}") for i, m in enumerate(matches)))
            .where(*where, or_(*matches))
        )
        hits = [(row.id, i, row.length) for row in rows
                for i in range(len(terms)) if row[2 + i]]
        return bm25_rank(hits, documents=stats[0], average_length=stats[1], limit=k)

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
        if not terms:
            return []
        where = scope(user_id, filters)
        documents = (await conn.execute(select(func.count()).where(*where))).scalar_one()
        if not documents:
            return []
        # Every row of the user's is scored, not `term <% text`: with that, the planner ANDs
        # the user_id index with the GIN trigram index, whose scan walks every user's
        # matches (15 ms for a common trigram at 150,000 rows, growing with the store).
        scored = select(memories.c.id, *(
            func.word_similarity(t, memories.c.text).label(f"s{i}") for i, t in enumerate(terms)
        )).where(*where).subquery()
        best = func.greatest(*(scored.c[f"s{i}"] for i in range(len(terms))))
        rows = await conn.execute(select(scored).where(best >= threshold))
        hits = [
            (row.id, i, float(row[1 + i]))
            for row in rows for i in range(len(terms)) if row[1 + i] >= threshold
        ]
        return idf_rank(hits, documents=int(documents), limit=k)
