"""One token budget for what retrieval adds to a context (pure, no I/O).

Retrieved facts and recalled turns compete for ``context_token_budget`` in one
ranking: both come out of Reciprocal Rank Fusion with the same constant and
weights, so their scores are on one scale. Items are taken best first; one that
does not fit is skipped and smaller ones after it may still fit. A fact and
the turn it was extracted from say the same thing, so whichever ranks first is
served and the other is not spent: a served fact stands for its turn, and a turn
served whole for every fact extracted from it. Facts extracted from one turn say
different things and are each served, and a turn served cut short ("…") may have
lost the sentence a fact came from, so it stands for none. Explicit and critical
memories are in every context whatever the budget; they only stand for their
source turns.

An item costs its line in the system prompt, line break included: the prompt's own
count then finds those lines counted already (``CachedCounter.count_lines``).

A synthesis (a past session's summary, ``synthesis``) ranks in the same fusion and
costs its line; served, it stands for the turns it cites: their key sentence is in it,
and the budget they would take goes to other sessions' turns. Syntheses take at most
half the budget (``SYNTHESES_SHARE``): a handful of them rank near the top of any
search (their corpus is a few rows), and the rest must stay for the facts and turns
that hold the detail a precise question needs.

A long turn (an assistant's essay, a pasted document) would spend the budget of
several others, so a turn is cut to its first ``turn_tokens`` tokens ("…"); the
facts people ask about are stated early, and a question over several sessions
needs turns from each of them.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from truemem_core.records import (
    Memory,
    RecalledTurn,
    ScoredMemory,
    ScoredSynthesis,
    fact_line,
    synthesis_line,
    turn_line,
)

SYNTHESES_SHARE = 2  # syntheses take at most budget // 2


@dataclass(frozen=True, slots=True)
class Packed:
    memories: list[ScoredMemory]
    recalled: list[RecalledTurn]
    spent: int
    syntheses: list[ScoredSynthesis] = dataclasses.field(default_factory=list)


def pack(
    hits: Sequence[ScoredMemory],
    turns: Sequence[RecalledTurn],
    *,
    always: Iterable[Memory],
    budget: int,
    turn_tokens: int,
    count: Callable[[str], int],
    syntheses: Sequence[ScoredSynthesis] = (),
    order: Callable[[list[ScoredMemory | RecalledTurn]], list[ScoredMemory | RecalledTurn]]
    | None = None,
) -> Packed:
    """The best facts, turns (and syntheses) that fit ``budget`` tokens, each list best
    first. ``order`` is the order to take the facts and turns in instead, given them best
    first (a timeline's): the syntheses, overviews themselves, are then taken first."""
    present = {m.id for m in always}
    stood_for = {m.source_message_id for m in always if m.source_message_id is not None}
    told: set[int] = set()  # turns served whole: they say what was extracted from them
    memories: list[ScoredMemory] = []
    recalled: list[RecalledTurn] = []
    summaries: list[ScoredSynthesis] = []
    spent = summarised = 0
    for item in _taking_order(hits, turns, syntheses, order):
        if isinstance(item, ScoredSynthesis):
            cost = count(synthesis_line(item.synthesis) + "\n")
            if spent + cost <= budget and summarised + cost <= budget // SYNTHESES_SHARE:
                spent += cost
                summarised += cost
                summaries.append(item)
                stood_for.update(item.synthesis.message_ids)
            continue
        if isinstance(item, ScoredMemory):
            memory = item.memory
            if memory.id in present or memory.source_message_id in told:
                continue
            cost = count(fact_line(memory) + "\n")
        else:
            if item.message_id in stood_for:
                continue
            whole, item = item, excerpt(item, turn_tokens, count)
            cost = count(turn_line(item) + "\n")
        if spent + cost > budget:
            continue
        spent += cost
        if isinstance(item, ScoredMemory):
            memories.append(item)
            present.add(item.memory.id)
            if item.memory.source_message_id is not None:
                stood_for.add(item.memory.source_message_id)
        else:
            recalled.append(item)
            if item is whole:
                told.add(item.message_id)
    return Packed(memories, recalled, spent, summaries)


def _taking_order(
    hits: Sequence[ScoredMemory],
    turns: Sequence[RecalledTurn],
    syntheses: Sequence[ScoredSynthesis],
    order: Callable[[list[ScoredMemory | RecalledTurn]], list[ScoredMemory | RecalledTurn]]
    | None,
) -> list[ScoredMemory | RecalledTurn | ScoredSynthesis]:
    """Everything found, best first; with ``order``, the syntheses first, then the facts
    and turns as ``order`` lays them out."""
    found: list[ScoredMemory | RecalledTurn] = sorted(
        [*hits, *turns], key=lambda item: -item.score)
    if order is None:
        return sorted([*found, *syntheses], key=lambda item: -item.score)
    return [*sorted(syntheses, key=lambda item: -item.score), *order(found)]


def excerpt(turn: RecalledTurn, most: int, count: Callable[[str], int]) -> RecalledTurn:
    """``turn`` with its content cut to at most ``most`` tokens, at a word, ending in "…".

    ``turn.tokens`` counts the whole message (when it was recorded); its content may be
    the head of it that recall read (``search.recall``): either way only that is counted.
    """
    text = turn.content
    if turn.tokens <= most and count(text) <= most:
        return turn
    # a first cut at the text's own characters per token, shrunk until it fits
    size = len(text) * most // max(count(text), 1)
    while size > 1 and count(text[:size] + " …") > most:
        size = size * 9 // 10
    cut = text[:size].rstrip()
    if " " in cut:
        cut = cut[: cut.rfind(" ")].rstrip()  # at a word: fewer tokens, never more
    cut += " …"
    return dataclasses.replace(turn, content=cut, tokens=count(cut))
