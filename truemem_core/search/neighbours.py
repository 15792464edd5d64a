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

from sqlalchemy import select
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
    # the row's place: memories on one timeline, messages in their session's order
    place = (table.c.created_at,) if table is memories else (table.c.session_id,)
    found = await conn.execute(
        select(table.c.id, *place).where(*corpus.where, table.c.id.in_([s.id for s in seeds])))
    where = {row.id: (row[1], row.id) for row in found}
    if not where:
        return []
    if table is memories:
        window = timedelta(seconds=settings.neighbour_window_s)
        earliest, latest = min(where.values())[0], max(where.values())[0]
        nearby = select(table.c.created_at, table.c.id).where(
            *corpus.where, table.c.created_at >= earliest - window,
            table.c.created_at <= latest + window)
    else:
        window = None
        nearby = select(table.c.session_id, table.c.id).where(
            *corpus.where, table.c.session_id.in_({at for at, _ in where.values()}))
    timeline = sorted((row[0], row[1]) for row in await conn.execute(nearby))
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
