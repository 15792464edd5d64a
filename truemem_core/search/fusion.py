"""Reciprocal Rank Fusion of the channels' rankings, each hit explaining itself (pure).

Channels rank one user's memories for a query (§7 of the spec):

    vector     cosine similarity of embeddings        meaning, paraphrase
    keyword    full-text search (tsvector / FTS5)     exact words, stems, two languages
    trigram    character trigrams (pg_trgm / FTS5)     typos, fragments ("Lisbn", "SSL")
    adjacent   memories recorded next to the top hits  what was said around a match
    graph      facts on the entities a query names      "what does Atlas run on?"

Their ranked lists are fused with Reciprocal Rank Fusion: a memory at rank
``r`` (1-based) in channel ``c`` earns ``weight[c] / (k + r)``, summed over the
channels that returned it. Scores of different channels are never compared,
only ranks, so a cosine of 0.4 and a BM25 of 7.1 need no calibration. The SQL
that produces each list lives in ``search/channels/``; everything here is I/O-free.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from truemem_core.errors import InvalidInputError

Key = str | int
"""A ranked row's id: a memory's (str) or a message's (int)."""
Ranking = Sequence[tuple[Key, float]]
"""One channel's answer: (id, channel score), best first."""


@dataclass(frozen=True, slots=True)
class Fused:
    """One fused hit, explained: its rank and score in every channel that returned it."""

    id: Key
    score: float
    ranks: dict[str, int] = field(default_factory=dict)
    scores: dict[str, float] = field(default_factory=dict)
    row: Any = None
    """The hit's row, when the search was asked to read it (``search.hybrid``)."""


def _fuse_ranks(
    ranks: Mapping[str, Mapping[Key, int]], *, k: int, weights: Mapping[str, float] | None
) -> list[tuple[Key, float]]:
    if k < 0:
        raise InvalidInputError("the RRF constant k must not be negative")
    scores: dict[Key, float] = {}
    best: dict[Key, int] = {}
    for name, ranked in ranks.items():
        weight = 1.0 if weights is None else weights.get(name, 1.0)
        for memory_id, rank in ranked.items():
            scores[memory_id] = scores.get(memory_id, 0.0) + weight / (k + rank)
            best[memory_id] = min(best.get(memory_id, rank), rank)
    order = sorted(scores, key=lambda i: (-scores[i], best[i], str(i)))
    return [(i, scores[i]) for i in order]


def tied_ranks(hits: Ranking) -> dict[Key, int]:
    """1-based ranks where equal scores share the better rank ("1, 2, 2, 4").

    Lexical channels often tie ("Lives in Berlin" and "Lives in Lisbon" match
    "live" equally); an order the channel did not express must not leak into
    the fusion, so tied memories earn the same reciprocal rank.
    """
    ranks: dict[Key, int] = {}
    previous: float | None = None
    rank = 0
    for position, (memory_id, score) in enumerate(hits, start=1):
        if previous is None or not math.isclose(score, previous, rel_tol=1e-9, abs_tol=1e-12):
            rank, previous = position, score
        ranks.setdefault(memory_id, rank)
    return ranks


def fuse(
    rankings: Mapping[str, Ranking],
    *,
    k: int,
    weights: Mapping[str, float],
    limit: int,
) -> list[Fused]:
    """RRF over the channels' (id, score) lists, each hit carrying its explanation.

    Ranks are tie-aware (``tied_ranks``); the explanation reports them.
    """
    ranks = {name: tied_ranks(hits) for name, hits in rankings.items()}
    fused = _fuse_ranks(ranks, k=k, weights=weights)
    explained = {i: Fused(i, score) for i, score in fused[:limit]}
    for name, hits in rankings.items():
        for memory_id, score in hits:
            hit = explained.get(memory_id)
            if hit is not None and name not in hit.ranks:
                hit.ranks[name] = ranks[name][memory_id]
                hit.scores[name] = score
    return list(explained.values())


def bound_adjacent(
    fused: Sequence[Fused], *, direct: Mapping[Key, float], seeds: Mapping[Key, float]
) -> list[Fused]:
    """Cap what the adjacent channel adds, then re-sort.

    ``seeds`` maps each memory reached through the adjacent channel to the fused score of
    its best seed, ``direct`` every memory to its score before that channel. A
    memory never climbs above the seed that brought it (just below it at
    most), so adjacent rows fill the gaps after strong hits and never displace
    them; a memory keeps at least its own direct score.
    """
    capped = []
    for hit in fused:
        ceiling = seeds.get(hit.id)
        if "adjacent" in hit.ranks and ceiling is not None and hit.score >= ceiling:
            score = max(direct.get(hit.id, 0.0), math.nextafter(ceiling, 0.0))
            hit = Fused(hit.id, score, hit.ranks, hit.scores)
        capped.append(hit)
    return sorted(capped, key=lambda h: (-h.score, min(h.ranks.values(), default=0), str(h.id)))


def single(channel: str, hits: Ranking, *, limit: int) -> list[Fused]:
    """One channel's list in the same shape (its own score is the score)."""
    ranks = tied_ranks(hits[:limit])
    return [Fused(i, score, {channel: ranks[i]}, {channel: score}) for i, score in hits[:limit]]
