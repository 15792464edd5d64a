"""The order packing takes retrieved facts and turns in (pure, no I/O).

By default that is best first. Two rules change it:

- **The latest statement first** (``latest_first``, setting ``latest_first``). When the
  candidates hold several statements of the same thing said on different days ("My
  target is 500 words a day", later "my target is now 800 words a day"), the latest
  takes the best place the group had, the earlier ones the places after it. A model
  asked "what is my current target?" then reads the current one first, and one asked
  "how did it change?" still gets the earlier ones, marked as restated later
  (``restated``). Two statements are about the same thing when their content words
  (``language.gist.content_words``, numbers left out: those are what changes) mostly coincide and
  their words are not all the same (a repeated "Sounds good!" restates nothing). The
  comparison is pairwise over the few dozen candidates, on each one's first
  ``COMPARED_CHARS`` characters: bounded whatever the history's length.
- **Spread over time** (``spread``, setting ``timeline_recall``) for a question that
  asks for an order, a timeline, a progression or an overview
  (``language.timeline``): the candidates are grouped by the day they were said, and
  packing takes each day's best, then each day's second best, and so on (a day's
  round in score order). The best matches of such a question cluster in one or two
  sessions; a sequence needs a little of each.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date
from itertools import combinations

from truemem_core.language.gist import content_words
from truemem_core.language.text import fold, normalise
from truemem_core.records import RecalledTurn, ScoredMemory, said_at, said_when

Item = ScoredMemory | RecalledTurn
SPREAD_WIDER = 3  # a timeline ranks this many times recall_k turns and search_k facts ...
SPREAD_SHORTER = 4  # ... and serves each turn cut to this fraction of recall_turn_tokens:
# its first sentence or two (37 tokens by default), which say what it is about
COMPARED_CHARS = 600  # about what a context serves of a turn: what the model would read
_SHARED_WORDS = 3  # at least this many content words in common ...
_OVERLAP = 0.7  # ... making this share of the shorter statement's words ...
_JACCARD = 0.4  # ... and this share of both statements' words together


def key(item: Item) -> str | int:
    """The item's id: a memory's (str) or a message's (int)."""
    return item.message_id if isinstance(item, RecalledTurn) else item.memory.id


def _source(item: Item) -> int | None:
    return item.message_id if isinstance(item, RecalledTurn) else item.memory.source_message_id


def _day(item: Item) -> date:
    return said_at(item).date()


def _content(item: Item) -> tuple[frozenset[str], frozenset[str]]:
    """The item's content words without numbers (what it is about), and with them."""
    text = item.content if isinstance(item, RecalledTurn) else item.memory.text
    words = content_words(fold(normalise(text[:COMPARED_CHARS])))
    return frozenset(w for w in words if not any(c.isdigit() for c in w)), words


def _same_thing(a: tuple[frozenset[str], frozenset[str]],
                b: tuple[frozenset[str], frozenset[str]]) -> bool:
    """About the same thing, and saying something else of it (a repetition is not)."""
    (x, whole_x), (y, whole_y) = a, b
    shared = len(x & y)
    return (whole_x != whole_y and shared >= _SHARED_WORDS
            and shared >= _OVERLAP * min(len(x), len(y)) and shared >= _JACCARD * len(x | y))


def restatements(items: Sequence[Item]) -> list[list[Item]]:
    """Groups of two or more items that state the same thing on different days, each
    group latest first. A fact and its own source turn are one statement, not two."""
    words = [_content(item) for item in items]
    days = [_day(item) for item in items]
    sources = [_source(item) for item in items]
    parent = list(range(len(items)))

    def root(n: int) -> int:
        while parent[n] != n:
            parent[n] = parent[parent[n]]
            n = parent[n]
        return n

    for i, j in combinations(range(len(items)), 2):
        if (days[i] != days[j] and (sources[i] is None or sources[i] != sources[j])
                and _same_thing(words[i], words[j])):
            parent[root(i)] = root(j)
    groups: dict[int, list[Item]] = {}
    for n, item in enumerate(items):
        groups.setdefault(root(n), []).append(item)
    return [sorted(group, key=said_when, reverse=True) for group in groups.values()
            if len(group) > 1]


def latest_first(ranked: Sequence[Item]) -> list[Item]:
    """``ranked`` with each group of restatements in the places it held, latest first."""
    order = list(ranked)
    place = {id(item): n for n, item in enumerate(order)}
    for group in restatements(order):
        for n, item in zip(sorted(place[id(i)] for i in group), group, strict=True):
            order[n] = item
    return order


def restated(served: Sequence[Item]) -> frozenset[str | int]:
    """Ids of the served items that a later served one states again."""
    return frozenset(key(item) for group in restatements(served) for item in group[1:])


def spread(ranked: Sequence[Item]) -> list[Item]:
    """``ranked`` taken round by round over the days it was said on: every day's best,
    then every day's second best..., each round in ``ranked``'s order."""
    seen: dict[date, int] = {}
    rounds = []
    for item in ranked:
        day = _day(item)
        rounds.append(seen.get(day, 0))
        seen[day] = rounds[-1] + 1
    return [item for _, item in sorted(zip(rounds, ranked, strict=True), key=lambda x: x[0])]


def turn_tokens(most: int, timeline: bool) -> int:
    """How long a recalled turn may be: shorter in a timeline, so that more fit."""
    return max(1, most // SPREAD_SHORTER) if timeline else most


def arrange(ranked: Sequence[Item], *, latest: bool, timeline: bool) -> list[Item]:
    """The order packing takes ``ranked`` (best first) in: the latest statement first
    when ``latest``, spread over time when ``timeline``."""
    order = latest_first(ranked) if latest else list(ranked)
    return spread(order) if timeline else order
