"""The adjacent channel: rows recorded next to the best hits, where the answer often sits.

Memories are recorded from conversations and messages are turns of one, so
what sits next to a match is often the answer itself ("We had the ceremony
last week" next to "We found a lovely greenhouse venue"; the reply right after
the question). It is the window expansion RAG systems apply to document chunks,
in time instead of text:

* a memory's adjacent rows are the ``adjacent_span`` memories in the corpus
  recorded just before and just after it (ties in time broken by id), within
  ``adjacent_window_s``;
* a message's adjacent rows are the ``adjacent_span`` messages of its session in
  the corpus just before and just after it.

Each adjacent row scores its best seed's fused score.

The same statement reads the rows a search will return (``rows_of``, with the
adjacent rows' own): once the query is embedded, a search then costs two round trips,
the vector channel and this.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta
from typing import Any, NamedTuple

from sqlalchemy import (
    CTE,
    ColumnElement,
    CompoundSelect,
    Integer,
    Select,
    and_,
    bindparam,
    select,
    true,
    tuple_,
    union,
    union_all,
)
from sqlalchemy.ext.asyncio import AsyncConnection

from truemem_core.search.channels import Corpus, built, fetch_rows, one_of
from truemem_core.search.fusion import Fused, Key, Ranking
from truemem_core.settings import Settings
from truemem_core.storage.schema import memories


class Around(NamedTuple):
    ranking: Ranking
    """The seeds' adjacent rows, scored by their best seed's fused score, best first."""
    rows: dict[Key, Any]
    """id -> row (``columns``) of each ``rows_of`` id and each adjacent row."""


async def adjacent(
    conn: AsyncConnection, corpus: Corpus, seeds: Sequence[Fused], settings: Settings, *,
    rows_of: Sequence[Key] = (), columns: Sequence[ColumnElement[Any]] = (),
) -> Around:
    """The seeds' adjacent rows and, in the same statement, the rows of ``rows_of`` and of
    the adjacent rows (their ``columns``; none unless asked)."""
    if settings.adjacent_span < 1:
        seeds = []
    if not seeds and not (columns and rows_of):
        return Around([], {})
    score = {seed.id: seed.score for seed in seeds}
    params = corpus.bind(seed_ids=list(score), span=settings.adjacent_span)
    window = (timedelta(seconds=settings.adjacent_window_s) if corpus.table is memories
              else None)
    dialect = conn.dialect.name
    statement: Select[Any] | CompoundSelect[Any]
    if columns:  # without seeds, a plain read of the rows
        statement = (built(corpus, _pairs_and_rows, dialect, tuple(columns)) if seeds
                     else built(corpus, _rows, tuple(columns)))
        params["rows_of"] = list(rows_of)
    else:
        statement = built(corpus, _pairs, dialect)
    best: dict[Key, float] = {}
    rows: dict[Key, Any] = {}
    for row in await fetch_rows(conn, corpus, statement, params):
        if columns:
            rows[row.id] = row
            if not seeds or row.adjacent_to is None:
                continue
            row = _Pair(row.adjacent_to, row.adjacent_to_place, row.id, row.adjacent_place)
        if window is None or abs(row.place - row.seed_place) <= window:
            best[row.id] = max(best.get(row.id, 0.0), score[row.seed])
    return Around(sorted(best.items(), key=lambda item: (-item[1], str(item[0]))), rows)


class _Pair(NamedTuple):
    seed: Key
    seed_place: Any
    id: Key
    place: Any


def _pairs(corpus: Corpus, dialect: str) -> CompoundSelect[Any]:
    """(seed, seed_place, id, place): each seed (``seed_ids``) with the ``span`` rows of
    the corpus just before it and the ``span`` just after it, in order: by (time, id) for
    memories (the caller keeps those within the window), by id within the seed's session
    for messages.

    Each side is an index seek from the seed that stops after ``span`` rows: the cost is
    the seeds' and the span's, not the length of the user's timeline or sessions
    (numbering the timeline instead reads every row of it: with long conversations,
    most of a search's work)."""
    table = corpus.table
    timed = table is memories
    place = table.c.created_at if timed else table.c.session_id
    seeds = select(table.c.id, place.label("place")).where(
        *corpus.where, one_of(table.c.id, "seed_ids")).cte("seeds")
    span = bindparam("span", type_=Integer)
    sides = []
    for before in (True, False):
        order: tuple[ColumnElement[Any], ...]
        if timed:  # ties in time go by id in code-point order, on PostgreSQL too
            order = (table.c.created_at, _by_code_point(table.c.id, dialect))
            after_seed = (seeds.c.place, _by_code_point(seeds.c.id, dialect))
            beyond = (tuple_(*order) < tuple_(*after_seed) if before
                      else tuple_(*order) > tuple_(*after_seed))
        else:
            order = (table.c.id,)
            beyond = and_(table.c.session_id == seeds.c.place,
                          table.c.id < seeds.c.id if before else table.c.id > seeds.c.id)
        nearest = (select(table.c.id, place.label("place")).where(*corpus.where, beyond)
                   .order_by(*(column.desc() if before else column for column in order))
                   .limit(span))
        sides.append(_each_seed(seeds, nearest, dialect))
    return union_all(*sides)


def _each_seed(seeds: CTE, nearest: Select[Any], dialect: str) -> Select[Any]:
    """The rows ``nearest`` (correlated with ``seeds``) gives for each seed: a LATERAL
    join on PostgreSQL; on SQLite, which has none, each seed's ids found by a correlated
    ``IN`` (already the user's), each a seek on the primary key."""
    if dialect == "postgresql":
        near = nearest.correlate(seeds).lateral("near")
        return (select(seeds.c.id.label("seed"), seeds.c.place.label("seed_place"),
                       near.c.id, near.c.place)
                .select_from(seeds.join(near, true())))
    table = nearest.selected_columns.id.table
    ids = nearest.with_only_columns(table.c.id).correlate(seeds).scalar_subquery()
    near_place = nearest.selected_columns.place
    near = table.alias("near")
    return (select(seeds.c.id.label("seed"), seeds.c.place.label("seed_place"),
                   near.c.id, near.corresponding_column(near_place).label("place"))
            .select_from(seeds.join(near, near.c.id.in_(ids))))


def _by_code_point(column: ColumnElement[Any], dialect: str) -> ColumnElement[Any]:
    return column.collate("C") if dialect == "postgresql" else column


def _rows(corpus: Corpus, columns: tuple[ColumnElement[Any], ...]) -> Select[Any]:
    """``columns`` of the rows ``rows_of`` (the user's)."""
    table = corpus.table
    return select(*columns).where(table.c.user_id == bindparam("corpus_user"),
                                  one_of(table.c.id, "rows_of"))


def _pairs_and_rows(
    corpus: Corpus, dialect: str, columns: tuple[ColumnElement[Any], ...]
) -> Select[Any]:
    """``columns`` of the rows ``rows_of`` and of the seeds' adjacent rows, each
    once per seed it is next to (``adjacent_to``, ``adjacent_to_place``,
    ``adjacent_place``; NULL on a row adjacent to no seed)."""
    table = corpus.table
    pairs = _pairs(corpus, dialect).cte("pairs")
    wanted = union(select(pairs.c.id), _rows(corpus, (table.c.id,))).cte("wanted")
    mine = table.c.user_id == bindparam("corpus_user")
    return (select(*columns, pairs.c.seed.label("adjacent_to"),
                   pairs.c.seed_place.label("adjacent_to_place"),
                   pairs.c.place.label("adjacent_place"))
            .select_from(table.join(wanted, wanted.c.id == table.c.id)
                         .outerjoin(pairs, pairs.c.id == table.c.id))
            .where(mine))
