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
as the SQLite backend does. Both channels and the statistics they need are one
statement (``lexical``); each channel alone is that statement with one part.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import (
    CTE,
    ColumnElement,
    CompoundSelect,
    Float,
    Integer,
    Select,
    Text,
    bindparam,
    cast,
    func,
    literal,
    literal_column,
    null,
    or_,
    select,
    union_all,
)
from sqlalchemy.dialects.postgresql import ARRAY, REAL, array
from sqlalchemy.ext.asyncio import AsyncConnection

from truemem_core.embeddings import Vector
from truemem_core.search.channels import Corpus, built
from truemem_core.search.scoring import bm25_rank, idf_rank
from truemem_core.storage.schema import EmbeddingType

_LANGUAGES = ("english", "spanish")  # as in the search_vector columns (migrations 0002, 0008)


def _tsquery(term: ColumnElement[str]) -> ColumnElement[Any]:
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
        stmt = built(corpus, _nearest)
        return [(row.id, float(row.score))
                for row in await conn.execute(stmt, corpus.bind(query=query, k=k))]

    async def keyword(
        self, conn: AsyncConnection, corpus: Corpus, terms: Sequence[str], k: int
    ) -> list[tuple[Any, float]]:
        return (await self.lexical(conn, corpus, terms, None, k, threshold=1.0))["keyword"]

    async def trigram(
        self,
        conn: AsyncConnection,
        corpus: Corpus,
        terms: Sequence[str],
        k: int,
        *,
        threshold: float,
    ) -> list[tuple[Any, float]]:
        return (await self.lexical(conn, corpus, None, terms, k, threshold=threshold))["trigram"]

    async def lexical(
        self,
        conn: AsyncConnection,
        corpus: Corpus,
        keyword_terms: Sequence[str] | None,
        trigram_terms: Sequence[str] | None,
        k: int,
        *,
        threshold: float,
    ) -> dict[str, list[tuple[Any, float]]]:
        keyword, trigram = list(keyword_terms or ()), list(trigram_terms or ())
        if not keyword and not trigram:
            return {name: [] for name, terms in (("keyword", keyword_terms),
                                                 ("trigram", trigram_terms)) if terms is not None}
        stmt = built(corpus, _lexical, len(keyword), len(trigram))
        params = corpus.bind(threshold=threshold, **{f"kw{i}": t for i, t in enumerate(keyword)},
                             **{f"tr{i}": t for i, t in enumerate(trigram)})
        documents, average = 0, None
        words: list[tuple[Any, int, int]] = []
        fuzzy: list[tuple[Any, int, float]] = []
        for row in await conn.execute(stmt, params):
            if row.channel == 0:
                documents, average = int(row.documents), row.average
            elif row.channel == 1:
                words += [(row.id, i, row.length) for i, hit in enumerate(row.values) if hit]
            else:
                fuzzy += [(row.id, i, value) for i, value in enumerate(row.values)
                          if value >= threshold]
        found: dict[str, list[tuple[Any, float]]] = {}
        if keyword_terms is not None:
            found["keyword"] = bm25_rank(words, documents=documents, average_length=average,
                                         limit=k) if documents else []
        if trigram_terms is not None:
            found["trigram"] = idf_rank(fuzzy, documents=documents, limit=k) if documents else []
        return found


def _nearest(corpus: Corpus) -> Select[Any]:
    vector = bindparam("query", type_=EmbeddingType())
    embedding = corpus.table.c.embedding
    distance = embedding.op("<=>", return_type=Float)(vector)
    return (select(corpus.table.c.id, (1 - distance).label("score"))
            .where(*corpus.where, embedding.is_not(None))
            .order_by(distance)
            .limit(bindparam("k")))


def _lexical(corpus: Corpus, keywords: int, trigrams: int) -> CompoundSelect[Any]:
    """One row of statistics, then one row per (channel, matching row) with the per-term
    matches (keyword: 0/1) or similarities (trigram) as an array; terms bound as
    ``kw0``..., ``tr0``..., the trigram threshold as ``threshold``.

    The user's rows are read once (a materialised CTE), not once per part: they lie on
    about as many heap pages as there are rows, since users' writes interleave.
    ts_match_vq is what `@@` calls; as a function the planner cannot answer it from a GIN
    index (whose scan walks every user's matches), so the user_id index leads. Every row
    of the user's is scored by word_similarity, not `term <% text`: with that, the planner
    would AND the user_id index with the GIN trigram index."""
    rows = select(
        corpus.table.c.id, corpus.text.label("text"),
        literal_column(f"{corpus.table.name}.search_vector").label("search_vector"),
    ).where(*corpus.where).cte("corpus_rows").prefix_with("MATERIALIZED")
    parts = [_part(0, null(), null(), null(), rows,
                   func.count(), func.avg(func.length(rows.c.text)))]
    if keywords:
        matches = [func.ts_match_vq(rows.c.search_vector,
                                    _tsquery(bindparam(f"kw{i}", type_=Text)))
                   for i in range(keywords)]
        parts.append(_part(1, rows.c.id, func.length(rows.c.text),
                           array([cast(cast(m, Integer), REAL) for m in matches]), rows)
                     .where(or_(*matches)))
    if trigrams:
        scored = select(rows.c.id, *(
            func.word_similarity(bindparam(f"tr{i}", type_=Text), rows.c.text).label(f"s{i}")
            for i in range(trigrams))).subquery()
        similarities = [scored.c[f"s{i}"] for i in range(trigrams)]
        parts.append(
            select(literal(2).label("channel"), scored.c.id, null().label("length"),
                   array(similarities).label("values"),
                   null().label("documents"), null().label("average"))
            .where(func.greatest(*similarities) >= bindparam("threshold", type_=Float)))
    return union_all(*parts)


def _part(
    channel: int, id_: ColumnElement[Any], length: ColumnElement[Any],
    values: ColumnElement[Any], rows: CTE,
    documents: ColumnElement[Any] | None = None, average: ColumnElement[Any] | None = None,
) -> Select[Any]:
    """One branch of ``lexical``'s UNION ALL over the corpus's rows."""
    return select(
        literal(channel).label("channel"), id_.label("id"), length.label("length"),
        cast(values, ARRAY(REAL)).label("values"),
        (null() if documents is None else documents).label("documents"),
        (null() if average is None else average).label("average"),
    ).select_from(rows)
