"""PostgreSQL + pgvector + pg_trgm: exact per-user scans, one statement per channel.

A user has at most a few hundred memories (and some thousands of messages), so
the btree on ``user_id`` narrows every scan: an exact ``ORDER BY embedding <=> q``
is sub-millisecond, and an HNSW index would search globally and then filter by
user, returning almost nothing. The lexical channels test the user's rows the same way, in forms no
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
)
from sqlalchemy.ext.asyncio import AsyncConnection

from truemem_core.embeddings import Vector
from truemem_core.search.channels import Corpus
from truemem_core.search.scoring import bm25_rank, idf_rank
from truemem_core.storage.schema import EmbeddingType

_LANGUAGES = ("english", "spanish")  # as in the search_vector columns (migrations 0002, 0008)


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


class PostgresChannels:
    async def nearest(
        self, conn: AsyncConnection, corpus: Corpus, query: Vector, k: int
    ) -> list[tuple[Any, float]]:
        vector = bindparam("query", query, type_=EmbeddingType())
        embedding = corpus.table.c.embedding
        distance = embedding.op("<=>", return_type=Float)(vector)
        stmt = (
            select(corpus.table.c.id, (1 - distance).label("score"))
            .where(*corpus.where, embedding.is_not(None))
            .order_by(distance)
            .limit(k)
        )
        return [(row.id, float(row.score)) for row in await conn.execute(stmt)]

    async def keyword(
        self, conn: AsyncConnection, corpus: Corpus, terms: Sequence[str], k: int
    ) -> list[tuple[Any, float]]:
        if not terms:
            return []
        stats = (await conn.execute(
            select(func.count(), func.avg(func.length(corpus.text))).where(*corpus.where))).one()
        if not stats[0]:
            return []
        # ts_match_vq is what `@@` calls; as a function the planner cannot answer it from
        # a GIN index (whose scan walks every user's matches), so the user_id index leads.
        search_vector: ColumnElement[Any] = literal_column(f"{corpus.table.name}.search_vector")
        matches = [func.ts_match_vq(search_vector, _tsquery(t)) for t in terms]
        rows = await conn.execute(
            select(corpus.table.c.id, corpus.length,
                   *(m.label(f"t{i}") for i, m in enumerate(matches)))
            .where(*corpus.where, or_(*matches))
        )
        hits = [(row.id, i, row.length) for row in rows
                for i in range(len(terms)) if row[2 + i]]
        return bm25_rank(hits, documents=stats[0], average_length=stats[1], limit=k)

    async def trigram(
        self,
        conn: AsyncConnection,
        corpus: Corpus,
        terms: Sequence[str],
        k: int,
        *,
        threshold: float,
    ) -> list[tuple[Any, float]]:
        if not terms:
            return []
        documents = (await conn.execute(select(func.count()).where(*corpus.where))).scalar_one()
        if not documents:
            return []
        # Every row of the user's is scored, not `term <% text`: with that, the planner ANDs
        # the user_id index with the GIN trigram index, whose scan walks every user's
        # matches (15 ms for a common trigram at 150,000 rows, growing with the store).
        scored = select(corpus.table.c.id, *(
            func.word_similarity(t, corpus.text).label(f"s{i}") for i, t in enumerate(terms)
        )).where(*corpus.where).subquery()
        best = func.greatest(*(scored.c[f"s{i}"] for i in range(len(terms))))
        rows = await conn.execute(select(scored).where(best >= threshold))
        hits = [
            (row.id, i, float(row[1 + i]))
            for row in rows for i in range(len(terms)) if row[1 + i] >= threshold
        ]
        return idf_rank(hits, documents=int(documents), limit=k)
