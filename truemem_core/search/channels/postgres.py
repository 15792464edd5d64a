"""PostgreSQL + pgvector + pg_trgm: per-user scans, one statement per channel.

A user has at most a few hundred memories, so the btree on ``user_id`` narrows every
scan: an exact ``ORDER BY embedding <=> q`` is sub-millisecond. A user's past
messages grow with the history: by default (``exact_recall`` off) a user with many
is searched by an HNSW index with pgvector's iterative scan (``_nearest_indexed``;
docs/search.md says why). The lexical channels test the user's rows the same way, in forms no
index can serve (``ts_match_vq`` rather than ``@@``, ``word_similarity`` rather
than ``<%``): a GIN index scan walks every user's matches for a term, which at
1.5 M rows took keyword searches to 124 ms. Migration 0006 drops the GIN
indexes of 0002 for that reason. Instead, a memory's trigram signature (migration
0013) rules out most (memory, term) pairs before ``word_similarity`` scores them.

``ts_rank`` and ``word_similarity`` ignore how common a term is, so the
lexical channels fetch which memory matches which query term and rank them
with this user's statistics (``search.scoring``), exactly
as the SQLite backend does. Both channels and the statistics they need are one
statement (``lexical``); each channel alone is that statement with one part.
"""

from __future__ import annotations

from collections.abc import Awaitable, Sequence
from typing import Any

from sqlalchemy import (
    CTE,
    BigInteger,
    ColumnElement,
    CompoundSelect,
    Float,
    Integer,
    Numeric,
    Select,
    Subquery,
    Text,
    and_,
    bindparam,
    case,
    cast,
    exists,
    func,
    literal,
    literal_column,
    null,
    select,
    true,
    union_all,
)
from sqlalchemy.dialects.postgresql import ARRAY, REAL, TSQUERY
from sqlalchemy.ext.asyncio import AsyncConnection
from sqlalchemy.types import TypeEngine

from truemem_core.embeddings import Vector
from truemem_core.search.channels import Corpus, awaited, built, fetch_rows
from truemem_core.search.scoring import bm25_rank, idf_rank
from truemem_core.storage import vector_indexes
from truemem_core.storage.schema import EmbeddingType, memories

_LANGUAGES = ("english", "spanish")  # as in the search_vector columns (migrations 0002, 0008)
_SLACK = 1e-6  # under the trigram threshold: a float4 similarity on it may round up to it
_SCANNED = 20_000
INDEXED_FROM = 1000
"""Rows of a user's from which past messages (passages) are searched by the HNSW index."""


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
        self, conn: AsyncConnection, corpus: Corpus, query: Vector | Awaitable[Vector], k: int,
        *, approximate: bool = False,
    ) -> list[tuple[Any, float]]:
        vector = await awaited(query)  # the statement needs it
        bound = corpus.bind(query=vector, k=k)
        if approximate and corpus.table in vector_indexes.TABLES:
            indexed = built(corpus, _nearest_indexed, len(vector))
            found = [(row.id, float(row.score)) for row in await fetch_rows(
                conn, corpus, indexed, {**bound, "indexed_from": INDEXED_FROM})]
            if len(found) >= k:  # in relaxed order: ranked here, ties by id as below
                return sorted(found, key=lambda hit: (-hit[1], hit[0]))
            # fewer: a small corpus, or the index scan gave up (see ``_nearest_indexed``)
        stmt = built(corpus, _nearest)
        return [(row.id, float(row.score)) for row in await fetch_rows(conn, corpus, stmt, bound)]

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
        with_trigrams = trigram_terms is not None
        params = corpus.bind(keywords=keyword, **(
            {"trigrams": trigram, "threshold": threshold} if with_trigrams else {}))
        documents, average = 0, None
        words: list[tuple[Any, int, int]] = []
        fuzzy: list[tuple[Any, int, float]] = []
        for row in await fetch_rows(conn, corpus, built(corpus, _lexical, with_trigrams), params):
            if row.channel == 0:
                documents, average = int(row.documents), row.average
            elif row.channel == 1:
                words.append((row.id, row.term, row.length))
            else:
                fuzzy.append((row.id, row.term, row.value))
        words.sort()  # the ranking sums floats: in one order, whatever the plan's
        fuzzy.sort()
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
            .order_by(distance, corpus.table.c.id)
            .limit(bindparam("k")))


def _nearest_indexed(corpus: Corpus, dimension: int) -> CompoundSelect[Any]:
    """``_nearest``, by the corpus's HNSW index (``storage.vector_indexes``) when the
    user has ``INDEXED_FROM`` rows or more, exactly below (as cheap, and an index
    search for a user with few rows of a large table walks mostly other users' rows).

    The table's rows are taken from the index in about their order of distance, the
    scan going on (pgvector's iterative scan, ``dialects.VECTOR_SEARCH``) until ``k`` of
    them pass the corpus's conditions, or ``hnsw.max_scan_tuples`` were read: a user with
    a small share of a very large table may then get fewer, and ``nearest`` searches
    exactly. The conditions are a column of the ordered rows, tested outside them
    (the inner ``LIMIT`` keeps PostgreSQL from moving them in): statements are planned
    once for any user (``dialects.GENERIC_PLANS``), with the table's average rows per
    user, and with the user's condition beside the order the planner read a large
    user's rows from the user_id index and sorted them all. The limit is as far as
    pgvector's scan goes by default (``hnsw.max_scan_tuples``); written as a number,
    it tells the planner how many rows the conditions are tested on at most, which
    kept it from hashing every passage of the store to test "searched by passages"."""
    table = corpus.table
    vector = bindparam("query", type_=EmbeddingType())
    mine = table.c.user_id == bindparam("corpus_user")
    many = exists(select(literal(1)).where(mine)
                  .offset(bindparam("indexed_from", type_=Integer) - 1).limit(1))
    distance = literal_column(vector_indexes.indexed(table, dimension)).op(
        "<=>", return_type=Float)(vector)
    ordered = (select(table.c.id, distance.label("distance"),
                      and_(*corpus.where).label("passes"))
               .where(table.c.embedding.is_not(None))
               .order_by(distance).limit(_SCANNED).subquery("ordered"))
    indexed = (select(ordered.c.id, (1 - ordered.c.distance).label("score"))
               .where(many, ordered.c.passes).limit(bindparam("k")))
    exact = _nearest(corpus).where(~many)
    return union_all(exact.subquery().select(), indexed.subquery().select())


def _lexical(corpus: Corpus, with_trigrams: bool) -> CompoundSelect[Any]:
    """One row of statistics, then one row per (channel, matching row, term): keyword
    matches with the row's length, and ``with_trigrams`` the trigram similarities of at
    least ``threshold``. The terms are bound as arrays (``keywords``, ``trigrams``, either may
    be empty), so the statement is the same for any query: psycopg prepares it once per
    connection, and PostgreSQL plans it once instead of on every call with a new number
    of terms. Without trigrams no text is read but for its length, and a message's
    length is a stored count (``Corpus.length``): conversation recall reads no text.

    The user's rows are read once (a materialised CTE), not once per part: they lie on
    about as many heap pages as there are rows, since users' writes interleave. Each
    keyword is parsed into a tsquery once (its own CTE), not once per row.
    ts_match_vq is what `@@` calls; as a function the planner cannot answer it from a GIN
    index (whose scan walks every user's matches), so the user_id index leads. Every row
    of the user's is scored by word_similarity, not `term <% text`: with that, the planner
    would AND the user_id index with the GIN trigram index."""
    signed = with_trigrams and corpus.table is memories  # see ``_similarities``
    rows = select(
        corpus.table.c.id, corpus.length.label("length"),
        literal_column(f"{corpus.table.name}.search_vector").label("search_vector"),
        *([corpus.text.label("text")] if with_trigrams else []),
        *([literal_column("memories.trigram_signature").label("signature")] if signed else []),
    ).where(*corpus.where).cte("corpus_rows").prefix_with("MATERIALIZED")
    keywords = _terms("keywords")
    parsed = select((keywords.c.n - 1).label("term"), _tsquery(keywords.c.term).label("query")
                    ).cte("keyword_queries").prefix_with("MATERIALIZED")
    # Past messages, whose number grows with the history, are tested once against all
    # the terms and the few that match against each (``_any_of``); a user's memories
    # (a few hundred at most) are tested per term, which costs them less.
    matching = rows if corpus.table is memories else select(
        rows.c.id, rows.c.length, rows.c.search_vector,
    ).where(func.ts_match_vq(rows.c.search_vector, _any_of(parsed))
            ).cte("keyword_rows").prefix_with("MATERIALIZED")
    parts = [
        _part(0, corpus, documents=func.count(), average=func.avg(rows.c.length))
        .select_from(rows),
        _part(1, corpus, id=matching.c.id, term=parsed.c.term, length=matching.c.length)
        .select_from(matching.join(
            parsed, func.ts_match_vq(matching.c.search_vector, parsed.c.query))),
    ]
    if with_trigrams:
        similarities = _similarities(rows, signed)
        parts.append(
            _part(2, corpus, id=similarities.c.id, term=similarities.c.term,
                  value=similarities.c.value)
            .where(similarities.c.value >= bindparam("threshold", type_=Float)))
    return union_all(*parts)


def _any_of(parsed: CTE) -> ColumnElement[Any]:
    """The keyword queries OR-ed into one, through its text form, which PostgreSQL reads
    back as the same query (a term of stop words only parses to nothing and is left out).
    A row matches it if it matches any term: most match none, and testing each of 5,000
    past messages against every term was most of a long history's keyword statement."""
    text = func.string_agg(literal("(") + cast(parsed.c.query, Text) + literal(")"),
                           literal(" | "))
    # cast inside the subquery: outside, the text would be parsed again for every row
    return select(cast(text, TSQUERY)).where(func.numnode(parsed.c.query) > 0
                                              ).scalar_subquery()


def _similarities(rows: CTE, signed: bool) -> Subquery:
    """``word_similarity`` of each (row, trigram term); ``signed``: only where the row's
    ``signature`` allows the threshold, NULL elsewhere.

    ``word_similarity`` builds and sorts the text's trigrams on every call: scoring
    150 memories against four terms was most of the database's work on a chat's
    path. A memory's signature (migration 0013) has bit ``h(t)``
    set for each trigram ``t`` of its text. For a term of ``size`` distinct trigrams,
    pg_trgm's similarity is ``c / (size + e - c)``, ``c`` the term's trigrams found in
    the best extent of ``e`` trigrams (``e >= c``), so it reaches the threshold only if
    ``c >= threshold * size``. The term's trigrams present in the text are at most the
    bits its ``mask`` shares with the signature, plus the trigrams whose bits collide
    within the mask (``size - bit_count(mask)``): where even that is short, the term
    cannot match and is not scored (about seven pairs in eight). The test is a CASE,
    not an AND beside the score's: PostgreSQL may evaluate an AND's conditions in any
    order, and there it scored every pair first."""
    trigrams = _terms("trigrams")
    if not signed:
        return select(rows.c.id, (trigrams.c.n - 1).label("term"),
                      func.word_similarity(trigrams.c.term, rows.c.text).label("value"),
                      ).select_from(rows.join(trigrams, true())).subquery("similarities")
    mask = func.truemem_trigram_signature(trigrams.c.term)
    size = func.cardinality(func.show_trgm(trigrams.c.term))
    queries = select(
        (trigrams.c.n - 1).label("term"), trigrams.c.term.label("text"), mask.label("mask"),
        # the least bit_count(signature & mask) that can reach the threshold
        (size * (bindparam("threshold", type_=Float) - _SLACK) - size
         + func.bit_count(mask)).label("least"),
    ).cte("trigram_queries").prefix_with("MATERIALIZED")
    possible = func.bit_count(rows.c.signature.op("&")(queries.c.mask)) >= queries.c.least
    return select(rows.c.id, queries.c.term, case(
        (possible, func.word_similarity(queries.c.text, rows.c.text))).label("value"),
    ).select_from(rows.join(queries, true())).subquery("similarities")


def _terms(name: str) -> Any:
    """The array bound as ``name``, as rows (term, n), n counting from 1."""
    return func.unnest(bindparam(name, type_=ARRAY(Text))).table_valued(
        "term", with_ordinality="n").render_derived()


# lexical's columns but the id, and the type of each one's NULL in the branches without
# it (PostgreSQL cannot type a UNION of untyped NULLs with, say, a REAL)
_COLUMNS: dict[str, TypeEngine[Any]] = {
    "term": BigInteger(), "length": Integer(), "value": REAL(), "documents": BigInteger(),
    "average": Numeric()}


def _part(channel: int, corpus: Corpus, **columns: ColumnElement[Any]) -> Select[Any]:
    """One branch of ``lexical``'s UNION ALL: its channel and its columns, NULL elsewhere."""
    types = {"id": corpus.table.c.id.type, **_COLUMNS}
    return select(literal(channel).label("channel"), *(
        (columns[name] if name in columns else cast(null(), kind)).label(name)
        for name, kind in types.items()))
