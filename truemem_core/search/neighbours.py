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
"""

from __future__ import annotations

import math
from bisect import bisect_left, bisect_right
from collections.abc import Sequence
from datetime import timedelta
from typing import Any

from sqlalchemy import ColumnElement, Integer, Select, bindparam, func, select
from sqlalchemy.ext.asyncio import AsyncConnection

from truemem_core.search.channels import Corpus, built
from truemem_core.search.fusion import Fused, Key, Ranking
from truemem_core.settings import Settings
from truemem_core.storage.schema import memories


async def neighbours(
    conn: AsyncConnection, corpus: Corpus, seeds: Sequence[Fused], settings: Settings
) -> Ranking:
    """The seeds' neighbours, scored by their best seed's fused score, best first."""
    if not seeds:
        return []
    ids = [s.id for s in seeds]
    window = (timedelta(seconds=settings.neighbour_window_s) if corpus.table is memories
              else None)
    dialect = conn.dialect.name
    stmt = built(corpus, _nearby, dialect)
    params = corpus.bind(seed_ids=ids)
    if window is not None:
        margin = math.ceil(settings.neighbour_window_s) + 1  # datetime() drops fractions
        params |= {"margin_before": -margin, "margin_after": margin}
    timeline = sorted((row[0], row[1]) for row in await conn.execute(stmt, params))
    chosen = set(ids)
    where = {key: (place, key) for place, key in timeline if key in chosen}
    best: dict[Key, float] = {}
    for seed in seeds:
        if seed.id in where:
            for neighbour in _around(timeline, where[seed.id], settings.neighbour_span, window):
                best[neighbour] = max(best.get(neighbour, 0.0), seed.score)
    return sorted(best.items(), key=lambda item: (-item[1], str(item[0])))


def _nearby(corpus: Corpus, dialect: str) -> Select[Any]:
    """(place, id) of the rows around the seeds (``seed_ids``): a superset, from which
    ``_around`` keeps the exact window and the seeds' own places are read. Memories
    are placed by time (within ``margin_before`` / ``margin_after`` seconds of the
    earliest / latest seed), messages by session."""
    table = corpus.table
    seeds = table.c.id.in_(bindparam("seed_ids", expanding=True))
    if table is memories:
        at = table.c.created_at
        seeds_at = select(at).where(*corpus.where, seeds)
        earliest = seeds_at.with_only_columns(func.min(at)).correlate(None).scalar_subquery()
        latest = seeds_at.with_only_columns(func.max(at)).correlate(None).scalar_subquery()
        return select(at, table.c.id).where(
            *corpus.where, at >= _shifted(earliest, "margin_before", dialect),
            at <= _shifted(latest, "margin_after", dialect))
    sessions = (select(table.c.session_id).where(*corpus.where, seeds)
                .correlate(None).scalar_subquery())
    return select(table.c.session_id, table.c.id).where(
        *corpus.where, table.c.session_id.in_(sessions))


def _shifted(moment: ColumnElement[Any], seconds: str, dialect: str) -> ColumnElement[Any]:
    """``moment`` moved by the whole seconds bound as ``seconds``, in the database's
    date arithmetic."""
    if dialect == "postgresql":
        return moment + func.make_interval(0, 0, 0, 0, 0, 0, bindparam(seconds, type_=Integer))
    return func.datetime(moment, func.printf("%+d seconds", bindparam(seconds, type_=Integer)))


def _around(
    timeline: Sequence[tuple[Any, Key]], seed: tuple[Any, Key], span: int,
    window: timedelta | None,
) -> list[Key]:
    """Up to ``span`` ids on each side of ``seed`` in the sorted timeline: within
    ``window`` of it in time, or (no window) in the same session."""
    at = seed[0]

    def near(other: Any) -> bool:
        return bool(abs(other - at) <= window) if window is not None else bool(other == at)

    before_end = bisect_left(timeline, seed)  # the seed itself sits between
    after_start = bisect_right(timeline, seed)
    return [i for t, i in (*timeline[max(0, before_end - span):before_end],
                           *timeline[after_start:after_start + span]) if near(t)]
