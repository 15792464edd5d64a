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

from bisect import bisect_left, bisect_right
from collections.abc import Sequence
from datetime import timedelta
from typing import Any

from sqlalchemy import ColumnElement, and_, func, select
from sqlalchemy.ext.asyncio import AsyncConnection

from truemem_core.search.channels import Corpus
from truemem_core.search.fusion import Fused, Key, Ranking
from truemem_core.settings import Settings
from truemem_core.storage.schema import memories


async def neighbours(
    conn: AsyncConnection, corpus: Corpus, seeds: Sequence[Fused], settings: Settings
) -> Ranking:
    """The seeds' neighbours, scored by their best seed's fused score, best first."""
    if not seeds:
        return []
    table = corpus.table
    ids = [s.id for s in seeds]
    span = settings.neighbour_span
    # One statement returns the seeds and the ``span`` rows on each side of each: the
    # corpus numbered in timeline order (for messages, only the seeds' sessions), the
    # rows whose number is within ``span`` of a seed's. ``_around`` then reads the same
    # neighbours from these rows as from the whole timeline, and applies the window.
    partition: tuple[ColumnElement[Any], ...] = ()
    order: tuple[ColumnElement[Any], ...]
    if table is memories:
        window: timedelta | None = timedelta(seconds=settings.neighbour_window_s)
        place, scope = table.c.created_at, corpus.where
        # ties in time are broken by id in the code-point order Python sorts by
        key = table.c.id.collate("C") if conn.dialect.name == "postgresql" else table.c.id
        order = (place, key)
    else:
        window = None
        sessions = (select(table.c.session_id).where(*corpus.where, table.c.id.in_(ids))
                    .correlate(None).scalar_subquery())
        place, partition = table.c.session_id, (table.c.session_id,)
        scope, order = (*corpus.where, table.c.session_id.in_(sessions)), (table.c.id,)
    numbered = select(place.label("place"), table.c.id, func.row_number().over(
        partition_by=partition or None, order_by=order).label("n")).where(*scope).cte("numbered")
    picked = select(numbered.c.place, numbered.c.n).where(numbered.c.id.in_(ids)).cte("picked")
    nearby = select(numbered.c.place, numbered.c.id).distinct().select_from(numbered.join(
        picked, and_(numbered.c.n.between(picked.c.n - span, picked.c.n + span),
                     *((numbered.c.place == picked.c.place,) if partition else ()))))
    timeline = sorted((row[0], row[1]) for row in await conn.execute(nearby))
    chosen = set(ids)
    where = {key: (at, key) for at, key in timeline if key in chosen}
    best: dict[Key, float] = {}
    for seed in seeds:
        if seed.id in where:
            for neighbour in _around(timeline, where[seed.id], settings.neighbour_span, window):
                best[neighbour] = max(best.get(neighbour, 0.0), seed.score)
    return sorted(best.items(), key=lambda item: (-item[1], str(item[0])))


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
