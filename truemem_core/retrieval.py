"""Hybrid retrieval, the pure part: search filters, Reciprocal Rank Fusion, explanations.

Three channels rank one user's memories for a query (§7 of the spec):

    vector    cosine similarity of embeddings        meaning, paraphrase
    keyword   full-text search (tsvector / FTS5)     exact words, stems, two languages
    trigram   character trigrams (pg_trgm / FTS5)     typos, fragments ("Lisbn", "SSL")

Their ranked lists are fused with Reciprocal Rank Fusion: a memory at rank
``r`` (1-based) in channel ``c`` earns ``weight[c] / (k + r)``, summed over the
channels that returned it. Scores of different channels are never compared,
only ranks, so a cosine of 0.4 and a BM25 of 7.1 need no calibration. The SQL
that produces each list lives in ``backends/``; everything here is I/O-free.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

from .errors import InvalidInputError
from .models import KINDS, STATES, Kind, State
from .validation import check_importance

Mode = Literal["hybrid", "vector", "keyword", "trigram"]
CHANNELS: tuple[str, ...] = ("vector", "keyword", "trigram")
MODES: tuple[Mode, ...] = ("hybrid", "vector", "keyword", "trigram")

Ranking = Sequence[tuple[str, float]]
"""One channel's answer: (memory id, channel score), best first."""


@dataclass(frozen=True, slots=True)
class SearchFilters:
    """Which of the user's memories a search may return (all conditions must hold).

    ``created_after`` is inclusive and ``created_before`` exclusive, so
    consecutive windows never return a memory twice.
    """

    states: tuple[State, ...] = ("active", "ephemeral")
    kinds: tuple[Kind, ...] | None = None
    min_importance: int | None = None
    created_after: datetime | None = None
    created_before: datetime | None = None


def check_mode(value: Any) -> Mode:
    if value not in MODES:
        raise InvalidInputError(f"mode must be one of {', '.join(MODES)}; got {value!r}")
    return value  # type: ignore[no-any-return]


def make_filters(
    *,
    kind: Any = None,
    min_importance: Any = None,
    state: Any = None,
    include_archived: Any = False,
    created_after: Any = None,
    created_before: Any = None,
) -> SearchFilters:
    """Validate the search filters; each bad value raises ``InvalidInputError``.

    ``kind`` and ``state`` take one value or a collection of them. Without
    ``state`` a search sees active and ephemeral memories, plus archived ones
    when ``include_archived`` is true (archived memories are out of standard
    search but still findable, §8).
    """
    if not isinstance(include_archived, bool):
        raise InvalidInputError(f"include_archived must be a bool, got {include_archived!r}")
    if state is None:
        states: tuple[State, ...] = STATES if include_archived else ("active", "ephemeral")
    else:
        states = _choices(state, STATES, "state")  # type: ignore[assignment]
    kinds = None if kind is None else _choices(kind, KINDS, "kind")
    importance = None if min_importance is None else check_importance(min_importance)
    after = _instant(created_after, "created_after")
    before = _instant(created_before, "created_before")
    if after is not None and before is not None and after >= before:
        raise InvalidInputError("created_after must be earlier than created_before")
    return SearchFilters(states, kinds, importance, after, before)  # type: ignore[arg-type]


def _choices(value: Any, allowed: Sequence[str], what: str) -> tuple[str, ...]:
    chosen = (value,) if isinstance(value, str) else value
    if not isinstance(chosen, Iterable):
        raise InvalidInputError(f"{what} must be a str or a collection of str, got {value!r}")
    chosen = tuple(dict.fromkeys(chosen))
    if not chosen or any(c not in allowed for c in chosen):
        raise InvalidInputError(f"{what} must be among {', '.join(allowed)}; got {value!r}")
    return chosen


def _instant(value: Any, what: str) -> datetime | None:
    if value is None:
        return None
    if not isinstance(value, datetime):
        raise InvalidInputError(f"{what} must be a datetime, got {type(value).__name__}")
    if value.tzinfo is None:
        raise InvalidInputError(f"{what} must be timezone-aware (e.g. tzinfo=UTC)")
    return value


# -- fusion -----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Fused:
    """One fused hit, explained: its rank and score in every channel that returned it."""

    id: str
    score: float
    ranks: dict[str, int] = field(default_factory=dict)
    scores: dict[str, float] = field(default_factory=dict)


def rrf(
    channels: Mapping[str, Sequence[str]],
    *,
    k: int = 60,
    weights: Mapping[str, float] | None = None,
) -> list[tuple[str, float]]:
    """Reciprocal Rank Fusion of ranked id lists: ``[(id, fused score)]``, best first.

    A channel missing from ``weights`` weighs 1. Ties are broken by the best
    single rank, then by id, so the order is deterministic.
    """
    return _fuse_ranks(
        {name: {i: r for r, i in enumerate(dict.fromkeys(ids), start=1)}
         for name, ids in channels.items()},
        k=k, weights=weights,
    )


def _fuse_ranks(
    ranks: Mapping[str, Mapping[str, int]], *, k: int, weights: Mapping[str, float] | None
) -> list[tuple[str, float]]:
    if k < 0:
        raise InvalidInputError("the RRF constant k must not be negative")
    scores: dict[str, float] = {}
    best: dict[str, int] = {}
    for name, ranked in ranks.items():
        weight = 1.0 if weights is None else weights.get(name, 1.0)
        for memory_id, rank in ranked.items():
            scores[memory_id] = scores.get(memory_id, 0.0) + weight / (k + rank)
            best[memory_id] = min(best.get(memory_id, rank), rank)
    order = sorted(scores, key=lambda i: (-scores[i], best[i], i))
    return [(i, scores[i]) for i in order]


def tied_ranks(hits: Ranking) -> dict[str, int]:
    """1-based ranks where equal scores share the better rank ("1, 2, 2, 4").

    Lexical channels often tie ("Lives in Berlin" and "Lives in Lisbon" match
    "live" equally); an order the channel did not express must not leak into
    the fusion, so tied memories earn the same reciprocal rank.
    """
    ranks: dict[str, int] = {}
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


def bound_context(
    fused: Sequence[Fused], *, direct: Mapping[str, float], seeds: Mapping[str, float]
) -> list[Fused]:
    """Cap what the context channel adds, then re-sort.

    ``seeds`` maps each memory reached through context to the fused score of
    its best seed, ``direct`` every memory to its score before context. A
    memory never climbs above the seed that brought it (just below it at
    most), so context fills the gaps after strong hits and never displaces
    them; a memory keeps at least its own direct score.
    """
    capped = []
    for hit in fused:
        ceiling = seeds.get(hit.id)
        if "context" in hit.ranks and ceiling is not None and hit.score >= ceiling:
            score = max(direct.get(hit.id, 0.0), math.nextafter(ceiling, 0.0))
            hit = Fused(hit.id, score, hit.ranks, hit.scores)
        capped.append(hit)
    return sorted(capped, key=lambda h: (-h.score, min(h.ranks.values(), default=0), h.id))


def single(channel: str, hits: Ranking, *, limit: int) -> list[Fused]:
    """One channel's list in the same shape (its own score is the score)."""
    ranks = tied_ranks(hits[:limit])
    return [Fused(i, score, {channel: ranks[i]}, {channel: score}) for i, score in hits[:limit]]


# -- lexical scoring on PostgreSQL ------------------------------------------------------


def idf_rank(
    matches: Iterable[tuple[str, int, float]],
    *,
    documents: int,
    limit: int,
) -> list[tuple[str, float]]:
    """Rank documents by IDF-weighted term matches: ``sum(idf(term) * strength)``.

    ``matches`` holds (memory id, term index, strength in (0, 1]) for every
    term a memory matches; ``documents`` is how many memories were searched.
    PostgreSQL's ``ts_rank`` and ``word_similarity`` know no document
    frequencies, so a name in half the memories would weigh as much as the one
    rare word of the query; this restores BM25's idea per user.
    """
    rows = list(matches)
    frequency: dict[int, int] = {}
    for _, term, _ in rows:
        frequency[term] = frequency.get(term, 0) + 1
    scores: dict[str, float] = {}
    for memory_id, term, strength in rows:
        df = frequency[term]
        idf = math.log(1.0 + (documents - df + 0.5) / (df + 0.5))
        scores[memory_id] = scores.get(memory_id, 0.0) + idf * strength
    order = sorted(scores, key=lambda i: (-scores[i], i))
    return [(i, scores[i]) for i in order[:limit]]


def bm25_rank(
    matches: Iterable[tuple[str, int, int]],
    *,
    documents: int,
    average_length: float | None,
    limit: int,
    k1: float = 1.2,
    b: float = 0.75,
) -> list[tuple[str, float]]:
    """BM25 over one user's memories from (memory id, term index, text length) matches.

    Memories are short facts where a term rarely occurs twice, so each match
    counts once; length is in characters. The statistics (document count,
    average length, document frequencies) are this user's alone: another
    user's memories never influence the ranking.
    """
    average = max(float(average_length or 1.0), 1.0)
    weighted = [
        (memory_id, term, (k1 + 1.0) / (1.0 + k1 * (1.0 - b + b * length / average)))
        for memory_id, term, length in matches
    ]
    return idf_rank(weighted, documents=documents, limit=limit)
