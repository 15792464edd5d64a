"""Lexical ranking with one user's statistics: BM25 and IDF-weighted matches (pure).

Both backends only find which memory matches which query term; the score is
computed here, from this user's document counts, so another user's memories
never influence a ranking (FTS5's ``bm25()`` and PostgreSQL's ``ts_rank`` would
use every user's, or none).
"""

from __future__ import annotations

import math
from collections.abc import Iterable


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
    counts once; length is in the corpus's unit (``Corpus.length``: a memory's
    characters, a message's tokens), of which only the ratio to the average counts.
    The statistics (document count, average length, document frequencies) are this
    user's alone: another user's memories never influence the ranking.
    """
    average = max(float(average_length or 1.0), 1.0)
    weighted = [
        (memory_id, term, (k1 + 1.0) / (1.0 + k1 * (1.0 - b + b * length / average)))
        for memory_id, term, length in matches
    ]
    return idf_rank(weighted, documents=documents, limit=limit)
