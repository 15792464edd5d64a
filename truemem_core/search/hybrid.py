"""Search over one user's memories: run the channels the mode asks for, then fuse.

``mode="hybrid"`` (the default):

1. vector, keyword and trigram each rank the user's memories; the top
   ``rrf_depth`` of each enter Reciprocal Rank Fusion (channels of weight 0
   are not run);
2. neighbours: the memories recorded just before and after the ``neighbour_seeds``
   best fused hits (``neighbour_span`` on each side, within
   ``neighbour_window_s``) form a fourth ranked list, and the fusion runs again;
   a memory reached this way never climbs above the hit that brought it.
   Memories are recorded from conversations, so what was said next to a
   matching memory is often the answer itself ("We had the ceremony last
   week" next to "We found a lovely greenhouse venue"). It is the window
   expansion RAG systems apply to document chunks, in time instead of text;
3. if fewer than ``k`` memories came out, the rest of ``k`` is filled in
   vector order. The vector channel ranks every memory, so a user with fewer
   than ``k`` memories gets all of them, and a longer ``k`` never reorders the
   head of a shorter one.

A single-channel mode returns that channel's top ``k`` with its own scores.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Sequence
from datetime import timedelta

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncConnection

from truemem_core.embeddings import Vector
from truemem_core.search.channels import Channels, scope
from truemem_core.search.filters import Mode, SearchFilters
from truemem_core.search.fusion import Fused, Ranking, bound_neighbours, fuse, single
from truemem_core.search.query_text import keyword_terms, significant_terms
from truemem_core.settings import Settings
from truemem_core.storage.schema import memories

LEXICAL = ("keyword", "trigram")


def channels_for(mode: Mode, settings: Settings) -> list[str]:
    """The ranking channels a search in ``mode`` runs (hybrid skips those weighted 0)."""
    if mode != "hybrid":
        return [mode]
    weights = settings.channel_weights
    return ["vector", *(name for name in LEXICAL if weights[name] > 0)]


async def run(
    conn: AsyncConnection,
    channels: Channels,
    user_id: str,
    query: str,
    vector: Vector | None,
    *,
    k: int,
    mode: Mode,
    filters: SearchFilters,
    settings: Settings,
) -> list[Fused]:
    hybrid = mode == "hybrid"
    depth = settings.rrf_depth if hybrid else k
    rankings: dict[str, Ranking] = {}
    for channel in channels_for(mode, settings):
        if channel == "vector":
            if vector is None:
                raise ValueError("the vector channel needs the query's embedding")
            rankings[channel] = await channels.nearest(
                conn, user_id, vector, max(k, depth), filters=filters)
        elif channel == "keyword":
            rankings[channel] = await channels.keyword(
                conn, user_id, keyword_terms(query), depth, filters=filters)
        else:
            rankings[channel] = await channels.trigram(
                conn, user_id, significant_terms(query), depth, filters=filters,
                threshold=settings.trigram_threshold)
    if not hybrid:
        return single(mode, rankings[mode], limit=k)
    fill = rankings["vector"]
    rankings["vector"] = fill[:depth]
    weights = settings.channel_weights
    everything = sum(len(hits) for hits in rankings.values())
    fused = fuse(rankings, k=settings.rrf_k, weights=weights, limit=everything)
    if weights["neighbours"] > 0 and settings.neighbour_seeds and settings.neighbour_span:
        nearby = await neighbours(conn, user_id, fused[: settings.neighbour_seeds], filters,
                                  settings)
        if nearby:
            direct = {hit.id: hit.score for hit in fused}
            rankings["neighbours"] = nearby
            fused = bound_neighbours(
                fuse(rankings, k=settings.rrf_k, weights=weights, limit=everything + len(nearby)),
                direct=direct, seeds=dict(nearby))
    return _fill(fused[:k], fill, k=k, rrf_k=settings.rrf_k, weight=weights["vector"])


async def neighbours(
    conn: AsyncConnection,
    user_id: str,
    seeds: Sequence[Fused],
    filters: SearchFilters,
    settings: Settings,
) -> Ranking:
    """The seeds' neighbours in time, scored by their seed's fused score (best seed wins).

    A seed's neighbours are the ``neighbour_span`` memories in scope recorded just before
    it and just after it (ties in time broken by id), within ``neighbour_window_s``. One
    statement reads the user's memories in scope from the earliest seed's window to the
    latest one's; a user has a few hundred at most, and a fixed statement is far cheaper
    to build than one sub-select per seed and side.
    """
    if not seeds:
        return []
    rows = await conn.execute(
        select(memories.c.id, memories.c.created_at)
        .where(memories.c.user_id == user_id, memories.c.id.in_([s.id for s in seeds])))
    when = {row.id: row.created_at for row in rows}
    if not when:
        return []
    window = timedelta(seconds=settings.neighbour_window_s)
    created = memories.c.created_at
    nearby = await conn.execute(
        select(created, memories.c.id).where(
            *scope(user_id, filters),
            created >= min(when.values()) - window, created <= max(when.values()) + window))
    timeline = sorted((row.created_at, row.id) for row in nearby)
    span = settings.neighbour_span
    best: dict[str, float] = {}
    for seed in seeds:
        if seed.id not in when:
            continue
        at = when[seed.id]
        before_end = bisect_left(timeline, (at, seed.id))  # the seed itself sits between
        after_start = bisect_right(timeline, (at, seed.id))
        before = [i for t, i in timeline[max(0, before_end - span):before_end]
                  if t >= at - window]
        after = [i for t, i in timeline[after_start:after_start + span] if t <= at + window]
        for neighbour in before + after:
            best[neighbour] = max(best.get(neighbour, 0.0), seed.score)
    return sorted(best.items(), key=lambda item: (-item[1], item[0]))


def _fill(fused: list[Fused], ranked: Ranking, *, k: int, rrf_k: int, weight: float) -> list[Fused]:
    """Top up to ``k`` hits in vector order, scored as that channel alone would score them."""
    if len(fused) >= k:
        return fused
    seen = {hit.id for hit in fused}
    for rank, (memory_id, score) in enumerate(ranked, start=1):
        if len(fused) >= k:
            break
        if memory_id not in seen:
            fused.append(Fused(memory_id, weight / (rrf_k + rank), {"vector": rank},
                               {"vector": score}))
    return fused
