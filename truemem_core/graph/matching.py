"""Which entity names a query mentions (pure): exact words, or close by trigrams.

Trigrams as pg_trgm makes them: each word padded with two spaces before and one
after. A name scores 1.0 when its words appear in the query in order, else the
best trigram similarity (Jaccard) between its words and a same-length run of the
query's words; an alias scores a little less than the name.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from truemem_core.graph.names import norm
from truemem_core.graph.records import Entity

THRESHOLD = 0.5
ALIAS_WEIGHT = 0.95
_WORD = re.compile(r"\w+")


def words(text: str) -> list[str]:
    return _WORD.findall(norm(text))


def trigrams(tokens: Iterable[str]) -> set[str]:
    grams: set[str] = set()
    for token in tokens:
        padded = f"  {token} "
        grams.update(padded[i:i + 3] for i in range(len(padded) - 2))
    return grams


def similarity(a: Sequence[str], b: Sequence[str]) -> float:
    left, right = trigrams(a), trigrams(b)
    return len(left & right) / len(left | right) if left and right else 0.0


def mention(name: str, query: Sequence[str]) -> float:
    """How well ``query`` (its words) mentions ``name``: 1.0 exact, else trigram similarity."""
    target = words(name)
    size = len(target)
    if not target or not query:
        return 0.0
    runs = [list(query[i:i + size]) for i in range(max(1, len(query) - size + 1))]
    if target in runs:
        return 1.0
    if sum(map(len, target)) < 4:  # too short to match approximately
        return 0.0
    return max(similarity(target, run) for run in runs)


def score(entity: Entity, query: Sequence[str]) -> float:
    return max([mention(entity.name, query),
                *(ALIAS_WEIGHT * mention(alias, query) for alias in entity.aliases)])


def mentioned(entities: Iterable[Entity], text: str, limit: int) -> list[Entity]:
    """The entities ``text`` mentions, best first (ties: by name), at most ``limit``."""
    query = words(text)
    scored = [(score(entity, query), entity) for entity in entities]
    kept = sorted(((s, x) for s, x in scored if s >= THRESHOLD),
                  key=lambda pair: (-pair[0], norm(pair[1].name), pair[1].type))
    return [entity for _, entity in kept[:limit]]
