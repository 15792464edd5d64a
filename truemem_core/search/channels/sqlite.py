"""SQLite: exact cosine in NumPy over one user's vectors; FTS5 for the lexical channels.

Migration 0002 keeps two contentless FTS5 tables in step with ``memories``
(``memories_fts``: porter stemming; ``memories_trgm``: trigram tokenizer),
keyed by ``memories_fts_ids``; migration 0008 does the same for ``messages``
(``messages_fts``, ``messages_trgm``, ``messages_fts_ids``), 0020 for ``passages``
(``passages_fts``, ``passages_fts_ids``). Migration 0005
numbers those rows by user (a user's rowids start at their
``<table>_fts_users.slot << 32``) and every MATCH here carries the user's rowid
range: FTS5 seeks each term's doclist to that user's rows instead of walking
every user's, so a search costs what the user has, not what the store has.

The indexes only find which memory matches which query term; scoring is shared
with PostgreSQL (``search.scoring``): BM25 with this user's statistics for keywords
(FTS5's own ``bm25()`` would use every user's), and pg_trgm's
``word_similarity`` per term (``search.query_text``), weighted by IDF, for trigrams.
The trigram index proposes candidates by shared fragments, all scored exactly
in Python as PostgreSQL scores every ``<%`` match, up to ``max(200, 10 k)`` of
them; beyond that, the best by FTS5's overlap rank.
"""

from __future__ import annotations

from collections.abc import Awaitable, Sequence
from dataclasses import dataclass
from functools import cache, lru_cache
from itertools import product
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
    bindparam,
    func,
    literal,
    literal_column,
    select,
    table,
    type_coerce,
    union_all,
)
from sqlalchemy.ext.asyncio import AsyncConnection
from sqlalchemy.ext.compiler import compiles
from sqlalchemy.sql import column
from sqlalchemy.sql.expression import ColumnClause
from sqlalchemy.types import NullType

from truemem_core.embeddings import Vector
from truemem_core.search.channels import Corpus, awaited, built, fetch_rows
from truemem_core.search.channels.sqlite_vectors import UserVectors
from truemem_core.search.query_text import TrigramMatcher, fts5_or_query, trigram_query
from truemem_core.search.scoring import bm25_rank, idf_rank
from truemem_core.storage.message_search import KEYS
from truemem_core.storage.schema import memories, messages, passages

_SLOT_BITS = 32  # a user's FTS rowids: slot << 32 onwards (migrations 0005, 0008)
# Trigram candidates scored exactly: all, unless more than max(this, 10 k).
_CANDIDATES = 200


@dataclass(frozen=True, slots=True)
class _Index:
    """A corpus's FTS5 tables (migrations 0002, 0005, 0008)."""

    ids: TableClause  # FTS rowid -> the row's id (``key``)
    key: ColumnClause[Any]
    words: TableClause  # porter-stemmed words
    trigrams: TableClause
    users: TableClause  # each user's rowid slot

    @staticmethod
    def of(corpus: Corpus) -> _Index:
        return _index(corpus.table.name)


@cache
def _index(name: str) -> _Index:
    key = "memory_id" if name == memories.name else {**KEYS, "syntheses": "synthesis_id"}[name]
    ids = table(f"{name}_fts_ids", column("rowid"), column(key))
    return _Index(ids, ids.c[key],
                  table(f"{name}_fts", column("rowid")), table(f"{name}_trgm", column("rowid")),
                  table(f"{name}_fts_users", column("slot"), column("user_id")))


# The MATCH statements are built once per shape and bound per call (``fts_user``,
# ``fts_query`` / ``t0``, ``t1``...): building them cost more than running them.

@lru_cache(maxsize=256)
def _per_term(index: _Index, terms: int) -> CTE:
    """(term number, FTS rowid) for each of ``terms`` keyword MATCHes (``t0``...)."""
    return _materialized(union_all(*(
        select(literal(i).label("term"), index.words.c.rowid)
        .where(*_matches(index, index.words, f"t{i}")) for i in range(terms))))


@cache
def _fragments(index: _Index, ranked: bool) -> CTE:
    """FTS rowids matching any trigram fragment (``fts_query``), with their overlap rank."""
    overlap: ColumnElement[float] = literal_column(f"bm25({index.trigrams.name})")
    return _materialized(
        select(index.trigrams.c.rowid, *([overlap.label("overlap")] if ranked else []))
        .where(*_matches(index, index.trigrams, "fts_query")))


class SQLiteChannels:
    def __init__(self) -> None:
        self._vectors = UserVectors()

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
        # In-process: a statement costs a hop to the driver's thread, not a network
        # round trip, and FTS5's MATCH must lead each query; two statements, each
        # carrying its own statistics.
        found: dict[str, list[tuple[Any, float]]] = {}
        if keyword_terms is not None:
            found["keyword"] = await self.keyword(conn, corpus, keyword_terms, k)
        if trigram_terms is not None:
            found["trigram"] = await self.trigram(conn, corpus, trigram_terms, k,
                                                  threshold=threshold)
        return found

    async def nearest(
        self, conn: AsyncConnection, corpus: Corpus, query: Vector | Awaitable[Vector], k: int,
        *, approximate: bool = False,
    ) -> list[tuple[Any, float]]:
        if approximate and corpus.table in (messages, passages):  # kept in memory
            return await self._vectors.nearest(conn, corpus, await awaited(query), k)
        # the user's vectors are read while the query may still be being embedded
        rows = await fetch_rows(conn, corpus, built(corpus, _vectors), corpus.params)
        return _top_k(rows, await awaited(query), k)

    async def keyword(
        self, conn: AsyncConnection, corpus: Corpus, terms: Sequence[str], k: int
    ) -> list[tuple[Any, float]]:
        if not terms:
            return []
        stmt = built(corpus, _keyword, len(terms))
        rows = await fetch_rows(conn, corpus, stmt, corpus.bind(
            fts_user=corpus.user_id,
            **{f"t{i}": fts5_or_query([term]) for i, term in enumerate(terms)}))
        if not rows:
            return []
        return bm25_rank(((row.id, row.term, row.length) for row in rows),
                         documents=rows[0].documents, average_length=rows[0].average, limit=k)

    async def trigram(
        self,
        conn: AsyncConnection,
        corpus: Corpus,
        terms: Sequence[str],
        k: int,
        *,
        threshold: float,
    ) -> list[tuple[Any, float]]:
        query = trigram_query(terms)
        if not query:
            return []
        limit = max(_CANDIDATES, 10 * k)
        bound = corpus.bind(fts_user=corpus.user_id, fts_query=query, limit=limit + 1)
        candidates = await fetch_rows(conn, corpus, built(corpus, _candidates, False), bound)
        if not candidates:
            return []
        documents = candidates[0].documents
        if len(candidates) > limit:
            # Too many to score: the best by FTS5's fragment-overlap rank. bm25() counts
            # each fragment over every user's rows, so it is only paid here.
            candidates = await fetch_rows(conn, corpus, built(corpus, _candidates, True),
                                          {**bound, "limit": limit})
        matcher = TrigramMatcher(terms)
        hits = [
            (row.id, i, similarity)
            for row in candidates
            for i, similarity in enumerate(matcher.scores(row.text, threshold))
            if similarity >= threshold
        ]
        return idf_rank(hits, documents=int(documents), limit=k)


def _vectors(corpus: Corpus) -> Select[Any]:
    """The corpus's (id, embedding): raw bytes, decoded in one go by ``_top_k`` (not one
    array per row by EmbeddingType)."""
    embedding = corpus.table.c.embedding
    return select(corpus.table.c.id, type_coerce(embedding, NullType).label("embedding")
                  ).where(*corpus.where, embedding.is_not(None))


def _keyword(corpus: Corpus, terms: int) -> Select[Any]:
    """(id, term number, length) per keyword match, with the corpus's statistics."""
    index = _Index.of(corpus)
    matched = _per_term(index, terms)
    return (select(corpus.table.c.id, matched.c.term, corpus.length.label("length"),
                   _documents(corpus), _average_length(corpus))
            .select_from(_joined(corpus, index, matched))
            .where(*corpus.where))


def _candidates(corpus: Corpus, ranked: bool) -> Select[Any]:
    """The rows sharing trigram fragments with ``fts_query`` (``limit`` of them; ``ranked``:
    the best by overlap)."""
    index = _Index.of(corpus)
    matched = _fragments(index, ranked)
    stmt = _texts(corpus, index, matched)
    if ranked:
        stmt = stmt.order_by(matched.c.overlap)
    return stmt.limit(bindparam("limit"))


def _matches(index: _Index, fts: TableClause, query: str) -> list[ColumnElement[bool]]:
    """MATCH the bound ``query``, within the user's rowid range (migration 0005): FTS5
    seeks every doclist to the range instead of walking all users' rows."""
    first = (select(index.users.c.slot.op("<<", return_type=Integer)(_SLOT_BITS))
             .where(index.users.c.user_id == bindparam("fts_user")).scalar_subquery())
    return [literal_column(fts.name).op("MATCH", return_type=Boolean)(bindparam(query)),
            fts.c.rowid.between(first, first + (1 << _SLOT_BITS) - 1)]


def _joined(corpus: Corpus, index: _Index, matched: CTE) -> Join:
    """The matches, then their ids, then their rows, in that order (``_InOrder``)."""
    return _InOrder(_InOrder(matched, index.ids, index.ids.c.rowid == matched.c.rowid),
                    corpus.table, corpus.table.c.id == index.key)


class _InOrder(Join):
    """An inner join that SQLite runs with its left side as the outer loop: ``CROSS
    JOIN ... ON``, the form SQLite's planner never reorders. Left free, it drove the
    keyword statement from the user's rows (reading every one, embedding and all, to
    look up its FTS rowid) instead of from the few matches."""

    inherit_cache = True


@compiles(_InOrder, "sqlite")
def _cross_join(join: _InOrder, compiler: Any, from_linter: Any = None, **kw: Any) -> str:
    if from_linter:  # what SQLAlchemy's own joins record, for its cartesian-product check
        from_linter.edges.update(product(join.left._from_objects, join.right._from_objects))
    kw.pop("asfrom", None)
    sides = [compiler.process(side, asfrom=True, from_linter=from_linter, **kw)
             for side in (join.left, join.right)]
    on = compiler.process(join.onclause, from_linter=from_linter, **kw)
    return f"{sides[0]} CROSS JOIN {sides[1]} ON {on}"


def _texts(corpus: Corpus, index: _Index, matched: CTE) -> Select[Any]:
    return (select(corpus.table.c.id, corpus.text.label("text"), _documents(corpus))
            .select_from(_joined(corpus, index, matched)).where(*corpus.where))


# The corpus's statistics as columns of a statement over its matches: uncorrelated,
# computed once per statement, without a round trip of their own.

def _documents(corpus: Corpus) -> ColumnElement[int]:
    if corpus.left_out is not None:
        return (_users_rows(corpus, func.count()) - _left_out_rows(corpus, func.count())
                ).label("documents")
    return (select(func.count()).where(*corpus.where).correlate(None).scalar_subquery()
            .label("documents"))


def _average_length(corpus: Corpus) -> ColumnElement[float]:
    if corpus.left_out is not None:
        total: ColumnElement[float] = func.total(corpus.length)
        count: ColumnElement[int] = func.count()
        average: ColumnElement[Any] = (
            (_users_rows(corpus, total) - _left_out_rows(corpus, total))
            / func.nullif(_users_rows(corpus, count) - _left_out_rows(corpus, count), 0))
        return average.label("average")
    return (select(func.avg(corpus.length)).where(*corpus.where).correlate(None)
            .scalar_subquery().label("average"))


def _users_rows(corpus: Corpus, aggregate: ColumnElement[Any]) -> ColumnElement[Any]:
    """``aggregate`` over the user's rows (an index holds what it reads)."""
    table = corpus.table
    return (select(aggregate).where(table.c.user_id == bindparam("corpus_user"))
            .correlate(None).scalar_subquery())


def _left_out_rows(corpus: Corpus, aggregate: ColumnElement[Any]) -> ColumnElement[Any]:
    """``aggregate`` over the user's rows the corpus leaves out (``Corpus.left_out``),
    found by id (with the user's condition SQLite read every row of the user's index)."""
    return (select(aggregate).where(corpus.table.c.id.in_(corpus.left_out))
            .correlate(None).scalar_subquery())


def _materialized(query: Select[Any] | CompoundSelect[Any]) -> CTE:
    """The index lookup first: joined directly, SQLite would drive from the user's
    rows and re-run the MATCH once per row."""
    return query.cte("matched").prefix_with("MATERIALIZED")


def _top_k(rows: Sequence[Any], query: Vector, k: int) -> list[tuple[Any, float]]:
    """Exact cosine top-k over (id, normalised embedding as float32 bytes) rows, best first,
    ties by id (as ``sqlite_vectors`` ranks them)."""
    if not rows:
        return []
    vectors = np.frombuffer(b"".join(row.embedding for row in rows), dtype=np.float32)
    # einsum, not ``@``: past a few thousand rows ``@`` hands the product to OpenBLAS's
    # threads, which then spin for milliseconds on every core after a product that takes
    # a fraction of one (at 5,000 past messages a user, ~40 ms of CPU a get_context)
    scores = np.einsum("ij,j->i", vectors.reshape(len(rows), -1),
                       np.asarray(query, dtype=np.float32))
    ids = np.asarray([row.id for row in rows])
    return [(rows[i].id, float(scores[i])) for i in np.lexsort((ids, -scores))[:k]]
