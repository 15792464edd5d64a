"""The second hop: follow what the first search found (pure, no I/O).

A question often names one thing and its answer sits with another: "Where did
my sister move to?" finds "My sister Ingrid moved abroad last spring", and the
city is named in another session that never says "sister" ("Ingrid says the
view from the flat in Tromsø is of the harbour"). No word of the question
reaches that turn; the first answer's words do. So ``get_context`` searches once
more, by keyword, for the question's words plus the names and distinctive words
of its ``SEEDS`` best results (facts and recalled turns alike) that the question
lacks, and what this second search finds joins the fusion as one more ranked
list, the ``hop`` channel, weighted ``weight_hop``. It is pseudo-relevance
feedback, restricted to the words that can carry it to another fact.

* Words: the question's first ``TERMS`` significant words, then the seeds' new
  ones (``query_text``'s stop-words are out), the names first — a word
  capitalised inside a sentence ("Ingrid", "Luna", "Atlas") — then the others,
  longest first (the longer a word, the rarer it tends to be), ``TERMS`` of
  them. The keyword channel's OR semantics and IDF (BM25, or per-user IDF on
  PostgreSQL) then rank first the rows that share the question's words and the
  rarer of the seeds'.
* Fusion: a row the hop finds at rank ``r`` earns ``weight_hop / (rrf_k + r)``,
  added to its first-step score; a row only the hop found never climbs above the
  weakest seed (the hits that brought it); the seeds are not ranked again by
  their own words, nor is what says the same as one (a seed fact's source turn,
  a seed turn's facts: the caller names them). The token budget then packs the
  whole ranking as before.

Cost: one extra round of two keyword statements (memories and past turns, at
once, each with its rows), whatever the number of seeds; no second embedding.
"""

from __future__ import annotations

import dataclasses
import math
import re
from collections.abc import Callable, Iterable, Sequence
from typing import Protocol, TypeVar

from truemem_core.search.fusion import Key, tied_ranks
from truemem_core.search.query_text import (
    MAX_QUERY_CHARS,
    STOPWORDS,
    fold,
    query_terms,
    words,
)

SEEDS = 3
"""Best first-step results whose words the hop follows."""
TERMS = 6
"""Words the hop searches for at most: a bounded statement whatever the seeds' length."""
SEED_CHARS = 2000
"""Characters of a seed read for words (a long turn states its subject early)."""

_WORD = re.compile(r"[^\W_]+(?:['’][^\W_]+)*")
_SENTENCE_END = frozenset('.!?:;"“”(\n')


class Hit(Protocol):
    """A fused search hit: a ``ScoredMemory`` or a ``RecalledTurn``."""

    @property
    def score(self) -> float: ...
    @property
    def channels(self) -> dict[str, float]: ...
    @property
    def ranks(self) -> dict[str, int]: ...


H = TypeVar("H", bound=Hit)


def hop_query(query: str, seeds: Iterable[str]) -> str:
    """The hop's keyword query: ``query``'s own significant words (its first ``TERMS``),
    then the seeds' names and other distinctive words that ``query`` lacks ("" when
    the seeds add none). Of ``query`` it reads the head the keyword channel searches
    for (``MAX_QUERY_CHARS``): a pasted document is not read again on the loop."""
    asked = {fold(w) for w in words(query[:MAX_QUERY_CHARS])}
    names: dict[str, int] = {}
    others: dict[str, int] = {}
    for seed in seeds:
        text = seed[:SEED_CHARS]
        for match in _WORD.finditer(text):
            word = match.group().replace("’", "'")
            folded = fold(word.removesuffix("'s"))
            if len(folded) < 3 or folded in STOPWORDS or folded in asked or folded.isdigit():
                continue
            found = names if _is_name(text, match.start(), word) else others
            found.setdefault(folded, len(found))
    others = {w: n for w, n in others.items() if w not in names}
    chosen = [*names, *sorted(others, key=lambda w: (-len(w), others[w]))][:TERMS]
    if not chosen:
        return ""
    return " ".join([*query_terms(query).significant[:TERMS], *chosen])


def _is_name(text: str, start: int, word: str) -> bool:
    """A capitalised word that does not open a sentence (nor the text)."""
    if not word[0].isupper():
        return False
    before = text[:start].rstrip()
    return bool(before) and before[-1] not in _SENTENCE_END


def join(
    found: Sequence[H], reached: Sequence[H], key: Callable[[H], Key], *,
    weight: float, rrf_k: int, seeds: Iterable[Key], ceiling: float,
) -> list[H]:
    """``found`` (the first step, fused) with the hop's ``reached`` (keyword ranked) fused
    in as the ``hop`` channel, best first; a row only the hop found scores below
    ``ceiling`` (the weakest seed's score)."""
    skip = set(seeds)
    reached = [hit for hit in reached if key(hit) not in skip]
    if not reached or weight <= 0:
        return list(found)
    ranks = tied_ranks([(key(hit), hit.score) for hit in reached])
    merged = {key(hit): hit for hit in found}
    for hit in reached:
        rank = ranks[key(hit)]
        earned = weight / (rrf_k + rank)
        first = merged.get(key(hit))
        if first is None:
            score = min(earned, math.nextafter(ceiling, 0.0))
            merged[key(hit)] = dataclasses.replace(  # type: ignore[type-var]
                hit, score=score, channels={"hop": hit.score}, ranks={"hop": rank})
        else:
            merged[key(hit)] = dataclasses.replace(  # type: ignore[type-var]
                first, score=first.score + earned, channels={**first.channels, "hop": hit.score},
                ranks={**first.ranks, "hop": rank})
    return sorted(merged.values(), key=lambda hit: -hit.score)
