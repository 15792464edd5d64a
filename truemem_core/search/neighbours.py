"""The neighbours channel: rows next to the best hits, where the answer often sits.

Memories are recorded from conversations and messages are turns of one, so
what sits next to a match is often the answer itself ("We had the ceremony
last week" next to "We found a lovely greenhouse venue"; the reply right after
the question). It is the window expansion RAG systems apply to document chunks,
in time instead of text:

* a memory's neighbours are the ``neighbour_span`` memories in the corpus
  recorded just before and just after it (ties in time broken by id), within
  ``neighbour_window_s``;
* a message's neighbours are the ``neighbour_span`` messages of its session in
  the corpus just before and just after it.

Each neighbour scores its best seed's fused score.

The same statement reads the rows a search will return (``rows_of``, with the
neighbours' own): once the query is embedded, a search then costs two round trips,
the vector channel and this.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from datetime import timedelta
from typing import Any, NamedTuple

from sqlalchemy import ColumnElement, Integer, Select, and_, bindparam, func, select, union
from sqlalchemy.ext.asyncio import AsyncConnection

from truemem_core.search.channels import Corpus, built, ids_in
from truemem_core.search.fusion import Fused, Key, Ranking
from truemem_core.settings import Settings
from truemem_core.storage.schema import memories


class Around(NamedTuple):
    ranking: Ranking
    """The seeds' neighbours, scored by their best seed's fused score, best first."""
    rows: dict[Key, Any]
    """id -> row (``columns``) of each ``rows_of`` id and each neighbour."""


async def neighbours(
    conn: AsyncConnection, corpus: Corpus, seeds: Sequence[Fused], settings: Settings, *,
    rows_of: Sequence[Key] = (), columns: Sequence[ColumnElement[Any]] = (),
) -> Around:
    """The seeds' neighbours and, in the same statement, the rows of ``rows_of`` and of
    the neighbours (their ``columns``; none unless asked)."""
    if settings.neighbour_span < 1:
        seeds = []
    if not seeds and not (columns and rows_of):
        return Around([], {})
    score = {seed.id: seed.score for seed in seeds}
    params = corpus.bind(seed_ids=list(score), span=settings.neighbour_span)
    window = None
    if corpus.table is memories:
        window = timedelta(seconds=settings.neighbour_window_s)
        margin = math.ceil(settings.neighbour_window_s) + 1  # datetime() drops fractions
        params |= {"margin_before": -margin, "margin_after": margin}
    dialect = conn.dialect.name
    if columns:  # without seeds, a plain read of the rows
        statement = (built(corpus, _pairs_and_rows, dialect, tuple(columns)) if seeds
                     else built(corpus, _rows, tuple(columns)))
        params["rows_of"] = list(rows_of)
    else:
        statement = built(corpus, _pairs, dialect)
    best: dict[Key, float] = {}
    rows: dict[Key, Any] = {}
    for row in await conn.execute(statement, params):
        if columns:
            rows[row.id] = row
            if not seeds or row.neighbour_of is None:
                continue
            row = _Pair(row.neighbour_of, row.neighbour_of_place, row.id, row.neighbour_place)
        if window is None or abs(row.place - row.seed_place) <= window:
            best[row.id] = max(best.get(row.id, 0.0), score[row.seed])
    return Around(sorted(best.items(), key=lambda item: (-item[1], str(item[0]))), rows)


class _Pair(NamedTuple):
    seed: Key
    seed_place: Any
    id: Key
    place: Any


def _pairs(corpus: Corpus, dialect: str) -> Select[Any]:
    """(seed, seed_place, id, place): each seed (``seed_ids``) with the rows up to
    ``span`` places before and after it, in one statement that returns only those.

    The rows are numbered in order within the part of the corpus that can hold a
    neighbour: for memories, by (time, id) between ``margin_before`` seconds before the
    earliest seed and ``margin_after`` after the latest (the caller keeps those within
    the exact window); for messages, by id within each of the seeds' sessions.
    """
    table = corpus.table
    seeds = ids_in(table.c.id, "seed_ids")
    if table is memories:
        at = table.c.created_at
        seeds_at = select(at).where(*corpus.where, seeds)
        earliest = seeds_at.with_only_columns(func.min(at)).correlate(None).scalar_subquery()
        latest = seeds_at.with_only_columns(func.max(at)).correlate(None).scalar_subquery()
        # ties in time go by id in code-point order, on PostgreSQL too (not its locale's)
        by_id = table.c.id.collate("C") if dialect == "postgresql" else table.c.id
        timeline = select(at.label("place"), table.c.id,
                          func.row_number().over(order_by=(at, by_id)).label("pos")).where(
            *corpus.where, at >= _shifted(earliest, "margin_before", dialect),
            at <= _shifted(latest, "margin_after", dialect)).cte("timeline")
    else:
        sessions = (select(table.c.session_id).where(*corpus.where, seeds)
                    .correlate(None).scalar_subquery())
        timeline = select(
            table.c.session_id.label("place"), table.c.id,
            func.row_number().over(partition_by=table.c.session_id, order_by=table.c.id
                                   ).label("pos"),
        ).where(*corpus.where, table.c.session_id.in_(sessions)).cte("timeline")
    seed, near = timeline.alias("seed"), timeline.alias("near")
    span = bindparam("span", type_=Integer)
    around = [near.c.pos.between(seed.c.pos - span, seed.c.pos + span), near.c.pos != seed.c.pos]
    if table is not memories:
        around.append(near.c.place == seed.c.place)  # numbered per session
    return (select(seed.c.id.label("seed"), seed.c.place.label("seed_place"), near.c.id,
                   near.c.place)
            .select_from(seed.join(near, and_(*around)))
            .where(ids_in(seed.c.id, "seed_ids")))


def _rows(corpus: Corpus, columns: tuple[ColumnElement[Any], ...]) -> Select[Any]:
    """``columns`` of the rows ``rows_of`` (the user's)."""
    table = corpus.table
    return select(*columns).where(table.c.user_id == bindparam("corpus_user"),
                                  ids_in(table.c.id, "rows_of"))


def _pairs_and_rows(
    corpus: Corpus, dialect: str, columns: tuple[ColumnElement[Any], ...]
) -> Select[Any]:
    """``columns`` of the rows ``rows_of`` and of the seeds' neighbours, each neighbour
    once per seed it is near (``neighbour_of``, ``neighbour_of_place``,
    ``neighbour_place``; NULL on a row that is no neighbour)."""
    table = corpus.table
    pairs = _pairs(corpus, dialect).cte("pairs")
    wanted = union(select(pairs.c.id), _rows(corpus, (table.c.id,))).cte("wanted")
    mine = table.c.user_id == bindparam("corpus_user")
    return (select(*columns, pairs.c.seed.label("neighbour_of"),
                   pairs.c.seed_place.label("neighbour_of_place"),
                   pairs.c.place.label("neighbour_place"))
            .select_from(table.join(wanted, wanted.c.id == table.c.id)
                         .outerjoin(pairs, pairs.c.id == table.c.id))
            .where(mine))


def _shifted(moment: ColumnElement[Any], seconds: str, dialect: str) -> ColumnElement[Any]:
    """``moment`` moved by the whole seconds bound as ``seconds``, in the database's
    date arithmetic."""
    if dialect == "postgresql":
        return moment + func.make_interval(0, 0, 0, 0, 0, 0, bindparam(seconds, type_=Integer))
    return func.datetime(moment, func.printf("%+d seconds", bindparam(seconds, type_=Integer)))
