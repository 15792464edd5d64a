"""Search over one corpus (a user's memories or past messages): run the channels the
mode asks for, then fuse.

``mode="hybrid"`` (the default):

1. vector, keyword, trigram and graph (memories linked to the entities the
   query names, ``graph.channel``) each rank the corpus; the top
   ``rrf_depth`` of each enter Reciprocal Rank Fusion (channels of weight 0
   are not run);
2. adjacent: the rows just before and after the ``adjacent_seeds`` best fused
   hits (``search.adjacent``: memories recorded next to them in time, messages
   next to them in their session) form a fourth ranked list, and the fusion runs
   again; a row reached this way never climbs above the hit that brought it.
   Memories are recorded from conversations, so what was said next to a
   matching memory is often the answer itself ("We had the ceremony last
   week" next to "We found a lovely greenhouse venue"). It is the window
   expansion RAG systems apply to document chunks, in time instead of text;
3. if fewer than ``k`` memories came out, the rest of ``k`` is filled in
   vector order. The vector channel ranks every memory, so a user with fewer
   than ``k`` memories gets all of them, and a longer ``k`` never reorders the
   head of a shorter one.

A single-channel mode returns that channel's top ``k`` with its own scores.

Given ``columns``, each hit comes with its row (``Fused.row``), read in the
adjacent channel's statement: after the embedding, a search is two round trips (one on
SQLite, which reads the user's vectors while the query is embedded).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Awaitable, Sequence
from typing import Any

from sqlalchemy import ColumnElement
from sqlalchemy.ext.asyncio import AsyncConnection

from truemem_core.embeddings import Vector
from truemem_core.graph.channel import graph_channel
from truemem_core.search.adjacent import adjacent
from truemem_core.search.channels import Channels, Corpus
from truemem_core.search.filters import Mode
from truemem_core.search.fusion import Fused, Ranking, bound_adjacent, fuse, single
from truemem_core.search.query_text import query_terms
from truemem_core.settings import Settings
from truemem_core.storage.schema import memories

LEXICAL = ("keyword", "trigram")


def channels_for(mode: Mode, settings: Settings) -> list[str]:
    """The ranking channels a search in ``mode`` runs (hybrid skips those weighted 0)."""
    if mode != "hybrid":
        return [mode]
    weights = settings.channel_weights
    return [*(name for name in (*LEXICAL, "graph") if weights[name] > 0), "vector"]


async def run(
    conn: AsyncConnection,
    channels: Channels,
    corpus: Corpus,
    query: str,
    vector: Vector | Awaitable[Vector] | None,
    *,
    k: int,
    mode: Mode,
    settings: Settings,
    columns: Sequence[ColumnElement[Any]] = (),
    approximate: bool = False,
) -> list[Fused]:
    """The corpus's top ``k`` for ``query``; with their rows (``columns``) if asked;
    ``approximate``: by the vector channel's approximate search (``Channels.nearest``)."""
    hybrid = mode == "hybrid"
    depth = settings.rrf_depth if hybrid else k
    wanted = channels_for(mode, settings)
    # the lexical channels first, in one call: they run while the query is embedded
    rankings: dict[str, Ranking] = {}
    if set(wanted) & set(LEXICAL):
        terms = query_terms(query)
        rankings.update(await channels.lexical(
            conn, corpus,
            list(terms.keyword) if "keyword" in wanted else None,
            list(terms.significant) if "trigram" in wanted else None,
            depth, threshold=settings.trigram_threshold))
    if "graph" in wanted and corpus.table is memories:  # still while the query is embedded
        rankings["graph"] = await graph_channel(conn, corpus.user_id, corpus.where, query, depth,
                                                corpus.params)
    if "vector" in wanted:
        if vector is None:
            raise ValueError("the vector channel needs the query's embedding")
        # still unembedded, maybe: a backend reads what it can before it waits
        rankings["vector"] = await channels.nearest(conn, corpus, vector, max(k, depth),
                                                    approximate=approximate)
    if not hybrid:
        found = single(mode, rankings[mode], limit=k)
        rows = (await adjacent(conn, corpus, [], settings, rows_of=[hit.id for hit in found],
                                 columns=columns)).rows
        return _with_rows(found, rows, columns)
    rankings = {name: rankings[name] for name in ("vector", *LEXICAL, "graph")
                if name in rankings}
    fill = rankings["vector"]
    rankings["vector"] = fill[:depth]
    weights = settings.channel_weights
    everything = sum(len(hits) for hits in rankings.values())
    fused = fuse(rankings, k=settings.rrf_k, weights=weights, limit=everything)
    seeds = fused[: settings.adjacent_seeds] if weights["adjacent"] > 0 else []
    # what can end in the top k besides the adjacent rows: the top k so far, and the
    # vector channel's top k that fill it up (see ``_fill``)
    rows_of = {hit.id: None for hit in fused[:k]} | {key: None for key, _ in fill[:k]}
    nearby, rows = await adjacent(conn, corpus, seeds, settings, rows_of=list(rows_of),
                                    columns=columns)
    if nearby:
        direct = {hit.id: hit.score for hit in fused}
        rankings["adjacent"] = nearby
        fused = bound_adjacent(
            fuse(rankings, k=settings.rrf_k, weights=weights, limit=everything + len(nearby)),
            direct=direct, seeds=dict(nearby))
    found = _fill(fused[:k], fill, k=k, rrf_k=settings.rrf_k, weight=weights["vector"])
    return _with_rows(found, rows, columns)


def _with_rows(found: list[Fused], rows: dict[Any, Any], columns: Sequence[Any]) -> list[Fused]:
    """The hits with their rows, when asked; a hit whose row is gone (deleted meanwhile)
    is left out."""
    if not columns:
        return found
    return [dataclasses.replace(hit, row=rows[hit.id]) for hit in found if hit.id in rows]


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
